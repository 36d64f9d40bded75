"""suggest_indices, the laboratory's adaptive question picks: budget respected, no repeats, known answers honoured,
better than random where the truth is known, the p(1 - p) weight of each question."""

from __future__ import annotations

import numpy as np
import pytest
from jeirt_lite import JeirtError
from jeirt_lite._onboarding import fit_llm_vector

from experiments.suggest_questions import suggest_indices


def _pool(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    # Anisotropic directions: a few directions are rare, which is where a random sample learns least.
    q = rng.normal(size=(n, d)) * np.geomspace(1.0, 0.05, d)
    return (q / np.linalg.norm(q, axis=1, keepdims=True) * rng.uniform(0.5, 1.5, size=(n, 1))).astype(
        np.float32
    )


def test_budget_no_repeats_and_known_rows_are_skipped() -> None:
    rng = np.random.default_rng(0)
    q = _pool(rng, 200, 6)
    picks = suggest_indices(q, 30, prior_mean=np.zeros(6))
    assert len(picks) == 30 and len(set(picks.tolist())) == 30
    known = {int(i): int(i % 2) for i in picks[:10]}
    more = suggest_indices(q, 25, prior_mean=np.zeros(6), known=known)
    assert len(set(more.tolist())) == 25 and not set(more.tolist()) & set(known)
    assert len(suggest_indices(q, 190, prior_mean=np.zeros(6), known=known)) == 190


@pytest.mark.parametrize(
    ("budget", "known", "message"),
    [
        (0, None, "budget must be an integer in 1..200"),
        (201, None, "budget must be an integer in 1..200"),
        (199, {0: 1, 1: 0}, r"1\.\.198"),
        (5, {500: 1}, "outside the 200 questions"),
        (5, {0: 2}, "labels must be 0 or 1"),
    ],
)
def test_bad_arguments_are_named(budget: int, known: dict[int, int] | None, message: str) -> None:
    q = _pool(np.random.default_rng(1), 200, 4)
    with pytest.raises(JeirtError, match=message):
        suggest_indices(q, budget, prior_mean=np.zeros(4), known=known)


def test_adaptive_questions_estimate_the_true_vector_better_than_random() -> None:
    rng = np.random.default_rng(2)
    d, n, budget = 8, 3000, 80
    errors_random, errors_adaptive = [], []
    for _ in range(6):
        q = _pool(rng, n, d)
        true_m = rng.normal(size=d) * 1.5
        u = q / np.linalg.norm(q, axis=1, keepdims=True)
        y = (rng.random(n) < 1 / (1 + np.exp(-(u @ true_m - np.linalg.norm(q, axis=1))))).astype(np.int64)
        random_rows = rng.choice(n, budget, replace=False)
        errors_random.append(np.linalg.norm(fit_llm_vector(q[random_rows], y[random_rows]) - true_m))
        known: dict[int, int] = {}
        for _ in range(4):  # four rounds of twenty, refitting between rounds
            for i in suggest_indices(q, budget // 4, prior_mean=np.zeros(d), known=known):
                known[int(i)] = int(y[i])
        rows = np.array(sorted(known))
        errors_adaptive.append(np.linalg.norm(fit_llm_vector(q[rows], y[rows]) - true_m))
    assert np.mean(errors_adaptive) < 0.9 * np.mean(errors_random), (errors_adaptive, errors_random)


def _greedy_log_det(q: np.ndarray, prior_mean: np.ndarray, budget: int, l2: float) -> list[int]:
    """The D-optimal greedy rule by brute force: each step, the question that most increases log det."""
    norms = np.linalg.norm(q, axis=1)
    u = q / norms[:, None]
    p = 1.0 / (1.0 + np.exp(-(u @ prior_mean - norms)))
    w = p * (1.0 - p)
    information = l2 * np.eye(q.shape[1])
    picks: list[int] = []
    for _ in range(budget):
        gains = [
            -np.inf if i in picks else np.linalg.slogdet(information + w[i] * np.outer(u[i], u[i]))[1]
            for i in range(len(q))
        ]
        best = int(np.argmax(gains))
        picks.append(best)
        information = information + w[best] * np.outer(u[best], u[best])
    return picks


def test_suggest_weighs_each_question_by_p_times_one_minus_p() -> None:
    rng = np.random.default_rng(4)
    q = rng.normal(size=(40, 5)) * rng.uniform(0.1, 4.0, size=(40, 1))  # norms (difficulty) spread widely
    prior = rng.normal(size=5)
    assert suggest_indices(q, 8, prior_mean=prior, l2=1.0).tolist() == _greedy_log_det(q, prior, 8, 1.0)
    # Two orthogonal questions: the certain one (P near 0) teaches nothing, the uncertain one is asked first.
    pair = np.array([[8.0, 0.0], [0.0, 0.01]])
    assert suggest_indices(pair, 1, prior_mean=np.zeros(2)).tolist() == [1]
