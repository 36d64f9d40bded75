"""Onboarding measured on a router and its data: an LLM of the router refitted from a few of its answers.

For a few LLMs (the best, a middle and the worst by accuracy on the questions given), the LLM is removed from the
router and added back with `add_llm_vectors` from n of its answers (seeded draws); its predictions on the rest of
its answered questions are scored against its real answers, beside those of the router's own vector for it. The
router's adapter was trained with that LLM's answers too, so this measures the onboarding fit itself; an LLM the
router never saw is measured by retraining without it (docs/research/onboarding.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .._metrics import log_loss
from .._questions import EncodedQuestions

if TYPE_CHECKING:
    from .._router import Router

ANSWER_COUNTS = (10, 25, 50, 100)
MIN_ANSWERS = 2 * ANSWER_COUNTS[0]  # an LLM with fewer is not refitted: half its answers fit, half score
REPEATS = 3


def onboarding_curves(
    router: Router, questions: EncodedQuestions | np.ndarray, answers: np.ndarray, seed: int = 0
) -> dict[str, list[tuple[int, float, float]]]:
    """{llm: [(n answers, log-loss of the refitted vector, that of the router's own vector), ...]} on held-back
    cells (log-loss, not AUC: across one LLM's questions the ranking is mostly the questions' difficulty, which
    the LLM's vector hardly changes; its level and direction show in the log-loss).

    `answers` is (N, K) in the router's LLM order, 1/0 with NaN where the data has no answer. `questions`: as
    router.encode gives them, with the encoder's features where an LLM added with add_llm carries a correction (its
    probabilities need them); the refitted vectors are fitted from the vectors alone."""
    if not isinstance(questions, EncodedQuestions):
        questions = EncodedQuestions(questions)
    vectors = np.asarray(questions.vectors)
    counts = (~np.isnan(answers)).sum(axis=0)
    accuracy = np.where(counts > 0, np.nansum(answers, axis=0) / np.maximum(counts, 1), np.nan)
    usable = [j for j in np.argsort(-np.nan_to_num(accuracy, nan=-1.0)) if counts[j] >= MIN_ANSWERS]
    picks = sorted({usable[0], usable[len(usable) // 2], usable[-1]}) if usable else []
    rng = np.random.default_rng(seed)
    own = router.predict_proba(questions)
    curves: dict[str, list[tuple[int, float, float]]] = {}
    for j in picks:
        name = router.llms[j]
        answered = np.flatnonzero(~np.isnan(answers[:, j]))
        without = router.remove_llm(name)
        points = []
        for n in (c for c in ANSWER_COUNTS if c <= answered.size // 2):
            refit, mine = [], []
            for _ in range(REPEATS):
                order = rng.permutation(answered)
                fit_rows, rest = order[:n], order[n:]
                labels = answers[fit_rows, j].astype(np.int64)
                grown = without.add_llm(name, EncodedQuestions(vectors[fit_rows]), labels)
                truth = answers[rest, j]
                refit.append(log_loss(truth, grown.predict_proba(questions.rows(rest))[:, -1]))
                mine.append(log_loss(truth, own[rest, j]))
            points.append((n, float(np.nanmean(refit)), float(np.nanmean(mine))))
        curves[name] = points
    return curves
