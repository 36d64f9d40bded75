"""Loading: the project folder format, long and wide tables in CSV/Parquet/JSONL, and every bad-input case."""

from __future__ import annotations

import contextlib
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from jeirt_lite_training.data import Columns, DataError, load_dataset, load_dataset_with_report

REPO = Path(__file__).resolve().parents[1]


def cell_map(data) -> dict[tuple[str, str], float]:  # type: ignore[no-untyped-def]
    r = data.responses
    return {(data.question_ids[q], data.llm_names[m]): float(c) for q, m, c in zip(r.question, r.llm, r.correct)}


@contextlib.contextmanager
def warnings_logged(name: str = "jeirt_lite_training.data") -> Iterator[list[str]]:
    """The messages the loader logs meanwhile (pytest's own log capture is off in this project)."""
    messages: list[str] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: messages.append(record.getMessage())  # type: ignore[method-assign]
    logger = logging.getLogger(name)
    logger.addHandler(handler)
    try:
        yield messages
    finally:
        logger.removeHandler(handler)


def write_folder(tmp: Path, questions: list[dict], models: list[dict], responses: list[dict]) -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(questions).to_csv(tmp / "questions.csv", index=False)
    pd.DataFrame(models).to_csv(tmp / "models.csv", index=False)
    pd.DataFrame(responses).to_csv(tmp / "responses.csv", index=False)
    return tmp


QUESTIONS = [
    {"question_id": "q1", "benchmark": "b", "subject": "s1", "text": "What is 1+1?"},
    {"question_id": "q2", "benchmark": "b", "subject": "s2", "text": "Capital of France?"},
]
MODELS = [{"model_id": 0, "name": "alpha"}, {"model_id": 1, "name": "beta"}]


def test_folder_basic_and_missing_cells_stay_missing(tmp_path: Path) -> None:
    responses = [{"question_id": "q1", "model_id": 0, "correct": 1}, {"question_id": "q2", "model_id": 1, "correct": 0},
                 {"question_id": "q2", "model_id": 0, "correct": ""}]
    with warnings_logged() as logged:
        data, report = load_dataset_with_report(write_folder(tmp_path / "d", QUESTIONS, MODELS, responses))
    assert report.empty_labels == 1 and report.cells == 2 and not logged  # nothing merged: nothing said
    assert data.question_ids == ["q1", "q2"] and data.llm_names == ["alpha", "beta"]
    assert list(data.subjects) == ["s1", "s2"]
    assert cell_map(data) == {("q1", "alpha"): 1.0, ("q2", "beta"): 0.0}  # the two absent cells are not zeros
    assert data.responses.question.dtype == np.int64 and data.responses.correct.dtype == np.float32


def test_folder_ids_stay_strings(tmp_path: Path) -> None:
    questions = [{"question_id": "007", "benchmark": "b", "subject": "s", "text": "t"}]
    responses = [{"question_id": "007", "model_id": 0, "correct": "true"}]
    data = load_dataset(write_folder(tmp_path / "d", questions, MODELS[:1], responses))
    assert data.question_ids == ["007"]


@pytest.mark.parametrize(
    ("responses", "questions", "message"),
    [
        ([{"question_id": "q1", "model_id": 0, "correct": "maybe"}], QUESTIONS, "responses.csv: data row 1 (1-based, header not counted): label"),
        ([{"question_id": "q1", "model_id": 0, "correct": 2}], QUESTIONS, "label not 0/1"),
        ([{"question_id": "q1", "model_id": 0, "correct": 1}, {"question_id": "zz", "model_id": 0, "correct": 1}],
         QUESTIONS, "responses.csv: data row 2 (1-based, header not counted): unknown question id"),
        ([{"question_id": "q1", "model_id": 7, "correct": 1}], QUESTIONS, "unknown model id"),
        ([], QUESTIONS + [{"question_id": "q3", "benchmark": "b", "subject": "s", "text": "  "}],
         "questions.csv: data row 3 (1-based, header not counted): empty question text"),
        ([], QUESTIONS + [{"question_id": "q1", "benchmark": "b", "subject": "s", "text": "other"}],
         "conflicting texts"),
    ],
)
def test_folder_bad_rows_raise_naming_file_and_row(tmp_path: Path, responses, questions, message) -> None:  # type: ignore[no-untyped-def]
    folder = write_folder(tmp_path / "d", questions, MODELS, responses or [{"question_id": "q2", "model_id": 0,
                                                                            "correct": 1}])
    with pytest.raises(DataError, match=re.escape(message)):
        load_dataset(folder)


def test_folder_skip_bad_counts(tmp_path: Path) -> None:
    questions = QUESTIONS + [{"question_id": "q3", "benchmark": "b", "subject": "s", "text": ""}]
    responses = [
        {"question_id": "q1", "model_id": 0, "correct": 1},
        {"question_id": "q1", "model_id": 1, "correct": "yes"},
        {"question_id": "nope", "model_id": 1, "correct": 1},
        {"question_id": "q2", "model_id": 9, "correct": 1},
        {"question_id": "q3", "model_id": 0, "correct": 1},  # its question was skipped: unknown now
        {"question_id": "q2", "model_id": 0, "correct": ""},  # empty label: missing, not bad
    ]
    data, report = load_dataset_with_report(write_folder(tmp_path / "d", questions, MODELS, responses),
                                            skip_bad=True)
    assert cell_map(data) == {("q1", "alpha"): 1.0}
    assert report.skipped == {"empty question text": 1, "label not 0/1/true/false": 1, "unknown question id": 2,
                              "unknown model id": 1}
    assert report.empty_labels == 1 and report.cells == 1 and report.rows_read == 6


def test_duplicates_majority_and_tie(tmp_path: Path) -> None:
    responses = [
        {"question_id": "q1", "model_id": 0, "correct": 1},
        {"question_id": "q1", "model_id": 0, "correct": 1},
        {"question_id": "q1", "model_id": 0, "correct": 0},  # majority 1
        {"question_id": "q2", "model_id": 0, "correct": 1},
        {"question_id": "q2", "model_id": 0, "correct": 0},  # tie: dropped
        {"question_id": "q2", "model_id": 1, "correct": 0},
    ]
    data, report = load_dataset_with_report(write_folder(tmp_path / "d", QUESTIONS, MODELS, responses))
    assert cell_map(data) == {("q1", "alpha"): 1.0, ("q2", "beta"): 0.0}
    assert (report.duplicate_cells, report.duplicate_rows, report.ties_dropped) == (2, 3, 1)
    assert "2 duplicate cells (3 extra rows) resolved by majority, 1 tie dropped" in report.summary()


LONG = pd.DataFrame({
    "question_id": ["a", "a", "b", "b", "c"],
    "text": ["ta", "ta", "tb", "tb", "tc"],
    "llm": ["m1", "m2", "m1", "m2", "m1"],
    "correct": [1, 0, "true", "FALSE", 0],
    "subject": ["x", "x", "y", "y", "y"],
})
EXPECTED_LONG = {("a", "m1"): 1.0, ("a", "m2"): 0.0, ("b", "m1"): 1.0, ("b", "m2"): 0.0, ("c", "m1"): 0.0}


def write_table(frame: pd.DataFrame, path: Path) -> Path:
    if path.suffix == ".csv":
        frame.to_csv(path, index=False)
    elif path.suffix == ".parquet":
        frame.astype({c: str for c in frame.columns if frame[c].dtype == object}).to_parquet(path)
    else:
        with path.open("w") as f:
            for row in frame.to_dict(orient="records"):
                f.write(json.dumps(row) + "\n")
    return path


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".jsonl"])
def test_long_table_each_format(tmp_path: Path, suffix: str) -> None:
    data, report = load_dataset_with_report(write_table(LONG, tmp_path / f"t{suffix}"))
    assert report.layout == "long"
    assert cell_map(data) == EXPECTED_LONG
    assert data.question_ids == ["a", "b", "c"] and data.texts == ["ta", "tb", "tc"]
    assert list(data.subjects) == ["x", "y", "y"] and data.name == "t"


def test_long_jsonl_with_booleans_and_custom_columns(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    rows = [{"qid": 1, "prompt": "p1", "who": "gpt", "ok": True}, {"qid": 2, "prompt": "p2", "who": "gpt", "ok": False}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    data = load_dataset(path, columns=Columns(question="qid", text="prompt", llm="who", correct="ok"))
    assert cell_map(data) == {("1", "gpt"): 1.0, ("2", "gpt"): 0.0}
    assert list(data.subjects) == ["all", "all"]


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [("question_id", 7.0, "question id 7.0 is a float, not a string or an integer"),
     ("question_id", True, "question id True is a bool, not a string or an integer"),
     ("question_id", [1], "question id [1] is a list, not a string or an integer"),
     ("text", 5, "text 5 is an int, not a string")],
)
def test_a_typed_id_or_text_is_refused_as_the_package_s_readers_refuse_it(
    tmp_path: Path, field: str, value: object, problem: str
) -> None:
    # str() would make 7.0 the id '7.0' and 5 the text '5'; `score` and `add-llm` refuse such a row.
    rows = [{"question_id": "a", "text": "ta", "llm": "m1", "correct": 1},
            {"question_id": "b", "text": "tb", "llm": "m1", "correct": 0},
            {"question_id": "c", "text": "tc", "llm": "m2", "correct": 1}]
    rows[1][field] = value
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    with pytest.raises(DataError, match=r"t\.jsonl: data row 2 \(1-based, blank lines not counted\): .*" + re.escape(problem)):
        load_dataset(path)
    data, report = load_dataset_with_report(path, skip_bad=True)
    assert data.question_ids == ["a", "c"] and sum(report.skipped.values()) == 1
    wide = tmp_path / "w.jsonl"  # the wide layout checks the same two columns
    wide.write_text("".join(json.dumps({"question_id": row["question_id"], "text": row["text"], "m1": 1, "m2": 0})
                            + "\n" for row in rows))
    with pytest.raises(DataError, match=r"w\.jsonl: data row 2 .*" + re.escape(problem)):
        load_dataset(wide)


@pytest.mark.parametrize(("field", "what"), [("llm", "LLM name"), ("text", "text"), ("question_id", "question id"),
                                             ("subject", "subject")])
def test_a_lone_surrogate_is_a_bad_row_naming_the_file_the_row_and_the_column(
    tmp_path: Path, field: str, what: str
) -> None:
    # JSON's "\udcff" escapes no character: pandas' Arrow strings could not hold it, which stopped training with
    # a line naming neither the file nor the row.
    rows = [{"question_id": q, "text": f"t{q}", "subject": "s", "llm": m, "correct": 1} for q in "ab" for m in ("m1", "m2")]
    rows[2][field] = "bad\udcff"
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    with pytest.raises(DataError) as raised:
        load_dataset(path)
    assert str(raised.value) == (f"{path}: data row 3 (1-based, blank lines not counted): {what} not valid UTF-8: "
                                 f"{field} = 'bad\\udcff' holds a lone surrogate (JSON's \\udcff), which is not UTF-8")
    data, report = load_dataset_with_report(path, skip_bad=True)
    assert report.skipped == {f"{what} not valid UTF-8": 1} and report.cells == 3
    if field != "llm":  # the wide layout checks its question id, text, subject and benchmark alike
        wide = tmp_path / "w.jsonl"
        wide.write_text("".join(json.dumps({key: row[key] for key in ("question_id", "text", "subject")}
                                           | {"m1": 1, "m2": 0}) + "\n" for row in rows[::2]))
        with pytest.raises(DataError, match=rf"w\.jsonl: data row 2 .*: {what} not valid UTF-8: {field} = "):
            load_dataset(wide)
        data, report = load_dataset_with_report(wide, skip_bad=True)
        assert data.question_ids == ["a"] and report.skipped == {f"{what} not valid UTF-8": 1}


def test_a_lone_surrogate_in_a_label_is_a_bad_label_and_in_a_column_name_refuses_the_table(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"question_id": "a", "text": "ta", "llm": "m1", "correct": "\\udcff"}\n')
    with pytest.raises(DataError, match=r"data row 1 .*: label not 0/1/true/false: correct = '\\udcff'"):
        load_dataset(path)
    path.write_text('{"question_id": "a", "text": "ta", "m\\udcff": 1}\n')
    with pytest.raises(DataError, match=r"t\.jsonl: column 'm\\udcff' holds a lone surrogate .*; rename it$"):
        load_dataset(path, skip_bad=True)


def test_long_bad_cases(tmp_path: Path) -> None:
    bad_label = LONG.copy()
    bad_label.loc[3, "correct"] = "0.5"
    with pytest.raises(DataError, match=r"bad\.csv: data row 4 \(1-based, header not counted\): label"):
        load_dataset(write_table(bad_label, tmp_path / "bad.csv"))
    with pytest.raises(DataError, match=r"bad\.jsonl: data row 4 \(1-based, blank lines not counted\): label"):
        load_dataset(write_table(bad_label, tmp_path / "bad.jsonl"))
    conflict = LONG.copy()
    conflict.loc[1, "text"] = "something else"
    with pytest.raises(DataError, match=r"conflicting texts.*'a'.*data row 1 \(1-based, header not counted\), data row 2 \("):
        load_dataset(write_table(conflict, tmp_path / "conflict.csv"))
    empty = LONG.copy()
    empty.loc[4, "text"] = ""
    with pytest.raises(DataError, match=r"data row 5 \(1-based, header not counted\): empty question text"):
        load_dataset(write_table(empty, tmp_path / "empty.csv"))
    data, report = load_dataset_with_report(tmp_path / "conflict.csv", skip_bad=True)
    assert "a" not in data.question_ids and report.skipped == {"conflicting texts for one question id": 2}
    with pytest.raises(DataError, match="no correct column"):
        load_dataset(write_table(LONG.drop(columns="correct"), tmp_path / "nocorrect.csv"), layout="long")


def test_long_duplicates(tmp_path: Path) -> None:
    dup = pd.concat([LONG, LONG.iloc[[0]].assign(correct=0), LONG.iloc[[0]].assign(correct=1)], ignore_index=True)
    tie = pd.concat([LONG, LONG.iloc[[1]].assign(correct=1)], ignore_index=True)
    data, report = load_dataset_with_report(write_table(dup, tmp_path / "dup.csv"))
    assert cell_map(data) == EXPECTED_LONG and report.duplicate_rows == 2 and report.ties_dropped == 0
    data, report = load_dataset_with_report(write_table(tie, tmp_path / "tie.csv"))
    assert ("a", "m2") not in cell_map(data) and report.ties_dropped == 1


WIDE = pd.DataFrame({
    "question_id": ["a", "b", "c"],
    "text": ["ta", "tb", "tc"],
    "subject": ["x", "y", "y"],
    "m1": ["1", "true", "0"],
    "m2": ["0", "false", ""],
})


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".jsonl"])
def test_wide_table_each_format(tmp_path: Path, suffix: str) -> None:
    data, report = load_dataset_with_report(write_table(WIDE, tmp_path / f"w{suffix}"))
    assert report.layout == "wide" and data.llm_names == ["m1", "m2"]
    assert cell_map(data) == EXPECTED_LONG  # the empty m2/c cell is missing
    assert report.empty_labels == 1 and report.rows_read == 6


def test_wide_numeric_and_nan_cells(tmp_path: Path) -> None:
    frame = pd.DataFrame({"question_id": ["a", "b"], "text": ["ta", "tb"], "m1": [1.0, np.nan], "m2": [0, 1]})
    frame.to_parquet(tmp_path / "n.parquet")
    assert cell_map(load_dataset(tmp_path / "n.parquet")) == {("a", "m1"): 1.0, ("a", "m2"): 0.0, ("b", "m2"): 1.0}


def test_a_wide_llm_column_named_like_the_benchmark_is_warned_about(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jeirt_lite_training import data as data_module

    warned: list[str] = []
    monkeypatch.setattr(data_module.logger, "warning", lambda message, *args: warned.append(message % args))
    named_task = WIDE.assign(task=["1", "0", "1"])  # an LLM called "task": read as the benchmark
    assert load_dataset(write_table(named_task, tmp_path / "w.csv")).llm_names == ["m1", "m2"]
    assert any("column 'task' is read as the benchmark, though it holds only 0/1 answers; if it is an LLM, rename it"
               in line for line in warned)
    warned.clear()
    load_dataset(write_table(WIDE.assign(task=["t1", "t2", "t1"]), tmp_path / "b.csv"))  # a real benchmark
    assert not any("is read as the" in line for line in warned)


@pytest.mark.parametrize("skip_bad", [False, True])
@pytest.mark.parametrize(("name", "why"), [("m" * 1001, r"is too long: 1,001 characters, at most 1,000"),
                                           ("tab\there", r"holds a control character \('\\t'\)")])
def test_an_llm_name_no_router_can_hold_is_refused_when_loading(tmp_path: Path, name: str, why: str,
                                                                 skip_bad: bool) -> None:
    # It was found only when the trained router was saved, after all the training. It is no bad row that skip_bad
    # drops (training-data.md says so).
    with pytest.raises(DataError, match=r"^\S*long.csv: LLM name 1 \('.*'\S*\) " + why):
        load_dataset(write_table(LONG.assign(llm=["m1", name, "m1", name, "m1"]), tmp_path / "long.csv"),
                     skip_bad=skip_bad)


def test_wide_bad_label_names_column_and_row(tmp_path: Path) -> None:
    bad = WIDE.assign(answer=["A", "B", "C"])
    # A column mostly of other values is likely no LLM's (an answer key): the message says how to leave it out.
    with pytest.raises(DataError, match=r"data row 1 \(1-based, header not counted\): label.*column 'answer' = 'A' "
                       r"\(most of the column is no 0/1 answer: if it is not an LLM, remove it; a wide table's LLM "):
        load_dataset(write_table(bad, tmp_path / "w.csv"))
    with pytest.raises(DataError, match=r"data row 2 .*column '' = '2' \(most of the column is no 0/1 answer"):
        load_dataset(write_table(WIDE.assign(**{"": ["1", "2", "3"]}), tmp_path / "index.csv"))  # a saved index
    with pytest.raises(DataError, match=r"data row 2 \(.*\): label not 0/1/true/false: column 'm2' = 'maybe'$"):
        load_dataset(write_table(WIDE.assign(m2=["1", "maybe", "0"]), tmp_path / "maybe.csv"))
    data = load_dataset(tmp_path / "w.csv", columns=Columns(llm_columns=["m1", "m2"]))
    assert data.llm_names == ["m1", "m2"]
    data, report = load_dataset_with_report(tmp_path / "w.csv", skip_bad=True)
    # Every cell of the "answer" column skipped: it is no LLM to learn, and is left out and listed.
    assert report.skipped == {"label not 0/1/true/false": 3} and data.llm_names == ["m1", "m2"]
    assert report.llms_left_out == ["answer"] and "left out 1 LLM without answers: answer" in report.summary()


def test_an_llm_without_answers_is_refused_in_every_layout(tmp_path: Path) -> None:
    # A router would rate such an LLM on its initial vector: refused, named, and left out only with skip_bad.
    wide = WIDE.assign(m3=["", "", ""], m4=[None, None, None])
    long = pd.concat([LONG, pd.DataFrame({"question_id": ["a", "b"], "text": ["ta", "tb"], "llm": ["m3", "m3"],
                                          "correct": ["", ""]})], ignore_index=True)
    folder = write_folder(tmp_path / "d", QUESTIONS, MODELS + [{"model_id": 2, "name": "gamma"}],
                          [{"question_id": "q1", "model_id": 0, "correct": 1},
                           {"question_id": "q2", "model_id": 1, "correct": 0},
                           {"question_id": "q2", "model_id": 2, "correct": 1},
                           {"question_id": "q2", "model_id": 2, "correct": 0}])  # gamma's one cell is a tie
    cases = [(write_table(wide, tmp_path / "w.csv"), "w.csv: no answers from 2 LLMs ('m3', 'm4')", ["m3", "m4"]),
             (write_table(long, tmp_path / "l.jsonl"), "l.jsonl: no answers from 1 LLM ('m3')", ["m3"]),
             (folder, "responses.csv: no answers from 1 LLM ('gamma')", ["gamma"])]
    for path, message, silent in cases:
        with pytest.raises(DataError, match=re.escape(message) + ".*cannot learn an LLM from no answers"):
            load_dataset(path)
        data, report = load_dataset_with_report(path, skip_bad=True)
        assert report.llms_left_out == silent and not set(silent) & set(data.llm_names)
        assert np.bincount(data.responses.llm, minlength=data.n_llms).min() > 0  # renumbered, none without cells
        assert len(data.responses) == report.cells


def test_an_error_names_five_llms_then_how_many_more() -> None:
    from jeirt_lite_training.data_rows import named_llms

    assert named_llms(["a", "b"]) == "'a', 'b'"
    assert named_llms([f"m{i}" for i in range(5)]) == "'m0', 'm1', 'm2', 'm3', 'm4'"
    assert named_llms([f"m{i}" for i in range(8)]) == "'m0', 'm1', 'm2', 'm3', 'm4' and 3 more"


def test_the_cells_of_llms_after_one_left_out_keep_their_llm(tmp_path: Path) -> None:
    frame = pd.DataFrame({"question_id": ["a", "b"], "text": ["ta", "tb"], "m1": [1, 0], "gone": ["", ""],
                          "m2": [0, 1], "m3": [1, 1]})
    data, report = load_dataset_with_report(write_table(frame, tmp_path / "w.csv"), skip_bad=True)
    assert data.llm_names == ["m1", "m2", "m3"] and report.llms_left_out == ["gone"]
    assert cell_map(data) == {("a", "m1"): 1.0, ("b", "m1"): 0.0, ("a", "m2"): 0.0, ("b", "m2"): 1.0,
                              ("a", "m3"): 1.0, ("b", "m3"): 1.0}


def test_many_llms_without_answers_are_counted_not_all_listed(tmp_path: Path) -> None:
    frame = WIDE.assign(**{f"x{i}": [""] * 3 for i in range(7)})
    with pytest.raises(DataError, match=re.escape("no answers from 7 LLMs ('x0', 'x1', 'x2', 'x3', 'x4' and 2 more)")):
        load_dataset(write_table(frame, tmp_path / "w.csv"))


def test_missing_files_and_unsupported_suffix(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="questions.csv: missing"):
        load_dataset(tmp_path / "empty")
    (tmp_path / "x.xlsx").write_text("")
    with pytest.raises(DataError, match="unsupported file type"):
        load_dataset(tmp_path / "x.xlsx")


@pytest.mark.parametrize(
    ("folder", "n_llms", "n_questions", "benchmarks"),
    [("mmlu_pro", 32, 10_801, {"mmlu_pro"}), ("zeroeval_crux_gsm_math", 54, 2_840, {"crux", "gsm", "math-l5"})],
)
def test_real_data_folders(folder: str, n_llms: int, n_questions: int, benchmarks: set[str]) -> None:
    data, report = load_dataset_with_report(REPO / "data" / folder)
    assert (data.n_llms, data.n_questions) == (n_llms, n_questions)
    raw = pd.read_csv(REPO / "data" / folder / "responses.csv")
    assert len(data.responses) == len(raw) == report.cells and report.rows_skipped == 0
    assert data.responses.correct.sum() == raw["correct"].sum()
    assert set(data.benchmarks) == benchmarks
    assert len(data.question_ids) == len(set(data.question_ids))


def test_a_question_without_subject_takes_its_benchmark_and_the_reverse(tmp_path: Path) -> None:
    frame = pd.DataFrame({"question_id": ["a", "b", "c", "d"], "text": ["ta", "tb", "tc", "td"],
                          "subject": ["law", "", "", "law"], "benchmark": ["", "mmlu", "", "bbh"], "m1": [1, 0, 1, 0]})
    data = load_dataset(write_table(frame, tmp_path / "w.csv"))
    assert list(data.subjects) == ["law", "mmlu", "all", "law"]
    assert list(data.benchmarks) == ["law", "mmlu", "w", "bbh"]  # neither: the data's name stands for the benchmark


def test_a_majority_is_more_than_half_of_a_cell_s_rows(tmp_path: Path) -> None:
    rows = [{"question_id": "q1", "model_id": 0, "correct": c} for c in (1, 1, 0, 0, 0)]  # 2 of 5: wrong
    rows += [{"question_id": "q2", "model_id": 0, "correct": c} for c in (1, 1, 1, 0, 0)]  # 3 of 5: right
    rows += [{"question_id": "q1", "model_id": 1, "correct": c} for c in (1, 0, 1, 0)]  # 2 of 4: a tie
    rows += [{"question_id": "q2", "model_id": 1, "correct": c} for c in (1, 1, 1, 0, 0, 0, 0)]  # 3 of 7: wrong
    with warnings_logged() as logged:
        data, report = load_dataset_with_report(write_folder(tmp_path / "d", QUESTIONS, MODELS, rows))
    assert cell_map(data) == {("q1", "alpha"): 0.0, ("q2", "alpha"): 1.0, ("q2", "beta"): 0.0}
    assert (report.duplicate_cells, report.duplicate_rows, report.ties_dropped) == (4, 17, 1)
    assert logged == [f"{report.source}: 4 (question, LLM) cells given more than once; resolved by majority, 1 tie "
                      "dropped"]


def test_repeated_question_rows_are_merged_and_counted(tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "d", QUESTIONS * 2 + QUESTIONS[:1], MODELS,
                          [{"question_id": "q1", "model_id": 0, "correct": 1},
                           {"question_id": "q2", "model_id": 1, "correct": 0}])
    data, report = load_dataset_with_report(folder)
    assert data.question_ids == ["q1", "q2"] and report.duplicate_question_rows == 3
    assert "3 repeated question rows merged" in report.summary() and data.name == "d"
    wide = pd.concat([WIDE, WIDE.iloc[[2, 2, 2]]], ignore_index=True)
    data, report = load_dataset_with_report(write_table(wide, tmp_path / "w.csv"))
    assert data.question_ids == ["a", "b", "c"] and report.duplicate_question_rows == 3
    assert cell_map(data) == EXPECTED_LONG and report.duplicate_cells == 1  # m1 on c, four times the same


def test_a_models_file_names_each_model_once(tmp_path: Path) -> None:
    responses = [{"question_id": "q1", "model_id": 0, "correct": 1}, {"question_id": "q2", "model_id": 1, "correct": 0}]
    unnamed = [{"model_id": 0, "name": "alpha"}, {"model_id": 1, "name": ""}]  # an empty name: the id stands for it
    assert load_dataset(write_folder(tmp_path / "a", QUESTIONS, unnamed, responses)).llm_names == ["alpha", "1"]
    twice = [{"model_id": i, "name": name} for i, name in enumerate(["alpha", "beta", "gamma", "alpha", "beta"])]
    with pytest.raises(DataError, match=re.escape("models.csv: data row 4 (1-based, header not counted): name 'alpha' "
                                                  "appears twice")):
        load_dataset(write_folder(tmp_path / "b", QUESTIONS, twice, responses))
    for file, drop in (("models.csv", "name"), ("responses.csv", "correct")):
        folder = write_folder(tmp_path / f"no-{drop}", QUESTIONS, MODELS, responses)
        pd.read_csv(folder / file).drop(columns=drop).to_csv(folder / file, index=False)
        with pytest.raises(DataError, match=re.escape(f"{file}: no {drop!r} column")):
            load_dataset(folder)
    nameless = write_folder(tmp_path / "no-id", [{"question_id": "", "text": "What is 1+1?"}], MODELS, responses)
    with pytest.raises(DataError, match=r"questions\.csv: data row 1 \(1-based, header not counted\): empty question id"):
        load_dataset(nameless)
    no_text = [{"question_id": "q1", "prompt": "What is 1+1?"}]
    with pytest.raises(DataError, match=r"questions\.csv: no 'text' column \(columns: \['question_id', 'prompt'\]\)"):
        load_dataset(write_folder(tmp_path / "c", no_text, MODELS, responses))


def test_long_table_empty_labels_and_llm_names(tmp_path: Path) -> None:
    frame = pd.concat([LONG, pd.DataFrame({"question_id": ["c"], "text": ["tc"], "llm": ["m2"], "correct": [""],
                                           "subject": ["y"]})], ignore_index=True)
    data, report = load_dataset_with_report(write_table(frame, tmp_path / "t.csv"))
    assert cell_map(data) == EXPECTED_LONG and report.empty_labels == 1 and report.cells == 5
    nameless = LONG.astype({"llm": object})
    nameless.loc[2, "llm"] = ""
    with pytest.raises(DataError, match=r"data row 3 \(1-based, header not counted\): empty LLM name"):
        load_dataset(write_table(nameless, tmp_path / "n.csv"))


def test_a_conflict_names_the_rows_of_its_first_question_up_to_four(tmp_path: Path) -> None:
    frame = pd.DataFrame({"question_id": ["b"] * 6 + ["c", "c"], "text": [f"t{i}" for i in range(8)],
                          "m1": [1] * 8})
    with pytest.raises(DataError) as raised:
        load_dataset(write_table(frame, tmp_path / "w.csv"))
    message = str(raised.value)
    assert "question 'b' has different texts" in message and "data row 4 (" in message
    assert "data row 5 (" not in message and "data row 7 (" not in message
    # Conflicting ids sorting before and after the first one: only the first one's rows are named.
    frame = pd.DataFrame({"question_id": ["b", "b", "a", "a", "c", "c", "d"], "text": [f"t{i}" for i in range(7)],
                          "m1": [1] * 7})
    with pytest.raises(DataError, match=r"question 'b' has different texts \(at data row 1 \([^)]*\), data row 2 \([^)]*\)\)"):
        load_dataset(write_table(frame, tmp_path / "w.csv"))


def test_auto_layout_refuses_a_long_table_missing_its_llm_or_correct_column(tmp_path: Path) -> None:
    # Answers in a column called "correct" and no LLM column: read as wide, a router of one LLM named "correct".
    frame = pd.DataFrame({"question_id": ["a", "b"], "text": ["ta", "tb"], "correct": [1, 0]})
    path = write_table(frame, tmp_path / "one.csv")
    with pytest.raises(DataError, match=r"one.csv: a correct column \('correct'\) but no LLM column: a long table "
                                        r"needs both \(looked for \['llm', 'model', 'model_name', 'llm_name'\]; "
                                        r"name it with --llm-column\), a wide table neither"):
        load_dataset(path)
    data, report = load_dataset_with_report(path, layout="wide")  # asked for by name, it is what it says
    assert report.layout == "wide" and data.llm_names == ["correct"]
    named = frame.rename(columns={"correct": "right"})
    with pytest.raises(DataError, match=r"a correct column \('right'\) but no LLM column"):
        load_dataset(write_table(named, tmp_path / "named.csv"), columns=Columns(correct="right"))
    # The mirror: LLM names and no answers; read as wide, every name a bad label.
    names = pd.DataFrame({"question_id": ["a", "b"], "text": ["ta", "tb"], "model": ["m1", "m2"]})
    with pytest.raises(DataError, match=r"an LLM column \('model'\) but no correct column: .*--correct-column"):
        load_dataset(write_table(names, tmp_path / "names.csv"))
    # A long-table column named on the command line that the table lacks is named, not passed over.
    with pytest.raises(DataError, match="no column 'who' for the llm"):
        load_dataset(write_table(names, tmp_path / "who.csv"), columns=Columns(llm="who"))


def test_long_table_llms_keep_their_first_appearance_order(tmp_path: Path) -> None:
    frame = LONG.assign(llm=LONG["llm"].map({"m1": "zeta", "m2": "alpha"}))
    assert load_dataset(write_table(frame, tmp_path / "t.csv")).llm_names == ["zeta", "alpha"]


def test_a_skipping_load_counts_every_reason_and_its_summary_says_each(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("question_id,text,llm,correct\nq1,t1,m1,1\nq2,t2,m1,maybe\nq3,t3,m1,\nq4,t4,m1,1,extra\n"
                    "q1,t1,m2,0\nq2,t2,m2,1\nq3,t3,m2,maybe\n", encoding="utf-8")
    with warnings_logged("jeirt_lite_training.data_rows") as messages:
        _, report = load_dataset_with_report(path, skip_bad=True)
    assert report.skipped == {"unreadable row": 1, "label not 0/1/true/false": 2} and report.rows_skipped == 3
    assert report.summary() == (f"{path} (long): 6 rows read, 3 cells kept; 1 empty label treated as missing; "
                                "skipped 2 rows: label not 0/1/true/false; skipped 1 row: unreadable row")
    assert messages[0].startswith(f"{path}: skipped 1 unreadable row, first: {path}: data row 4 (1-based, header "
                                  "not counted, ending on line 5): has 5 fields, the header has 4")
    with pytest.raises(DataError, match="data row 4 .*has 5 fields"):
        load_dataset(path)  # strict by default


def test_a_folder_adds_up_the_unreadable_rows_of_its_files(tmp_path: Path) -> None:
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "questions.csv").write_text("question_id,text\nq1,t1\nq2,t2,oops\nq3,t3\n", encoding="utf-8")
    (folder / "models.csv").write_text("model_id,name\n0,m0\n1,m1\n", encoding="utf-8")
    (folder / "responses.csv").write_text("question_id,model_id,correct\nq1,0,1\nq1,1,0\nq3,0,1,2\nq3,1,1\n"
                                          "q3,0,0\n", encoding="utf-8")
    _, report = load_dataset_with_report(folder, skip_bad=True)
    assert report.skipped == {"unreadable row": 2}


def test_a_report_counts_from_zero_and_names_one_llm_or_several() -> None:
    from jeirt_lite_training.data_rows import LoadReport, RowChecker

    report = LoadReport("s", "wide")
    assert report.summary() == "s (wide): 0 cells read, 0 cells kept"  # a wide table is read cell by cell
    assert LoadReport("s", "long").summary() == "s (long): 0 rows read, 0 cells kept"
    assert LoadReport("s", "wide", llms_left_out=["a"]).summary().endswith("left out 1 LLM without answers: a")
    assert LoadReport("s", "wide", llms_left_out=["a", "b"]).summary().endswith("left out 2 LLMs without answers: a, b")
    checker = RowChecker("f.csv", "csv", True, report)
    for _ in range(2):  # the same reason met twice adds up
        checker.check(np.array([True, False]), np.arange(2), "empty question text", ["text is empty", ""])
    assert report.skipped == {"empty question text": 2}


def test_a_tsv_names_its_rows_as_a_csv_does(tmp_path: Path) -> None:
    path = tmp_path / "t.tsv"
    path.write_text("question_id\ttext\tllm\tcorrect\nq1\tt1\tm1\t1\nq2\tt2\tm1\tmaybe\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"t.tsv: data row 2 \(1-based, header not counted\): label not 0/1/true/false"):
        load_dataset(path)


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_a_table_without_answers_is_refused_not_loaded_empty(tmp_path: Path, suffix: str) -> None:
    header_only = tmp_path / f"h{suffix}"
    header_only.write_text("question_id,text,llm,correct\n" if suffix == ".csv" else
                           '{"question_id": "a", "text": "ta", "llm": "m1", "correct": ""}\n')
    with pytest.raises(DataError, match=rf"h\{suffix}: no answers to learn from \(\d+ rows read"):
        load_dataset(header_only)


def test_folds_or_fractions_that_leave_a_part_empty_are_named_before_any_training(tmp_path: Path) -> None:
    # Each subject's questions are dealt out: a fold, or the training part, is empty long before the numbers say so.
    from jeirt_lite_training.pipeline import fold_parts
    from jeirt_lite_training.prepared import prepare
    from make_data_slice import write_slice

    data = write_slice(Path(__file__).resolve().parent.parent / "data" / "mmlu_pro", tmp_path / "slice", 60, seed=1)
    dataset = load_dataset(data)
    pool = np.arange(dataset.n_questions)
    assert len(fold_parts(dataset, pool, 5, seed=0)) == 5
    with pytest.raises(ValueError, match=r"--folds 40 leaves fold \d+ without an answered question \(60 questions, "
                       r"dealt within each of their subjects \(\d+\)\); give fewer folds"):
        fold_parts(dataset, pool, 40, seed=0)
    with pytest.raises(ValueError, match=r"val_fraction 0.49 \(--val-fraction\) and test_fraction 0.5 \(--holdout\) "
                       "leave no question to train on"):
        prepare(data, val_fraction=0.49, test_fraction=0.5)


def test_too_few_questions_to_hold_one_out_are_named_before_any_embedding(tmp_path: Path) -> None:
    # A larger --val-fraction cannot give one question a validation part; the static table's fit needs two texts.
    from jeirt_lite_training.config import STATIC
    from jeirt_lite_training.prepared import prepare

    def table(n_questions: int) -> Path:
        path = tmp_path / f"{n_questions}.csv"
        pd.DataFrame([{"question_id": f"q{i}", "text": f"What is {i} + {i}?", "llm": llm, "correct": i % 2}
                      for i in range(n_questions) for llm in ("alpha", "beta")]).to_csv(path, index=False)
        return path

    with pytest.raises(DataError, match="1 question with answers to learn from: .* needs at least 2 answered "
                       r"questions \(with different texts\); give more$"):
        prepare(table(1), test_fraction=0.0, encoder=STATIC, progress=False)
    with pytest.raises(DataError, match="1 question with answers to learn from: .*; give more, or a smaller --holdout$"):
        prepare(table(3), test_fraction=0.6, encoder=STATIC, progress=False)
    with pytest.raises(DataError, match="--encoder static fits its table to the training part's texts and needs at "
                       r"least 2, got 1; give more questions \(at least 3\)$"):
        prepare(table(2), val_fraction=0.5, test_fraction=0.0, encoder=STATIC, progress=False)
    with pytest.raises(DataError, match="got 1; give more questions, or a smaller --val-fraction$"):
        prepare(table(3), val_fraction=0.6, test_fraction=0.0, encoder=STATIC, progress=False)
    with pytest.raises(DataError, match=r"the validation part holds no answers \(3 questions with answers to learn "
                       r"from, dealt within each of their subjects \(1\)\).*; give a --val-fraction from 0.2 to 0.8, "
                       "which leaves both the training and the validation part answers$"):
        prepare(table(3), test_fraction=0.0, progress=False)


def test_the_fractions_that_split_a_tiny_set_are_named_by_both_parts_errors_alike(tmp_path: Path) -> None:
    # Too small a --val-fraction left the validation part empty and said "a larger one"; too large a one emptied
    # the training part and said "smaller fractions". Both now name the fractions that work, or say none can.
    from jeirt_lite_training.prepared import prepare
    from jeirt_lite_training.split_advice import working_val_fractions
    from jeirt_lite_training.splits import make_split

    def table(name: str, subjects: list[str]) -> Path:
        path = tmp_path / f"{name}.csv"
        pd.DataFrame([{"question_id": f"q{i}", "text": f"What is {i} + {i}?", "subject": subject, "llm": llm,
                       "correct": i % 2} for i, subject in enumerate(subjects) for llm in ("alpha", "beta")]
                     ).to_csv(path, index=False)
        return path

    one_subject = table("one", ["math", "math"])
    works = "give a --val-fraction from 0.3 to 0.75, which leaves both the training and the validation part answers"
    for val_fraction in (0.1, 0.9):  # one too small, one too large: the same fractions named
        with pytest.raises((DataError, ValueError), match=re.escape(works) + "$"):
            prepare(one_subject, val_fraction=val_fraction, test_fraction=0.0, progress=False)
    with pytest.raises(ValueError, match="give a smaller --holdout: without one, a --val-fraction from 0.3 to 0.75"):
        prepare(one_subject, val_fraction=0.1, test_fraction=0.7, progress=False)
    data = load_dataset(one_subject)
    for val_fraction in working_val_fractions(data, 0, 0.0):  # each named fraction splits the questions in two
        split = make_split(data, val_fraction=val_fraction, test_fraction=0.0)
        assert (len(split.train), len(split.val)) == (1, 1), val_fraction
    # One question a subject: each subject's goes whole to one part, at any fraction.
    none = "no --val-fraction can leave both the training and the validation part answers: the questions are dealt "
    for val_fraction in (0.5, 0.9):
        with pytest.raises((DataError, ValueError), match=re.escape(none) + r".*give more questions per subject, or "
                           "fewer subjects"):
            prepare(table("two", ["math", "law"]), val_fraction=val_fraction, test_fraction=0.0, progress=False)
