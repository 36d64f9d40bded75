"""The report's reader of a data folder (jeirt_lite.analysis.data) reads it as training's loader does: the same row
numbers in its messages, the same refusals, a cell given more than once counted by its majority, a tie not at all."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from jeirt_lite import JeirtError
from jeirt_lite.analysis.data import read_response_folder, stratified_sample

QUESTIONS = [["q1", "law", "Which court hears it?"], ["q2", "math", "What is 7 * 8?"], ["q3", "", "Who wrote it?"]]
MODELS = [["m1", "alpha"], ["m2", "beta"]]
RESPONSES = [["q1", "m1", "1"], ["q1", "m2", "0"], ["q2", "m1", "true"], ["q2", "m2", ""], ["q3", "m1", "0"],
             ["q3", "m2", "1"]]


def _folder(tmp_path: Path, *, questions: list[list[str]] = QUESTIONS, models: list[list[str]] = MODELS,
            responses: list[list[str]] = RESPONSES) -> Path:
    folder = tmp_path / "data"
    folder.mkdir(parents=True)
    for name, header, rows in (("questions.csv", ["question_id", "subject", "text"], questions),
                               ("models.csv", ["model_id", "name"], models),
                               ("responses.csv", ["question_id", "model_id", "correct"], responses)):
        with open(folder / name, "w", newline="", encoding="utf-8") as handle:
            csv.writer(handle).writerows([header, *rows])
    return folder


def _cells(question: np.ndarray, llm: np.ndarray, correct: np.ndarray) -> set[tuple[int, int, float]]:
    return {(int(q), int(m), float(y)) for q, m, y in zip(question, llm, correct)}


def test_a_folder_is_read_with_its_subjects_and_its_empty_labels_missing(tmp_path: Path) -> None:
    data = read_response_folder(_folder(tmp_path))
    assert data.question_ids == ["q1", "q2", "q3"] and data.llm_names == ["alpha", "beta"]
    assert data.subjects.tolist() == ["law", "math", "all"]
    assert _cells(data.question, data.llm, data.correct) == {(0, 0, 1.0), (0, 1, 0.0), (1, 0, 1.0), (2, 0, 0.0),
                                                             (2, 1, 1.0)}


def test_a_cell_given_more_than_once_counts_by_its_majority_and_a_tie_not_at_all(tmp_path: Path) -> None:
    repeated = RESPONSES + [["q1", "m2", "1"], ["q1", "m2", "1"], ["q3", "m1", "1"]]  # q1/m2: 0,1,1; q3/m1: 0,1
    data = read_response_folder(_folder(tmp_path, responses=repeated))
    assert _cells(data.question, data.llm, data.correct) == {(0, 0, 1.0), (0, 1, 1.0), (1, 0, 1.0), (2, 1, 1.0)}
    assert data.question.dtype == np.int64 and data.llm.dtype == np.int64 and data.correct.dtype == np.float64


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"responses": RESPONSES[:2] + [["q2", "m1", "maybe"]]},
         r"responses\.csv: data row 3 \(1-based, header not counted\): correct = 'maybe' is not 0/1"),
        ({"responses": RESPONSES + [["q9", "m1", "1"]]},
         r"responses\.csv: data row 7 \(1-based, header not counted\): unknown question or model id"),
        ({"questions": QUESTIONS + [["q4", "law", "  "]]},
         r"questions\.csv: data row 4 \(1-based, header not counted\): empty question id or text"),
        ({"questions": QUESTIONS + [["q2", "math", "What is 7 * 9?"]]},
         r"questions\.csv: data row 4 .*: question 'q2' has another text than in an earlier row"),
        ({"questions": QUESTIONS + [["q2", "math", "What is 7 * 1?"]]},  # sorts before the first text
         r"questions\.csv: data row 4 .*: question 'q2' has another text than in an earlier row"),
        ({"models": MODELS + [["m1", "gamma"]]}, r"models\.csv: data row 3 .*: model_id 'm1' appears twice"),
        ({"models": MODELS + [["m3", "alpha"]]}, r"models\.csv: data row 3 .*: name 'alpha' appears twice"),
    ],
)
def test_bad_rows_are_refused_by_their_data_row_number(tmp_path: Path, change: dict, message: str) -> None:
    with pytest.raises(JeirtError, match=message):
        read_response_folder(_folder(tmp_path, **change))


def test_a_question_repeated_with_its_text_is_one_question(tmp_path: Path) -> None:
    questions = QUESTIONS[:1] + [["q1", "other", " Which court hears it? "]] + QUESTIONS[1:]
    data = read_response_folder(_folder(tmp_path, questions=questions))
    assert data.question_ids == ["q1", "q2", "q3"] and data.subjects.tolist() == ["law", "math", "all"]


def test_the_report_and_training_read_one_folder_alike(tmp_path: Path) -> None:
    pytest.importorskip("pandas")
    from jeirt_lite_training.data import DataError, load_dataset

    repeated = RESPONSES + [["q1", "m2", "1"], ["q1", "m2", "1"], ["q3", "m1", "1"]]
    folder = _folder(tmp_path, responses=repeated)
    report, training = read_response_folder(folder), load_dataset(folder)
    assert report.question_ids == training.question_ids and report.llm_names == training.llm_names
    assert report.texts == training.texts and report.subjects.tolist() == training.subjects.tolist()
    cells = training.responses
    assert _cells(report.question, report.llm, report.correct) == _cells(cells.question, cells.llm, cells.correct)
    bad = _folder(tmp_path / "bad", responses=RESPONSES[:2] + [["q2", "m1", "maybe"]])
    where = r"responses\.csv: data row 3 \(1-based, header not counted\)"
    with pytest.raises(JeirtError, match=where):
        read_response_folder(bad)
    with pytest.raises(DataError, match=where):
        load_dataset(bad)


def test_error_rates_are_the_share_of_wrong_answers_and_nan_without_any(tmp_path: Path) -> None:
    questions = QUESTIONS + [["q4", "law", "Unanswered?"]]
    responses = RESPONSES + [["q1", "m3", "0"], ["q4", "m1", ""]]
    data = read_response_folder(_folder(tmp_path, questions=questions, models=MODELS + [["m3", "gamma"]],
                                        responses=responses))
    np.testing.assert_allclose(data.error_rates(), [2 / 3, 0.0, 0.5, np.nan], rtol=1e-12, atol=0)


def test_a_subset_keeps_the_questions_in_the_order_given_and_their_cells_alone(tmp_path: Path) -> None:
    data = read_response_folder(_folder(tmp_path)).subset(np.array([2, 0]))
    assert data.question_ids == ["q3", "q1"] and data.texts == ["Who wrote it?", "Which court hears it?"]
    assert data.subjects.tolist() == ["all", "law"] and data.llm_names == ["alpha", "beta"]
    cells = sorted(zip(data.question.tolist(), data.llm.tolist(), data.correct.tolist()))
    assert cells == [(0, 0, 0.0), (0, 1, 1.0), (1, 0, 1.0), (1, 1, 0.0)]  # q2's cell gone, not moved onto q1


def test_the_given_question_ids_keep_those_questions_once_each_in_their_order(tmp_path: Path) -> None:
    data = read_response_folder(_folder(tmp_path), [" q3 ", "q2", "q3", ""])
    assert data.question_ids == ["q3", "q2"]
    with pytest.raises(JeirtError, match=r"2 of the given question ids are not in .* \(first: 'q9'\)"):
        read_response_folder(_folder(tmp_path / "other"), ["q1", "q9", "q8"])


def test_a_stratified_sample_takes_each_subject_in_proportion_and_each_at_least_once() -> None:
    subjects = np.array(["law"] * 60 + ["math"] * 30 + ["rare"] * 2 + ["art"] * 7 + ["one"], dtype=object)
    rows = stratified_sample(subjects, 50, seed=3)
    assert np.all(np.diff(rows) > 0)  # sorted, no row twice
    taken = {name: int((subjects[rows] == name).sum()) for name in ("law", "math", "rare", "art", "one")}
    assert taken == {"law": 30, "math": 15, "rare": 1, "art": 4, "one": 1}  # art 3.5 rounded; one 0.5, at least 1
    assert stratified_sample(subjects, 100).tolist() == list(range(100))
    assert not np.array_equal(rows, stratified_sample(subjects, 50, seed=4))  # the seed chooses the rows
    np.testing.assert_array_equal(rows, stratified_sample(subjects, 50, seed=3))
    np.testing.assert_array_equal(stratified_sample(subjects, 50), stratified_sample(subjects, 50, seed=0))
