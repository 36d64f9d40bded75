"""suggest_questions: budget respected, no repeats, known answers honoured, better than random where the truth is
known."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from jeirt_lite import JeirtError, Router
from jeirt_lite._onboarding import fit_llm_vector
from jeirt_lite._suggest import suggest_indices


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


def test_router_suggest_questions_on_texts(tiny_router_path: Path) -> None:
    router = Router.load(tiny_router_path, threads=1)
    texts = [
        f"what is the {w} of a {v}"
        for w in ("derivative", "integral", "price", "mass")
        for v in ("cell", "market", "circuit", "king", "war")
    ]
    picks = router.suggest_questions(texts, 5)
    assert len(picks) == 5 and len(set(picks)) == 5 and all(0 <= i < len(texts) for i in picks)
    again = router.suggest_questions(texts, 5, known={i: 1 for i in picks})
    assert not set(again) & set(picks)
