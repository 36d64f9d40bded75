"""experiments.data_subset: only LLMs that answered every benchmark, spread over accuracy; only the questions of some
subjects and their answers; the rest of the folder kept; unknown subjects and too many LLMs refused."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from experiments.data_subset import write_subset


def _folder(path: Path) -> Path:
    """Five LLMs on two benchmarks; LLM 4 never answered benchmark b; accuracy rises with the model id."""
    path.mkdir()
    pd.DataFrame({"question_id": ["q0", "q1", "q2", "q3"], "benchmark": ["a", "a", "b", "b"],
                  "subject": ["a", "a", "b", "b"], "text": ["w", "x", "y", "z"]}).to_csv(path / "questions.csv", index=False)
    pd.DataFrame({"model_id": range(5), "name": [f"m{i}" for i in range(5)]}).to_csv(path / "models.csv", index=False)
    rows = [(q, m, int(i < m)) for m in range(4) for i, q in enumerate(["q0", "q1", "q2", "q3"])]
    rows += [("q0", 4, 1), ("q1", 4, 1)]
    pd.DataFrame(rows, columns=["question_id", "model_id", "correct"]).to_csv(path / "responses.csv", index=False)
    return path


def test_keeps_complete_llms_at_spread_ranks_and_only_their_rows(tmp_path: Path) -> None:
    source = _folder(tmp_path / "source")
    keep = write_subset(source, tmp_path / "out", n_llms=2)
    assert keep == [0, 3]  # the least and the most accurate of the four complete ones; LLM 4 is not among them
    assert (tmp_path / "out" / "questions.csv").read_bytes() == (source / "questions.csv").read_bytes()
    assert pd.read_csv(tmp_path / "out" / "models.csv")["name"].tolist() == ["m0", "m3"]
    assert set(pd.read_csv(tmp_path / "out" / "responses.csv")["model_id"]) == {0, 3}


def test_asking_for_more_than_answered_everything_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="only 4 LLMs answered every benchmark"):
        write_subset(_folder(tmp_path / "source"), tmp_path / "out", n_llms=5)
    assert not (tmp_path / "out").exists()


def test_keeps_the_questions_of_some_subjects_and_only_their_answers(tmp_path: Path) -> None:
    source = _folder(tmp_path / "source")
    keep = write_subset(source, tmp_path / "out", subjects=["b"])
    assert keep == [0, 1, 2, 3]  # LLM 4 answered no question of subject b
    assert pd.read_csv(tmp_path / "out" / "questions.csv")["question_id"].tolist() == ["q2", "q3"]
    answers = pd.read_csv(tmp_path / "out" / "responses.csv")
    assert set(answers["question_id"]) == {"q2", "q3"} and len(answers) == 8
    with pytest.raises(ValueError, match=r"no questions of subject\(s\) \['c'\]"):
        write_subset(source, tmp_path / "other", subjects=["c"])


def test_answers_only_keeps_every_question_and_the_subjects_answers(tmp_path: Path) -> None:
    source = _folder(tmp_path / "source")
    write_subset(source, tmp_path / "out", subjects=["b"], answers_only=True)
    assert (tmp_path / "out" / "questions.csv").read_bytes() == (source / "questions.csv").read_bytes()
    assert set(pd.read_csv(tmp_path / "out" / "responses.csv")["question_id"]) == {"q2", "q3"}
