"""The report's onboarding section: which LLMs it refits, at which answer counts, and the log-losses it reports,
against the same draws written out here (jeirt_lite.analysis._onboarding_value on the tiny test router)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from jeirt_lite import EncodedQuestions, Router
from jeirt_lite.analysis._onboarding_value import ANSWER_COUNTS, REPEATS, log_loss, onboarding_curves


def test_the_log_loss_clips_certain_predictions() -> None:
    assert log_loss(np.array([1.0, 0.0]), np.array([0.8, 0.3])) == pytest.approx(-(np.log(0.8) + np.log(0.7)) / 2)
    assert log_loss(np.array([1.0, 0.0]), np.array([0.0, 1.0])) == pytest.approx(-np.log(1e-7))


def test_the_best_middle_and_worst_llm_are_refitted_at_counts_up_to_half_their_answers(tiny_router_path: Path) -> None:
    router = Router.load(tiny_router_path, threads=1).with_neighbours(None)
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(120, router.dim)).astype(np.float32)
    answers = (rng.random((120, 5)) < np.array([0.9, 0.7, 0.5, 0.3, 0.1])).astype(np.float64)
    answers[60:, 3] = np.nan  # 60 answers: counts up to 30
    answers[19:, 4] = np.nan  # 19 answers: fewer than twice the smallest count, never refitted
    curves = onboarding_curves(router, vectors, answers, seed=4)

    accuracy = np.nanmean(answers, axis=0)
    assert list(np.argsort(-accuracy[:4])) == [0, 1, 2, 3]  # best, middle (of the four usable) and worst: 0, 2, 3
    assert list(curves) == [router.llms[0], router.llms[2], router.llms[3]]
    assert [n for n, _, _ in curves[router.llms[0]]] == [c for c in ANSWER_COUNTS if c <= 60]
    assert [n for n, _, _ in curves[router.llms[3]]] == [c for c in ANSWER_COUNTS if c <= 30]

    draws, own = np.random.default_rng(4), router.predict_proba(EncodedQuestions(vectors))
    for j in (0, 2, 3):
        answered = np.flatnonzero(~np.isnan(answers[:, j]))
        for n, refit, mine in curves[router.llms[j]]:
            want_refit, want_mine = [], []
            for _ in range(REPEATS):
                order = draws.permutation(answered)
                fit_rows, rest = order[:n], order[n:]
                grown = router.remove_llm(router.llms[j]).add_llm(
                    router.llms[j], EncodedQuestions(vectors[fit_rows]), answers[fit_rows, j].astype(np.int64))
                p = grown.predict_proba(EncodedQuestions(vectors[rest]))[:, -1]
                want_refit.append(log_loss(answers[rest, j], p))
                want_mine.append(log_loss(answers[rest, j], own[rest, j]))
            assert (refit, mine) == (pytest.approx(np.mean(want_refit)), pytest.approx(np.mean(want_mine)))


def test_no_llm_with_enough_answers_means_no_curve(tiny_router_path: Path) -> None:
    router = Router.load(tiny_router_path, threads=1).with_neighbours(None)
    answers = np.full((30, 5), np.nan)
    answers[:19, :] = 1.0
    assert onboarding_curves(router, np.ones((30, router.dim), np.float32), answers) == {}
