"""A new LLM's correction on the encoder's own features, for answers on questions unlike the router's.

`fit_llm_vector` fits only the LLM's vector m in a question space shaped on the router's training questions.
When the new LLM's answers are on other questions, that space may not separate them: what the answers say about
which of the user's questions the LLM gets right is lost. The correction adds, for that LLM only, a logit offset
that is linear in the encoder's features f (the embedding before the router's adapter):

    logit = s·(q·m/‖q‖ − ‖q‖) + f·w + b

(m, then w and b) are fitted from the answers: m exactly as `fit_llm_vector` does, then (w, b) by a logistic
regression with s times m's logits as a fixed offset and a ridge penalty ½α‖w̃‖² on the standardised weights.
s ≤ 1 is how much of the router's own logit the fit keeps (stacking): where the router's space says nothing about
the new questions, its logit is noise that a correction fitted around it cannot remove, and a smaller s lets the
features carry the fit (s = 1 is the plain correction). The fit is an average over the grid of (s, α), the vector
alone (α = ∞, s = 1) included, each fit weighted by exp of its cross-validated log-likelihood of the answers
(pseudo-Bayesian model averaging): with a few hundred answers the held-out log-loss
of neighbouring pairs differs by less than its noise, and picking one pair by it left AUC on the table
(docs/research/onboarding.md). The average of the fits' logits has the form above again (s̄ = the weights' mean
s), so it is stored like a single fit. When the router's alignment counts the answered questions as its own kind
(`like_the_routers_share`), the vector alone starts with most of the prior weight (LIKE_ROUTER_ALONE_PRIOR) instead
of an equal share: on new questions of the router's kind its space explains most of what the answers say, and with
few answers the plain average was measured to lose there; yet the alignment flag is coarse, and questions it passes
can still need the correction (docs/research/onboarding.md).
Answers on questions the router learned from (its training_questions.npy) join the fit of m but not the
correction's fit or its cross-validation: there the question vectors were fitted to the other LLMs' answers, so the
router's logit looks better than it will on unseen questions and a correction's measured gain need not carry over.
The router stores s as the new LLM's calibration scale, which the kernels apply to the logit plus the offset, so
the stored offset is (f·w + b)/s.
Everything is numpy; a fit on a few hundred answers takes under a second, on 7,560 answers a few seconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Union

import numpy as np

from ._errors import JeirtError
from ._onboarding import DEFAULT_L2, fit_llm_vector
from ._ranks import roc_auc
from ._ridge import ridge_logistic, ridge_path

# Ridge strengths tried, in units of the standardised feature scale (see _design); inf = no correction.
DEFAULT_STRENGTHS = (np.inf, 3000.0, 1000.0, 300.0, 100.0, 30.0, 10.0, 3.0)
# How much of the router's logit the corrected fit keeps (s above); 1 first: the router is trusted unless the
# answers say otherwise.
DEFAULT_ROUTER_SCALES = (1.0, 0.5, 0.25, 0.1)
DEFAULT_FOLDS = 5
# Below this many answers of each kind the folds cannot estimate anything: the correction stays off.
MIN_PER_CLASS_FOR_CV = 5
# Fits of the average weighing less than this are left out (and the rest renormalised): their share of the logit
# is far below the noise of the fit, and they need not be fitted on all the answers.
MIN_WEIGHT = 1e-3
# The router's alignment threshold flags `percentile`% of its own validation questions (5% by default), so questions
# like its training questions come out about 95% in distribution. Answered questions whose in-distribution share is
# not significantly below that (less than two binomial standard errors) count as the router's own kind.
DEFAULT_PERCENTILE_FOR_GATE = 5.0


def like_the_routers_share(count: int, percentile: float = DEFAULT_PERCENTILE_FOR_GATE) -> float:
    """The in-distribution share of `count` questions at or above which they count as like the router's own:
    its own share 1 − percentile/100, less two binomial standard errors."""
    own = 1.0 - percentile / 100.0
    return own - 2.0 * float(np.sqrt(own * (1.0 - own) / max(count, 1)))


def like_the_routers(in_distribution: Optional[np.ndarray], rows: np.ndarray, percentile: float) -> bool:
    """Whether the answers `rows` (bool) count as on questions like the router's own by their in-distribution flags
    (like_the_routers_share); False where the flags are unknown (None) or no answer is left."""
    if in_distribution is None or not rows.any():
        return False
    share = float(np.mean(np.asarray(in_distribution)[rows]))
    return share >= like_the_routers_share(int(rows.sum()), percentile)


@dataclass(frozen=True)
class OnboardingFit:
    """What `fit_onboarding` found: the LLM vector, the correction (None when switched off) and how well it fits.

    P(correct) = sigmoid(router_scale · (q·m/‖q‖ − ‖q‖ + features · weights + bias))."""

    vector: np.ndarray  # (d,) float32
    weights: Optional[np.ndarray]  # (p,) float32: logit offset = features · weights + bias; None: no correction
    bias: float
    report: dict[str, object]
    router_scale: float = 1.0  # s̄: stored as the LLM's calibration scale; 1 when there is no correction


def base_logits(questions: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """q·m/‖q‖ − ‖q‖ per question (0 for a zero vector, as in the kernels)."""
    norms = np.linalg.norm(questions, axis=1)
    dots: np.ndarray = np.divide(questions @ vector, norms, out=np.zeros_like(norms), where=norms > 0)
    logits: np.ndarray = dots - norms
    return logits


# The design's constant column: the ridge penalty on its weight, α(b/INTERCEPT_COLUMN)², is negligible, so the
# correction's intercept is all but free. A penalised intercept is held near 0, which biases the feature weights
# wherever the logit's level is off (a scaled-down router logit, or features alone).
INTERCEPT_COLUMN = 100.0


def _design(features: np.ndarray, center: np.ndarray, scale: Union[float, np.ndarray]) -> np.ndarray:
    """Standardised features and a constant column: the ridge penalty treats every feature direction alike (one
    scale for all features; experiments.onboarding_methods also passes one per feature)."""
    return np.hstack([(features - center) * scale, np.full((features.shape[0], 1), INTERCEPT_COLUMN)])


Choice = tuple[float, float]  # (router scale s, ridge strength α); (1, inf) is the vector alone
VECTOR_ALONE: Choice = (1.0, float("inf"))
# Questions of the router's own kind: the prior weight of the vector alone in the average (the other fits share the
# rest evenly); otherwise every fit of the grid is equally likely beforehand.
LIKE_ROUTER_ALONE_PRIOR = 0.9
# Why there is no correction when the folds, which hold each question's answers together, would have one question.
ONE_QUESTION = "off: the answers are all to one question, and cross-validation needs answers to two or more"


def log_likelihoods(y: np.ndarray, logits: np.ndarray) -> np.ndarray:
    """log P(y) per answer under σ(logits), computed stably."""
    out: np.ndarray = y * logits - np.logaddexp(0.0, logits)
    return out


def evidence_weights(
    y: np.ndarray, held_out: dict[Choice, np.ndarray], alone_prior: Optional[float] = None
) -> dict[Choice, float]:
    """Each choice's weight ∝ its prior × exp(its held-out log-likelihood of the answers) (pseudo-Bayesian model
    averaging over the grid), those below MIN_WEIGHT left out and the rest renormalised. The prior: `alone_prior` on
    the vector alone and the rest shared evenly by the other choices, or (None) every choice equally likely."""
    if alone_prior is not None and not 0.0 < alone_prior < 1.0:
        raise ValueError(f"the vector alone's prior weight must be in (0, 1), got {alone_prior!r}")
    choices = list(held_out)
    evidence = np.array([log_likelihoods(y, held_out[c]).sum() for c in choices])
    if alone_prior is not None and VECTOR_ALONE in held_out and len(choices) > 1:
        others = (1.0 - alone_prior) / (len(choices) - 1)
        evidence += np.log([alone_prior if c == VECTOR_ALONE else others for c in choices])
    weights = np.exp(evidence - evidence.max())
    weights /= weights.sum()
    kept = weights >= MIN_WEIGHT
    return {c: float(w) for c, w, k in zip(choices, weights / weights[kept].sum(), kept) if k}


def _auc(y: np.ndarray, score: np.ndarray) -> Optional[float]:
    """Rank AUC (ties count half); None when only one class is present (the report is JSON, which has no NaN)."""
    auc = roc_auc(y, score)
    return None if np.isnan(auc) else auc


def stratified_folds(y: np.ndarray, count: int, seed: int, groups: Optional[np.ndarray] = None) -> np.ndarray:
    """Fold number per answer, stratified by label, seeded. `groups`: one key per answer naming its question (None:
    every answer a question of its own); answers to one question share a fold, so that no fold is scored on a
    question its fit read, and the questions are stratified by their majority label (a tie as right). With every
    key distinct the folds are those of `groups=None`."""
    if groups is None:
        return _label_folds(np.asarray(y, dtype=np.float64), count, seed)
    _, first, inverse = np.unique(np.asarray(groups), return_index=True, return_inverse=True)
    number = np.empty(first.size, dtype=np.int64)
    number[np.argsort(first, kind="stable")] = np.arange(first.size)
    question = number[inverse.ravel()]  # each answer's question, numbered in the order they first appear
    share = np.bincount(question, weights=y) / np.bincount(question)
    return _label_folds((share >= 0.5).astype(np.float64), count, seed)[question]


def _label_folds(y: np.ndarray, count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    fold = np.empty(len(y), dtype=np.int64)
    for label in (0.0, 1.0):
        rows = rng.permutation(np.flatnonzero(y == label))
        fold[rows] = np.arange(len(rows)) % count
    return fold


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


def grid_held_out(
    design: np.ndarray, y: np.ndarray, fold: np.ndarray, folds: int, scales: tuple[float, ...],
    strengths: tuple[float, ...], fold_logits: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]],
) -> dict[Choice, np.ndarray]:
    """Held-out logits of every answer under the vector alone (VECTOR_ALONE: the router's logit whole) and under
    each (router scale, finite strength), its correction fitted on the other folds around the scaled logit;
    `fold_logits(train, test)`: the router's logits of a fold's training and held-out answers (add_llm refits the
    LLM's vector per fold, update_llm's logits are fixed)."""
    finite = [s for s in strengths if np.isfinite(s)]
    choices = [VECTOR_ALONE, *[(scale, strength) for scale in scales for strength in finite]]
    held_out = {c: np.empty(len(y)) for c in choices}
    for k in range(folds):
        train, test = fold != k, fold == k
        offset_train, offset_test = fold_logits(train, test)
        held_out[VECTOR_ALONE][test] = offset_test
        for scale in scales if finite else ():
            for strength, w in ridge_path(design[train], y[train], scale * offset_train, finite).items():
                held_out[(scale, strength)][test] = design[test] @ w + scale * offset_test
    return held_out


def _standardised_design(features: np.ndarray, rows: int) -> tuple[np.ndarray, np.ndarray, float]:
    """(design, center, scale) of the features (see _design); finite (rows, p) features required."""
    f = np.asarray(features, dtype=np.float64)
    if f.ndim != 2 or f.shape[0] != rows or not np.isfinite(f).all():
        raise JeirtError(f"features must be a finite ({rows}, p) array, got shape {f.shape}")
    center = f.mean(axis=0)
    spread = float(np.sqrt(np.mean(np.sum((f - center) ** 2, axis=1))))
    scale = float(np.sqrt(f.shape[1]) / spread) if spread > 0 else 1.0
    return _design(f, center, scale), center, scale


def _question_keys(q: np.ndarray, groups: Optional[np.ndarray]) -> np.ndarray:
    """One key per answer naming its question: `groups` checked, or (None) equal question vectors as one."""
    keys = np.unique(q, axis=0, return_inverse=True)[1].ravel() if groups is None else np.asarray(groups)
    if keys.shape != (q.shape[0],):
        raise JeirtError(f"groups must hold one key per answer ({q.shape[0]}), got shape {keys.shape}")
    return keys


def _averaged_weights(
    design: np.ndarray, y: np.ndarray, base: np.ndarray, weights: dict[Choice, float]
) -> tuple[float, np.ndarray]:
    """(s̄, w̄): the weighted average of every fit's router scale and design weights, each fitted exactly on all
    answers (the vector alone counts as s = 1, w = 0). Σ π (s·base + X w) = s̄·base + X w̄."""
    scale, average = 0.0, np.zeros(design.shape[1])
    for (s, strength), weight in weights.items():
        scale += weight * s
        if np.isfinite(strength):
            average += weight * ridge_logistic(design, y, s * base, strength)
    return scale, average


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
    seen = _learned_mask(learned, len(y))
    vector = fit_llm_vector(q, y, prior_mean=prior, l2=l2).astype(np.float64)
    report: dict[str, object] = {
        "answers": int(len(y)), "correct": int(y.sum()), "folds": int(folds),
        "on_training_questions": None if learned is None else int(seen.sum()),
    }
    need = max(MIN_PER_CLASS_FOR_CV, folds)
    if _per_class(y) < need:
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
    design: np.ndarray  # their features standardised (_design); one constant column for the vector alone
    center: np.ndarray  # the standardisation: its centre and scale, which the stored weights fold in
    feature_scale: float
    grid: tuple[float, ...]  # the ridge strengths to cross-validate; inf alone for the vector alone
    like_router: bool  # their in-distribution share counts them as the router's own kind (like_the_routers_share)
    keys: np.ndarray  # each one's question (_question_keys)


def _correction_answers(
    q: np.ndarray, features: Optional[np.ndarray], seen: np.ndarray, off: Optional[str], strengths: tuple[float, ...],
    in_distribution: Optional[np.ndarray], percentile: float, groups: Optional[np.ndarray],
) -> _CorrectionAnswers:
    """The new answers when a correction can be fitted, all of them when only the vector alone is (`off`)."""
    rows = np.ones(len(seen), dtype=bool) if off else ~seen
    count = int(rows.sum())
    design, center, feature_scale = (
        (np.ones((count, 1)), np.zeros(0), 1.0) if off  # the vector alone reads no design
        else _standardised_design(np.asarray(features)[rows], count)
    )
    like_router = like_the_routers(in_distribution, rows, percentile)
    grid = (float("inf"),) if off else tuple(strengths)
    return _CorrectionAnswers(rows, design, center, feature_scale, grid, like_router, _question_keys(q, groups)[rows])


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


def weighed_fits(y: np.ndarray, held_out: dict[Choice, np.ndarray], averaged_over: dict[Choice, np.ndarray],
                 alone_prior: Optional[float]) -> tuple[dict[Choice, float], dict[str, object]]:
    """Each fit of `averaged_over`'s weight in the average (evidence_weights), and the report's cross-validated
    scores of the average and of the router's logit alone (`held_out`: every fit's held-out logits)."""
    weights = evidence_weights(y, averaged_over, alone_prior)
    averaged = np.sum([weight * held_out[c] for c, weight in weights.items()], axis=0)
    return weights, {"cv_answers": int(len(y)), **_cv_scores(y, averaged, held_out[VECTOR_ALONE])}


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
    scale, w = _averaged_weights(answers.design, y[rows], base_logits(q[rows], vector), weights)
    # Fold the router scale in too: logit = s̄·(base + f·weights + bias).
    plain, bias = plain_weights(w, answers.center, answers.feature_scale, scale)
    report.update(router_scale=scale, correction="on")
    return OnboardingFit(vector.astype(np.float32), plain.astype(np.float32), bias, report, scale)


def averaged_fits(weights: dict[Choice, float]) -> list[dict[str, object]]:
    """The report's fits of the average (router scale, strength: None for the router's logit alone), heaviest first."""
    return [{"router_scale": s, "strength": None if np.isinf(a) else a, "weight": round(w, 4)}
            for (s, a), w in sorted(weights.items(), key=lambda item: -item[1])]


def plain_weights(w: np.ndarray, center: np.ndarray, feature_scale: float, divisor: float = 1.0) -> tuple[np.ndarray, float]:
    """(weights, bias) on the features as given from `w` on the standardised design (_design), divided by `divisor`."""
    plain = w[:-1] * feature_scale / divisor
    return plain, float(w[-1] * INTERCEPT_COLUMN / divisor - center @ plain)


def _cv_scores(y: np.ndarray, fitted: np.ndarray, vector_alone: np.ndarray) -> dict[str, object]:
    """The report's cross-validated AUC and log-loss of the fit and of the vector alone (held-out logits)."""
    return {
        "cv_auc": _auc(y, fitted),
        "cv_log_loss": float(-np.mean(log_likelihoods(y, fitted))),
        "cv_auc_vector_only": _auc(y, vector_alone),
        "cv_log_loss_vector_only": float(-np.mean(log_likelihoods(y, vector_alone))),
    }


def _per_class(y: np.ndarray) -> int:
    return int(min(y.sum(), len(y) - y.sum()))


def _learned_mask(learned: Optional[np.ndarray], rows: int) -> np.ndarray:
    """(rows,) bool from `learned` (None: no answer is on a training question)."""
    if learned is None:
        return np.zeros(rows, dtype=bool)
    mask = np.asarray(learned)
    if mask.shape != (rows,) or mask.dtype != np.bool_:
        raise JeirtError(f"learned must be a ({rows},) bool array, got {mask.dtype} with shape {mask.shape}")
    return mask


def _why_no_correction(features: Optional[np.ndarray], y: np.ndarray, seen: np.ndarray, need: int) -> Optional[str]:
    """Why no correction can be fitted (the report's `correction`), or None when one can."""
    if features is None:
        return "off: this router's encoder exposes no features"
    if _per_class(y[~seen]) < need:
        return (
            f"off: {int(seen.sum())} of the {len(y)} answers are on questions the router learned from, and a "
            f"correction is fitted only on the others, which have fewer than {need} answers of each kind"
        )
    return None
