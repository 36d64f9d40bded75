"""The cost-aware and threshold routing rules (`_routing.route_rows`) against a sort of each row written out in
Python: every position of the order, ties included, over chunks of rows of every size."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import pytest
from jeirt_lite import JeirtError, _routing, kernels
from jeirt_lite._llm_params import Calibration

K, D = 5, 3
# LLMs 0 and 3 share a vector, a calibration and a cost (a full tie: the lower index first); 1 and 4 share a cost
# only.
COSTS = np.array([2.0, 5.0, 9.0, 2.0, 5.0])
SCALE = np.array([0.5, 1.0, 2.0, 0.5, 0.8], dtype=np.float32)
BIAS = np.array([0.1, -0.2, 0.0, 0.1, -0.1], dtype=np.float32)


def _problem(n: int = 9, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    llms = rng.normal(size=(K, D)).astype(np.float32)
    llms[3] = llms[0]
    return (rng.normal(size=(n, D)) * 0.8).astype(np.float32), llms


def _probabilities(questions: np.ndarray, llms: np.ndarray, offsets: Optional[np.ndarray]) -> np.ndarray:
    return kernels.probabilities(questions, llms, threads=1, scale=SCALE, bias=BIAS, offsets=offsets)


def _cost_aware_order(p: np.ndarray, weight: float) -> list[int]:
    p64, penalty = p.astype(np.float64), weight * COSTS
    return sorted(range(K), key=lambda j: (penalty[j] - p64[j], -p64[j], j))


def _threshold_order(p: np.ndarray, threshold: float) -> list[int]:
    p64 = p.astype(np.float64)
    clearing = sorted((j for j in range(K) if p64[j] >= threshold), key=lambda j: (COSTS[j], -p64[j], j))
    rest = sorted((j for j in range(K) if p64[j] < threshold), key=lambda j: (-p64[j], j))
    return clearing + rest


def _route(questions: np.ndarray, llms: np.ndarray, k: int, **rule: Any) -> tuple[np.ndarray, ...]:
    options: dict[str, Any] = {"costs": COSTS, "cost_weight": 0.0, "min_probability": None, "offsets": None}
    options.update(rule)
    return _routing.route_rows(
        questions, llms, k, calibration=Calibration("per_llm", SCALE, BIAS), threads=1, **options
    )


def _recorded_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """The (rows, LLMs) of each probability matrix the rules compute from now on."""
    calls: list[tuple[int, int]] = []
    real = kernels.probabilities

    def recorded(questions: np.ndarray, llms: np.ndarray, **options: Any) -> np.ndarray:
        calls.append((len(questions), len(llms)))
        return real(questions, llms, **options)

    monkeypatch.setattr(kernels, "probabilities", recorded)
    return calls


@pytest.fixture
def chunk_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """The (rows, LLMs) of each probability matrix the rules compute, with chunks of at most 12 cells."""
    monkeypatch.setattr(_routing, "CHUNK_CELLS", 12)
    return _recorded_calls(monkeypatch)


@pytest.mark.parametrize("with_offsets", [False, True])
@pytest.mark.parametrize("weight", [0.01, 0.1, 1e17])
def test_cost_aware_routing_is_each_rows_sort_by_the_key_then_p_then_index(
    chunk_calls: list[tuple[int, int]], weight: float, with_offsets: bool
) -> None:
    questions, llms = _problem()
    offsets = np.random.default_rng(1).normal(size=(len(questions), K)).astype(np.float32) if with_offsets else None
    p = _probabilities(questions, llms, offsets)
    indices, probabilities, fallback = _route(questions, llms, K, cost_weight=weight, offsets=offsets)
    assert fallback is None
    for i in range(len(questions)):
        assert indices[i].tolist() == _cost_aware_order(p[i], weight), i
        np.testing.assert_array_equal(probabilities[i], p[i, indices[i]])
    # At 1e17 the cost swallows P: LLMs of one cost tie on the key and go by P, so 1 and 4 meet in P's order;
    # 0 and 3 (without offsets, which tell them apart) tie on P too, and go by index.
    if weight == 1e17:
        assert any(row[2] == 4 for row in indices) and any(row[2] == 1 for row in indices)
        assert with_offsets or all(row.tolist()[:2] == [0, 3] for row in indices)


@pytest.mark.parametrize("threshold", [0.0, 0.35, 0.6, 1.0])
def test_threshold_routing_is_the_cheapest_clearing_then_the_rest_by_p(
    chunk_calls: list[tuple[int, int]], threshold: float
) -> None:
    questions, llms = _problem(n=40)
    p = _probabilities(questions, llms, None)
    indices, probabilities, fallback = _route(questions, llms, K, min_probability=threshold)
    assert fallback is not None
    for i in range(len(questions)):
        assert indices[i].tolist() == _threshold_order(p[i], threshold), i
        np.testing.assert_array_equal(probabilities[i], p[i, indices[i]])
        assert fallback[i] == (p[i].astype(np.float64) < threshold).all()


def test_equal_costs_clearing_the_threshold_go_by_p() -> None:
    """LLMs 1 and 4 cost the same: where both clear, the more likely of the two comes first."""
    questions, llms = _problem(n=200, seed=3)
    p = _probabilities(questions, llms, None)
    indices = _route(questions, llms, K, min_probability=0.0)[0]
    pairs = [(row.tolist().index(1), row.tolist().index(4), p[i, 1] > p[i, 4]) for i, row in enumerate(indices)]
    assert all((one < four) == one_more_likely for one, four, one_more_likely in pairs)
    assert {one_more_likely for _, _, one_more_likely in pairs} == {True, False}


@pytest.mark.parametrize("rule", [{"cost_weight": 0.1}, {"min_probability": 0.5}])
@pytest.mark.parametrize(
    ("chunk_cells", "n_llms", "calls"),
    [(12, K, [(2, K)] * 4 + [(1, K)]), (7, K, [(1, K)] * 9), (12, 1, [(9, 1)]), (4, 1, [(4, 1), (4, 1), (1, 1)])],
)
def test_rows_are_scored_in_chunks_of_at_most_chunk_cells(
    chunk_calls: list[tuple[int, int]],
    monkeypatch: pytest.MonkeyPatch,
    rule: dict,
    chunk_cells: int,
    n_llms: int,
    calls: list[tuple[int, int]],
) -> None:
    monkeypatch.setattr(_routing, "CHUNK_CELLS", chunk_cells)
    questions, llms = _problem(n=9)
    options: dict[str, Any] = {"cost_weight": 0.0, "min_probability": None, **rule}
    _routing.route_rows(
        questions, llms[:n_llms], 1, calibration=None, costs=COSTS[:n_llms], threads=1, **options
    )
    assert chunk_calls == calls


@pytest.mark.parametrize("rule", [{"cost_weight": 0.1}, {"min_probability": 0.5}])
def test_a_chunk_of_score_s_size_is_one_kernel_call(monkeypatch: pytest.MonkeyPatch, rule: dict) -> None:
    # The chunks bound memory; they must not also cut a batch into many small kernel calls: with the real
    # CHUNK_CELLS, score's chunk of 4,096 rows over a few LLMs is one.
    calls = _recorded_calls(monkeypatch)
    questions, llms = _problem(n=4096)
    _route(questions, llms, 1, **rule)
    assert calls == [(4096, K)]


def test_a_row_wider_than_a_chunk_is_scored_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_routing, "CHUNK_CELLS", 3)
    questions, llms = _problem(n=4)
    indices = _route(questions, llms, K, cost_weight=0.1)[0]
    p = _probabilities(questions, llms, None)
    assert [row.tolist() for row in indices] == [_cost_aware_order(row, 0.1) for row in p]


@pytest.mark.parametrize("rule", [{"cost_weight": 0.1}, {"min_probability": 0.5}])
@pytest.mark.parametrize("k", [0, K + 1, True, 2.0])
def test_k_outside_one_to_the_llm_count_is_refused_by_the_adjusted_rules(rule: dict, k: Any) -> None:
    questions, llms = _problem(n=2)
    with pytest.raises(JeirtError, match=rf"k must be in 1\.\.=K \(K = {K}\), got {k!r}"):
        _route(questions, llms, k, **rule)


def test_a_cost_weight_of_zero_with_costs_is_the_plain_top_k(chunk_calls: list[tuple[int, int]]) -> None:
    questions, llms = _problem(n=30)
    indices, probabilities, fallback = _route(questions, llms, 2, cost_weight=0.0)
    assert chunk_calls == []  # the fused top-k, never the (N, K) matrix the adjusted rules sort
    want = kernels.top_k(questions, llms, 2, threads=1, scale=SCALE, bias=BIAS)
    assert fallback is None
    np.testing.assert_array_equal(indices, want[0])
    np.testing.assert_array_equal(probabilities, want[1])
