"""The report's onboarding section: which LLMs it refits, at which answer counts, and the log-losses it reports,
against the same draws written out here (jeirt_lite.analysis._onboarding_value on the tiny test router)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from jeirt_lite import EncodedQuestions, Router
from jeirt_lite._metrics import log_loss
from jeirt_lite.analysis._onboarding_value import ANSWER_COUNTS, REPEATS, onboarding_curves


def _check_against_the_same_draws(router: Router, vectors: np.ndarray, answers: np.ndarray, seed: int,
                                  curves: dict[str, list[tuple[int, float, float]]]) -> None:
    draws, own = np.random.default_rng(seed), router.predict_proba(EncodedQuestions(vectors))
    for name, points in curves.items():
        j = router.llms.index(name)
        answered = np.flatnonzero(~np.isnan(answers[:, j]))
        assert [n for n, _, _ in points] == [c for c in ANSWER_COUNTS if c <= answered.size // 2]
        for n, refit, mine in points:
            want_refit, want_mine = [], []
            for _ in range(REPEATS):
                order = draws.permutation(answered)
                fit_rows, rest = order[:n], order[n:]
                grown = router.remove_llm(name).add_llm(
                    name, EncodedQuestions(vectors[fit_rows]), answers[fit_rows, j].astype(np.int64))
                p = grown.predict_proba(EncodedQuestions(vectors[rest]))[:, -1]
                want_refit.append(log_loss(answers[rest, j], p))
                want_mine.append(log_loss(answers[rest, j], own[rest, j]))
            assert (refit, mine) == (pytest.approx(np.mean(want_refit)), pytest.approx(np.mean(want_mine)))


@pytest.mark.parametrize(("last_answers", "refitted"), [(20, [0, 1, 4]), (19, [0, 1, 2])])
def test_the_best_middle_and_worst_usable_llm_are_refitted_at_counts_up_to_half_their_answers(
    tiny_router_path: Path, last_answers: int, refitted: list[int]
) -> None:
    router = Router.load(tiny_router_path, threads=1).with_neighbours(None)
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(120, router.dim)).astype(np.float32)
    answers = (rng.random((120, 5)) < np.array([0.5, 0.9, 0.3, 0.7, 0.1])).astype(np.float64)
    answers[60:, 2] = np.nan  # 60 answers: counts up to 30
    answers[40:, 1] = np.nan  # the best by share, with fewer right answers than 0 and 3: ranked by share
    answers[last_answers:, 4] = np.nan  # 20 answers, twice the smallest count, is enough; 19 is not
    order = list(np.argsort(-np.nanmean(answers, axis=0)))
    assert order == [1, 3, 0, 2, 4]  # by accuracy: usable are all five (best 1, middle 0, worst 4) or the first four
    curves = onboarding_curves(router, vectors, answers, seed=4)  # (best 1, middle 0: the third of four, worst 2)
    assert list(curves) == [router.llms[j] for j in refitted]
    _check_against_the_same_draws(router, vectors, answers, 4, curves)


def test_no_llm_with_enough_answers_means_no_curve(tiny_router_path: Path) -> None:
    router = Router.load(tiny_router_path, threads=1).with_neighbours(None)
    answers = np.full((30, 5), np.nan)
    answers[:19, :] = 1.0
    assert onboarding_curves(router, np.ones((30, router.dim), np.float32), answers) == {}
