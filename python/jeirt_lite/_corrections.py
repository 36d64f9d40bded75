"""A new LLM's correction on the encoder's own features, for answers on questions unlike the router's (add_llm's fit).

`fit_llm_vector` fits only the LLM's vector m in a question space shaped on the router's training questions.
When the new LLM's answers are on other questions, that space may not separate them: what the answers say about
which of the user's questions the LLM gets right is lost. The correction adds, for that LLM only, a logit offset
that is linear in the encoder's features f (the embedding before the router's adapter):

    logit = s·(q·m/‖q‖ − ‖q‖) + f·w + b

(m, then w and b) are fitted from the answers: m exactly as `fit_llm_vector` does, then (w, b) as the average over
the grid of router scales s and ridge strengths α that `_correction_grid` cross-validates and weighs by evidence,
around s times m's logits (m refitted in each fold).
Answers on questions the router learned from (its training_questions.npy) join the fit of m but not the
correction's fit or its cross-validation: there the question vectors were fitted to the other LLMs' answers, so the
router's logit looks better than it will on unseen questions and a correction's measured gain need not carry over.
The router stores s as the new LLM's calibration scale, which the kernels apply to the logit plus the offset, so
the stored offset is (f·w + b)/s.
Everything is numpy; a fit on a few hundred answers takes under a second, on 7,560 answers a few seconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from ._correction_grid import (
    DEFAULT_FOLDS,
    DEFAULT_PERCENTILE_FOR_GATE,
    DEFAULT_ROUTER_SCALES,
    DEFAULT_STRENGTHS,
    LIKE_ROUTER_ALONE_PRIOR,
    MIN_PER_CLASS_FOR_CV,
    ONE_QUESTION,
    VECTOR_ALONE,
    Choice,
    averaged_fits,
    averaged_weights,
    base_logits,
    grid_held_out,
    learned_mask,
    like_the_routers,
    minority_count,
    plain_weights,
    question_keys,
    standardised_design,
    stratified_folds,
    weighed_fits,
)
from ._errors import JeirtError
from ._onboarding import DEFAULT_L2, fit_llm_vector


@dataclass(frozen=True)
class OnboardingFit:
    """What `fit_onboarding` found: the LLM vector, the correction (None when switched off) and how well it fits.

    P(correct) = sigmoid(router_scale · (q·m/‖q‖ − ‖q‖ + features · weights + bias))."""

    vector: np.ndarray  # (d,) float32
    weights: Optional[np.ndarray]  # (p,) float32: logit offset = features · weights + bias; None: no correction
    bias: float
    report: dict[str, object]
    router_scale: float = 1.0  # s̄: stored as the LLM's calibration scale; 1 when there is no correction


def _cross_validated(
    q: np.ndarray, design: np.ndarray, y: np.ndarray, prior: np.ndarray, l2: float, strengths: tuple[float, ...],
    scales: tuple[float, ...], folds: int, seed: int, anchor: Optional[tuple[np.ndarray, np.ndarray]] = None,
    groups: Optional[np.ndarray] = None,
) -> dict[Choice, np.ndarray]:
    """Held-out logits of every answer under each (router scale, finite strength) (m and the correction refitted
    per fold), and under the vector alone (VECTOR_ALONE: the router's logit whole), which the report reads whether
    or not the grid holds an infinite strength. `anchor`: (questions, answers) that join every fold's fit of m but
    are never held out nor read by the correction (answers on questions the router learned from); `groups`: each
    answer's question (stratified_folds)."""
    anchor_q, anchor_y = anchor if anchor is not None else (q[:0], y[:0])

    def fold_logits(train: np.ndarray, test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        vector = fit_llm_vector(
            np.vstack([q[train], anchor_q]), np.concatenate([y[train], anchor_y]), prior_mean=prior, l2=l2
        ).astype(np.float64)
        return base_logits(q[train], vector), base_logits(q[test], vector)

    return grid_held_out(design, y, stratified_folds(y, folds, seed, groups), folds, scales, strengths, fold_logits)


def fit_onboarding(
    questions: np.ndarray,
    features: Optional[np.ndarray],
    correct: np.ndarray,
    *,
    prior_mean: np.ndarray,
    l2: float = DEFAULT_L2,
    strengths: tuple[float, ...] = DEFAULT_STRENGTHS,
    router_scales: tuple[float, ...] = DEFAULT_ROUTER_SCALES,
    folds: int = DEFAULT_FOLDS,
    seed: int = 0,
    in_distribution: Optional[np.ndarray] = None,
    percentile: float = DEFAULT_PERCENTILE_FOR_GATE,
    learned: Optional[np.ndarray] = None,
    groups: Optional[np.ndarray] = None,
) -> OnboardingFit:
    """The new LLM's vector and its feature correction, weighted over the grid by cross-validated evidence.

    Args:
        questions: (n, d) question vectors of the answered questions.
        features: (n, p) encoder features of the same questions, or None (the router exposes none: no correction).
        correct: (n,) 0/1 answers.
        prior_mean: (d,) the prior mean LLM vector.
        l2: prior precision of the LLM vector (as in `fit_llm_vector`).
        strengths: ridge strengths of the grid; include inf to let the vector alone take part.
        router_scales: the router-logit scales s in (0, 1] of the grid; (1.0,) is the plain correction.
        folds, seed: the cross-validation.
        in_distribution: (n,) the router's in-distribution flag of each answered question, or None (unknown):
            when their share is not significantly below the router's own (`like_the_routers_share`), they count as
            the router's own kind (`like_router`) and the vector alone starts the average with
            LIKE_ROUTER_ALONE_PRIOR of the prior weight.
        percentile: the share of its own validation questions the router's alignment threshold flags, in %.
        learned: (n,) bool, which answered questions the router learned from (its training_questions.npy), or None
            (unknown: every answer counts as new to it). m is fitted on every answer; the correction is fitted and
            cross-validated only on the others: on its training questions the question vectors were fitted to the
            other LLMs' answers, so a correction's gain measured there need not carry over to unseen questions.
        groups: (n,) a key per answer naming its question (None: equal question vectors are one question); the
            folds hold out each question's answers together (an LLM sampled several times answers it again).

    Returns:
        An `OnboardingFit`; its report holds the cross-validated AUC and log-loss of the fit and of the vector
        alone (over the answers the correction may read), the fits averaged with their weights, the folds, how
        many answers were on the router's training questions, and why the correction is off when it is.
    """
    q = np.asarray(questions, dtype=np.float64)
    y = np.asarray(correct, dtype=np.float64)
    prior = np.asarray(prior_mean, dtype=np.float64)
    seen = learned_mask(learned, len(y))
    vector = fit_llm_vector(q, y, prior_mean=prior, l2=l2).astype(np.float64)
    report: dict[str, object] = {
        "answers": int(len(y)), "correct": int(y.sum()), "folds": int(folds),
        "on_training_questions": None if learned is None else int(seen.sum()),
    }
    need = max(MIN_PER_CLASS_FOR_CV, folds)
    if minority_count(y) < need:
        return _uncorrected(vector, report, f"off: fewer than {need} answers of each kind")
    _check_grid(strengths, router_scales)
    off = _why_no_correction(features, y, seen, need)
    answers = _correction_answers(q, features, seen, off, strengths, in_distribution, percentile, groups)
    if np.unique(answers.keys).size < 2:  # a fold would fit the vector on no answer at all
        return _uncorrected(vector, report, ONE_QUESTION)
    weights, scores = _weigh_the_grid(q, y, prior, l2, answers, tuple(router_scales), folds, seed)
    report.update(scores)
    if off:
        return _uncorrected(vector, report, off)
    return _weighted_fit(q, y, vector, answers, weights, report)


def _uncorrected(vector: np.ndarray, report: dict[str, object], why: str) -> OnboardingFit:
    """The vector alone, its report saying why there is no correction."""
    report["correction"] = why
    return OnboardingFit(vector.astype(np.float32), None, 0.0, report)


def _check_grid(strengths: tuple[float, ...], router_scales: tuple[float, ...]) -> None:
    if not strengths or any(not (s > 0) for s in strengths):
        raise JeirtError(f"correction strengths must be positive numbers (inf allowed), got {strengths!r}")
    if not router_scales or any(not (0 < s <= 1) for s in router_scales):
        raise JeirtError(f"router scales must be numbers in (0, 1], got {router_scales!r}")


@dataclass(frozen=True)
class _CorrectionAnswers:
    """The answers the folds hold out and the correction reads, and what is read of them."""

    rows: np.ndarray  # (n,) bool: the answers on questions new to the router, or all of them for the vector alone
    design: np.ndarray  # their features standardised (feature_design); one constant column for the vector alone
    center: np.ndarray  # the standardisation: its centre and scale, which the stored weights fold in
    feature_scale: float
    grid: tuple[float, ...]  # the ridge strengths to cross-validate; inf alone for the vector alone
    like_router: bool  # their in-distribution share counts them as the router's own kind (like_the_routers_share)
    keys: np.ndarray  # each one's question (question_keys)


def _correction_answers(
    q: np.ndarray, features: Optional[np.ndarray], seen: np.ndarray, off: Optional[str], strengths: tuple[float, ...],
    in_distribution: Optional[np.ndarray], percentile: float, groups: Optional[np.ndarray],
) -> _CorrectionAnswers:
    """The new answers when a correction can be fitted, all of them when only the vector alone is (`off`)."""
    rows = np.ones(len(seen), dtype=bool) if off else ~seen
    count = int(rows.sum())
    design, center, feature_scale = (
        (np.ones((count, 1)), np.zeros(0), 1.0) if off  # the vector alone reads no design
        else standardised_design(np.asarray(features)[rows], count)
    )
    like_router = like_the_routers(in_distribution, rows, percentile)
    grid = (float("inf"),) if off else tuple(strengths)
    return _CorrectionAnswers(rows, design, center, feature_scale, grid, like_router, question_keys(q, groups)[rows])


def _weigh_the_grid(
    q: np.ndarray, y: np.ndarray, prior: np.ndarray, l2: float, answers: _CorrectionAnswers,
    router_scales: tuple[float, ...], folds: int, seed: int,
) -> tuple[dict[Choice, float], dict[str, object]]:
    """add_llm's grid cross-validated (its vector refitted in each fold) and weighed (weighed_fits)."""
    rows = answers.rows
    held_out = _cross_validated(
        q[rows], answers.design, y[rows], prior, l2, answers.grid, router_scales, folds, seed, (q[~rows], y[~rows]),
        answers.keys,
    )
    alone_in_grid = any(np.isinf(s) for s in answers.grid)
    averaged_over = held_out if alone_in_grid else {c: v for c, v in held_out.items() if c != VECTOR_ALONE}
    return weighed_fits(y[rows], held_out, averaged_over, LIKE_ROUTER_ALONE_PRIOR if answers.like_router else None)


def _weighted_fit(
    q: np.ndarray, y: np.ndarray, vector: np.ndarray, answers: _CorrectionAnswers, weights: dict[Choice, float],
    report: dict[str, object],
) -> OnboardingFit:
    """The fit the weights make: the weighted average of the corrections, folded into plain weights on the features,
    or the vector alone when cross-validation left it the only fit."""
    report["like_router"] = answers.like_router
    report["averaged_fits"] = averaged_fits(weights)
    if set(weights) <= {VECTOR_ALONE}:
        report["router_scale"] = 1.0
        return _uncorrected(vector, report, "off: cross-validation prefers the vector alone" + (
            " (the questions look like the router's training questions: the vector alone had most of the prior)"
            if answers.like_router else ""))
    rows = answers.rows
    scale, w = averaged_weights(answers.design, y[rows], base_logits(q[rows], vector), weights)
    # Fold the router scale in too: logit = s̄·(base + f·weights + bias).
    plain, bias = plain_weights(w, answers.center, answers.feature_scale, scale)
    report.update(router_scale=scale, correction="on")
    return OnboardingFit(vector.astype(np.float32), plain.astype(np.float32), bias, report, scale)



def _why_no_correction(features: Optional[np.ndarray], y: np.ndarray, seen: np.ndarray, need: int) -> Optional[str]:
    """Why no correction can be fitted (the report's `correction`), or None when one can."""
    if features is None:
        return "off: this router's encoder exposes no features"
    if minority_count(y[~seen]) < need:
        return (
            f"off: {int(seen.sum())} of the {len(y)} answers are on questions the router learned from, and a "
            f"correction is fitted only on the others, which have fewer than {need} answers of each kind"
        )
    return None
