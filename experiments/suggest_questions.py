"""Which questions to ask a new LLM so that its vector is learned from few answers (the laboratory's).

Shipped until 2026-12-04 as `Router.suggest_questions` and `jeirt-lite suggest`; moved here because on real data it
no longer paid for itself: with the shipped router, adaptive picks were below a random sample of the same size for
an LLM added by add_llm in every measured setting, and even for the vector alone on questions unlike the router's
(docs/research/onboarding.md, "suggest_questions on real data"). experiments.onboarding_suggest_eval measures it.

The MAP fit of a new LLM vector m (jeirt_lite._onboarding.fit_llm_vector) is a logistic regression on the unit
question directions u_i = q_i/‖q_i‖ with curvature Σ w_i u_i u_iᵀ + λI, w_i = p_i(1 − p_i). Greedy D-optimal design picks,
one at a time, the question that most increases log det of that matrix: argmax_i log(1 + w_i u_iᵀ A⁻¹ u_i),
where p_i is predicted with the current estimate of m (the prior mean, a typical LLM, before any answer). After
each pick A⁻¹ gets a rank-one (Sherman–Morrison) update and every candidate's u_iᵀA⁻¹u_i is updated in O(d),
so a pick costs O(n d), not O(n d²).

Rounds: ask the suggested questions, then call again with `known` (the answers so far): the estimate of m is
refitted from them, the weights move to where the LLM's outcome is still uncertain, and already-asked questions
are never suggested again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Optional

import numpy as np
from jeirt_lite import JeirtError
from jeirt_lite._onboarding import DEFAULT_L2, check_labels, fit_llm_vector


def _directions(questions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    q = np.asarray(questions, dtype=np.float64)
    norms = np.linalg.norm(q, axis=1)
    return np.divide(q, norms[:, None], out=np.zeros_like(q), where=norms[:, None] > 0), norms


def suggest_indices(
    questions: np.ndarray,
    budget: int,
    *,
    prior_mean: np.ndarray,
    known: Optional[Mapping[int, int]] = None,
    l2: float = DEFAULT_L2,
) -> np.ndarray:
    """Indices (into `questions`, int64, in pick order) of `budget` questions to ask next.

    Args:
        questions: (n, d) question vectors of the candidate pool.
        budget: how many to pick (1 ≤ budget ≤ number of candidates not yet answered).
        prior_mean: (d,) the prior mean LLM vector (the mean of the router's LLMs).
        known: {row: 0/1} answers already collected for rows of `questions`; they shape the estimate and the
            information matrix and are never picked again.
        l2: prior precision, as in `fit_llm_vector`.
    """
    q = np.asarray(questions)
    if q.ndim != 2 or q.shape[0] == 0:
        raise JeirtError(f"questions must be a non-empty (n, d) array, got shape {q.shape}")
    if not np.isfinite(q).all():
        raise JeirtError("question vectors contain NaN or inf")
    n = q.shape[0]
    known = dict(known or {})
    for row in known:
        if isinstance(row, bool) or not isinstance(row, (int, np.integer)) or not 0 <= row < n:
            raise JeirtError(f"known answer for row {row!r}, outside the {n} questions")
    rows = np.array(sorted(known), dtype=np.int64)
    labels = check_labels(np.array([known[int(r)] for r in rows]), len(rows)) if len(rows) else np.zeros(0)
    available = n - len(rows)
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or not 1 <= budget <= available:
        raise JeirtError(
            f"budget must be an integer in 1..{available} (questions not yet answered), got {budget!r}"
        )

    u, norms = _directions(q)
    m = np.asarray(prior_mean, dtype=np.float64)
    if len(rows) >= 2:
        m = fit_llm_vector(q[rows], labels, prior_mean=m, l2=l2).astype(np.float64)
    p = 0.5 * (1.0 + np.tanh(0.5 * (u @ m - norms)))
    w = p * (1.0 - p)
    d = q.shape[1]
    information = l2 * np.eye(d) + (u[rows] * w[rows, None]).T @ u[rows]
    inverse = np.linalg.inv(information)
    leverage = np.sum((u @ inverse) * u, axis=1)  # u_i^T A^-1 u_i for every candidate
    asked = np.zeros(n, dtype=bool)
    asked[rows] = True
    picks = np.empty(budget, dtype=np.int64)
    for t in range(budget):
        gain = np.where(asked, -np.inf, np.log1p(w * leverage))
        best = int(np.argmax(gain))
        picks[t], asked[best] = best, True
        ax = inverse @ u[best]
        denominator = 1.0 + w[best] * float(u[best] @ ax)
        inverse -= np.outer(ax, ax) * (w[best] / denominator)
        leverage -= (u @ ax) ** 2 * (w[best] / denominator)
    return picks
