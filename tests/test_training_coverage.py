"""Block-missing data: the LLMs that never answered a whole benchmark are named when `fit` loads the data and
recorded in router.json, since their P(correct) on it is an extrapolation (zeroeval: an LLM that answered only GSM8K
was forecast 0.85 on MATH level 5, where the same model under another name scored 0.51)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from jeirt_lite_training import router_writer
from jeirt_lite_training.coverage import (
    FEW_ANSWERS,
    SHOWN,
    benchmark_floor_p,
    coverage_note,
    few_answers_note,
    unanswered_benchmarks,
)
from jeirt_lite_training.types import Dataset, Responses
from synthetic_answers import synthetic_prepared


def _data(benchmarks: list[str], cells: list[tuple[int, int]], n_llms: int = 3) -> Dataset:
    q, m = (np.array(column, dtype=np.int64) for column in zip(*cells))
    n = len(benchmarks)
    return Dataset("d", [str(i) for i in range(n)], [f"q{i}" for i in range(n)], np.array(benchmarks),
                   np.array(benchmarks), [f"llm-{j}" for j in range(n_llms)],
                   Responses(q, m, np.ones(len(q), dtype=np.float32)))


def test_an_llm_without_any_answer_on_a_benchmark_is_named_with_it() -> None:
    # llm-0 answered everything, llm-1 only GSM8K, llm-2 one question of each benchmark: only llm-1 has a gap
    data = _data(["crux", "gsm", "gsm", "math"],
                 [(0, 0), (1, 0), (2, 0), (3, 0), (1, 1), (2, 1), (0, 2), (2, 2), (3, 2)])
    assert unanswered_benchmarks(data, data.responses) == {"llm-1": ["crux", "math"]}


def test_one_benchmark_or_no_cells_has_nothing_to_say() -> None:
    data = _data(["all", "all"], [(0, 0), (1, 1)])
    assert unanswered_benchmarks(data, data.responses) == {}
    two = _data(["a", "b"], [(0, 0)])
    assert unanswered_benchmarks(two, two.responses.subset(np.zeros(1, dtype=bool))) == {}
    assert coverage_note({}, 3) is None


def test_the_note_names_a_few_llms_and_counts_the_rest() -> None:
    missing = {f"llm-{j}": ["gsm"] for j in range(SHOWN + 2)}
    note = coverage_note(missing, 54)
    assert note is not None and f"{SHOWN + 2} of 54 LLMs" in note and "extrapolated" in note
    assert "llm-0 (none of gsm)" in note and f"llm-{SHOWN}" not in note and "and 2 more" in note


def test_the_router_records_the_gaps_of_the_questions_it_learns_from(monkeypatch: pytest.MonkeyPatch) -> None:
    # 6 questions, 2 benchmarks; llm-1 answered benchmark "b" only on a test question: to the router it is a gap
    emb = np.zeros((6, 2), dtype=np.float32)
    cells = Responses(np.array([0, 1, 2, 3, 4, 5, 0, 1, 5]), np.array([0, 0, 0, 0, 0, 0, 1, 1, 1]),
                      np.ones(9, dtype=np.float32))
    prep = synthetic_prepared(emb, cells, 2, (np.array([0, 1, 3]), np.array([4]), np.array([2, 5])))
    data = dataclasses.replace(prep.data, benchmarks=np.array(["a", "a", "a", "b", "b", "b"]))
    prep = dataclasses.replace(prep, data=data)
    monkeypatch.setattr(router_writer, "get_spec", lambda name: type("Spec", (), {"source": lambda self: "x"})())
    predictor = type("P", (), {"config": type("C", (), {"to_dict": lambda self: {}})(), "best_epoch": 1,
                               "best_val_loss": None, "train_seconds": 0.0})()
    summary = router_writer.training_summary(prep, predictor)  # type: ignore[arg-type]
    assert summary["unanswered_benchmarks"] == {"llm-1": ["b"]}


def test_the_benchmark_floor_is_each_llm_s_smoothed_accuracy_on_the_cell_s_benchmark() -> None:
    # llm-0: 3 of 3 right on "a", 0 of 1 on "b"; llm-1 answered only "a" (1 of 2): on "b" it gets its own accuracy
    data = _data(["a", "a", "a", "b", "b"], [(0, 0), (1, 0), (2, 0), (3, 0), (0, 1), (1, 1)], n_llms=2)
    learned = Responses(data.responses.question, data.responses.llm, np.array([1, 1, 1, 0, 1, 0], np.float32))
    cells = Responses(np.array([4, 4, 0]), np.array([0, 1, 1]), np.zeros(3, np.float32))
    own = np.array([(3 + 1) / (4 + 2), (1 + 1) / (2 + 2)])
    want = [(0 + own[0]) / (1 + 1), own[1], (1 + own[1]) / (2 + 1)]
    np.testing.assert_allclose(benchmark_floor_p(data, learned, cells), want)
    one = _data(["a", "a"], [(0, 0), (1, 1)], n_llms=2)
    assert benchmark_floor_p(one, one.responses, one.responses) is None


def test_llms_with_few_answers_are_named_fewest_first_and_the_rest_say_nothing() -> None:
    # llm-0 answered FEW_ANSWERS questions (enough), llm-1 one, llm-2 FEW_ANSWERS - 1, llm-3 none
    llm = np.array([0] * FEW_ANSWERS + [1] + [2] * (FEW_ANSWERS - 1), dtype=np.int64)
    cells = Responses(np.arange(len(llm), dtype=np.int64), llm, np.ones(len(llm), dtype=np.float32))
    note = few_answers_note(cells, ["llm-0", "llm-1", "llm-2", "llm-3"])
    assert note is not None and f"3 LLMs of 4 with fewer than {FEW_ANSWERS} answers" in note
    assert note.endswith(f"llm-3 (0), llm-1 (1), llm-2 ({FEW_ANSWERS - 1})") and "llm-0" not in note
    enough = Responses(np.arange(FEW_ANSWERS, dtype=np.int64), np.zeros(FEW_ANSWERS, dtype=np.int64),
                       np.ones(FEW_ANSWERS, dtype=np.float32))
    assert few_answers_note(enough, ["llm-0"]) is None
