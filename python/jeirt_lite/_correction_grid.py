"""The grid of feature corrections around a fixed logit z, cross-validated and averaged by evidence: what add_llm's
fit (`_corrections.fit_onboarding`: z the new LLM's vector logit, refitted in each fold) and update_llm's
(`_update_llm`: z the LLM's full logit as the router scores it) share.

Each fit of the grid adds to s·z an offset linear in the encoder's features f, (w, b) fitted by a logistic regression
with s·z as a fixed offset and a ridge penalty ½α‖w̃‖² on the standardised weights (feature_design):

    logit = s·z + f·w + b

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
can still need the correction (docs/research/onboarding.md). The folds hold each question's answers together
(stratified_folds).
"""

from __future__ import annotations

from typing import Callable, Optional, Union

import numpy as np

from ._errors import JeirtError
from ._ranks import roc_auc
from ._ridge import ridge_logistic, ridge_path

# Ridge strengths tried, in units of the standardised feature scale (see feature_design); inf = no correction.
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


def feature_design(features: np.ndarray, center: np.ndarray, scale: Union[float, np.ndarray]) -> np.ndarray:
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


def standardised_design(features: np.ndarray, rows: int) -> tuple[np.ndarray, np.ndarray, float]:
    """(design, center, scale) of the features (see feature_design); finite (rows, p) features required."""
    f = np.asarray(features, dtype=np.float64)
    if f.ndim != 2 or f.shape[0] != rows or not np.isfinite(f).all():
        raise JeirtError(f"features must be a finite ({rows}, p) array, got shape {f.shape}")
    center = f.mean(axis=0)
    spread = float(np.sqrt(np.mean(np.sum((f - center) ** 2, axis=1))))
    scale = float(np.sqrt(f.shape[1]) / spread) if spread > 0 else 1.0
    return feature_design(f, center, scale), center, scale


def question_keys(q: np.ndarray, groups: Optional[np.ndarray]) -> np.ndarray:
    """One key per answer naming its question: `groups` checked, or (None) equal question vectors as one."""
    keys = np.unique(q, axis=0, return_inverse=True)[1].ravel() if groups is None else np.asarray(groups)
    if keys.shape != (q.shape[0],):
        raise JeirtError(f"groups must hold one key per answer ({q.shape[0]}), got shape {keys.shape}")
    return keys


def averaged_weights(
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


def weighed_fits(y: np.ndarray, held_out: dict[Choice, np.ndarray], averaged_over: dict[Choice, np.ndarray],
                 alone_prior: Optional[float]) -> tuple[dict[Choice, float], dict[str, object]]:
    """Each fit of `averaged_over`'s weight in the average (evidence_weights), and the report's cross-validated
    scores of the average and of the router's logit alone (`held_out`: every fit's held-out logits)."""
    weights = evidence_weights(y, averaged_over, alone_prior)
    averaged = np.sum([weight * held_out[c] for c, weight in weights.items()], axis=0)
    return weights, {"cv_answers": int(len(y)), **_cv_scores(y, averaged, held_out[VECTOR_ALONE])}


def averaged_fits(weights: dict[Choice, float]) -> list[dict[str, object]]:
    """The report's fits of the average (router scale, strength: None for the router's logit alone), heaviest first."""
    return [{"router_scale": s, "strength": None if np.isinf(a) else a, "weight": round(w, 4)}
            for (s, a), w in sorted(weights.items(), key=lambda item: -item[1])]


def plain_weights(w: np.ndarray, center: np.ndarray, feature_scale: float, divisor: float = 1.0) -> tuple[np.ndarray, float]:
    """(weights, bias) on the features as given from `w` on the standardised design (feature_design), divided by `divisor`."""
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


def minority_count(y: np.ndarray) -> int:
    """How many answers have the rarer label (0/1 `y`): cross-validation needs MIN_PER_CLASS_FOR_CV of each."""
    return int(min(y.sum(), len(y) - y.sum()))


def learned_mask(learned: Optional[np.ndarray], rows: int) -> np.ndarray:
    """(rows,) bool from `learned` (None: no answer is on a training question)."""
    if learned is None:
        return np.zeros(rows, dtype=bool)
    mask = np.asarray(learned)
    if mask.shape != (rows,) or mask.dtype != np.bool_:
        raise JeirtError(f"learned must be a ({rows},) bool array, got {mask.dtype} with shape {mask.shape}")
    return mask
