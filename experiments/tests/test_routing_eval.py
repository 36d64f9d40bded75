"""experiments.routing_eval and experiments.onboarding_runs helpers on small synthetic data."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from jeirt_lite_training.types import Dataset, Responses

from experiments.onboarding_runs import held_out_llms
from experiments.routing_eval import answer_matrix, evaluate, pick


def test_answer_matrix_and_pick_respect_missing_cells() -> None:
    y = answer_matrix(
        np.array([5, 5, 7]), np.array([0, 2, 1]), np.array([1.0, 0.0, 1.0]), np.array([5, 7]), 3
    )
    np.testing.assert_array_equal(np.isnan(y), [[False, True, False], [True, False, True]])
    scores = np.array([[0.1, 0.9, 0.5], [0.9, 0.2, 0.1]])
    np.testing.assert_array_equal(pick(scores, ~np.isnan(y)), [2, 1])


def _synthetic(n_q: int = 400, k: int = 4, seed: int = 0) -> tuple[SimpleNamespace, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    qv = rng.normal(size=(n_q, 3)).astype(np.float32)
    mv = rng.normal(size=(k, 3)).astype(np.float32) * 2
    u = qv / np.linalg.norm(qv, axis=1, keepdims=True)
    p = 1 / (1 + np.exp(-(u @ mv.T - np.linalg.norm(qv, axis=1, keepdims=True))))
    y = (rng.random(p.shape) < p).astype(np.float32)
    q_idx, l_idx = np.divmod(np.arange(n_q * k), k)
    cells = Responses(q_idx, l_idx, y.ravel())
    train, test = cells.subset(q_idx < n_q // 2), cells.subset(q_idx >= n_q // 2)
    data = Dataset(
        "toy",
        [str(i) for i in range(n_q)],
        ["t"] * n_q,
        np.array(["b"] * n_q),
        np.array(["s1", "s2"] * (n_q // 2)),
        ["a-7b", "b-70b", "c", "d-8x7b"],
        cells,
    )
    return SimpleNamespace(data=data, train=train, test=test), qv, mv


def test_routing_with_the_true_vectors_beats_the_best_single_llm() -> None:
    prep, qv, mv = _synthetic()
    r = evaluate(prep, qv, mv)
    assert r["oracle"] >= r["router"] >= r["best_single"] - 0.02
    assert r["router"] > r["mean_llm"]
    assert r["costs"] == {"a-7b": 7.0, "b-70b": 70.0, "d-8x7b": 56.0}  # "c" has no size: no cost, not a default
    assert r["n_priced_llms"] == 3
    # The cost rules route among the priced LLMs only: λ = 0 is plain routing restricted to them.
    open_only = evaluate(prep, qv, mv, open_only=True)
    accuracies = [acc for kind, _, acc, _ in r["curve"] if kind == "λ"]
    assert accuracies[0] == open_only["router"] == open_only["curve"][0][2]


def test_held_out_llms_span_accuracy_bands_and_are_seeded() -> None:
    prep, _, _ = _synthetic(k=4)
    prep.data = SimpleNamespace(n_llms=4)
    picks = held_out_llms(prep, count=2, seed=0)  # type: ignore[arg-type]
    assert len(picks) == 2 and picks == held_out_llms(prep, count=2, seed=0)  # type: ignore[arg-type]
    acc = np.bincount(prep.train.llm, prep.train.correct, 4) / np.bincount(prep.train.llm, minlength=4)
    order = np.argsort(-acc, kind="stable")
    assert {int(np.flatnonzero(order == p)[0]) // 2 for p in picks} == {0, 1}  # one from each half
