"""`Router.update_llm`: an LLM the router already holds, adapted to the user's questions from some of its answers.

On questions unlike the router's, its LLMs keep their order well but their P(correct) levels can be far off
(docs/research/forecast.md). The update keeps everything the LLM has (its vector, neighbour votes, calibration and
any correction: its full logit z) and fits on top of it the feature correction add_llm fits for a new LLM
(`jeirt_lite._corrections`, through the grid both share: `jeirt_lite._correction_grid`), with z in place of the
new vector's logit:

    logit = s̄·z + f·w + b

weighted over the same grid of router scales s and ridge strengths by each fit's cross-validated evidence, "no
change" (s = 1, no correction) being the grid's vector-alone member. As with add_llm, answers on questions the
router learned from are left out of the fit (there z looks better than it will elsewhere), the folds hold a
question's answers together, and questions the router's alignment counts as its own kind give "no change" most of
the prior weight. Since z = c_s·(vector logit + votes + offset) + c_b, the result is stored in the existing format:
the LLM's calibration becomes (s̄·c_s, s̄·c_b) and its correction offset + (f·w + b)/(s̄·c_s), so that route, score
and serve apply it with no new path. Measured against the router unchanged, add_llm under a new name and a
logistic regression: docs/research/onboarding.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Callable, Optional, TypeVar, Union

import numpy as np

from ._alignment import AlignmentResult
from ._correction_grid import (
    DEFAULT_FOLDS,
    DEFAULT_PERCENTILE_FOR_GATE,
    DEFAULT_ROUTER_SCALES,
    DEFAULT_STRENGTHS,
    LIKE_ROUTER_ALONE_PRIOR,
    MIN_PER_CLASS_FOR_CV,
    ONE_QUESTION,
    VECTOR_ALONE,
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
from ._feature_offsets import FeatureCorrections, new_corrections
from ._llm_params import Calibration
from ._manifest import freeze
from ._onboard_router import alignment_gate, alignment_record, router_features
from ._onboarding import MIN_LABELS, check_labels
from ._router_tables import RouterTables

RouterT = TypeVar("RouterT", bound=RouterTables)
# The router's logit offsets (votes, corrections) of the questions (vectors, features) for the LLMs named.
OffsetsOf = Callable[[np.ndarray, np.ndarray, Sequence[str]], Optional[np.ndarray]]


@dataclass(frozen=True)
class UpdateFit:
    """logit = scale·(current logit) + features·weights + bias; weights None: no change."""

    scale: float
    weights: Optional[np.ndarray]
    bias: float
    report: dict[str, object]


def fit_update(
    current: np.ndarray, features: np.ndarray, correct: np.ndarray, *, seed: int = 0,
    strengths: tuple[float, ...] = DEFAULT_STRENGTHS, scales: tuple[float, ...] = DEFAULT_ROUTER_SCALES,
    folds: int = DEFAULT_FOLDS, alone_prior: Optional[float] = None, groups: Optional[np.ndarray] = None,
) -> UpdateFit:
    """The correction on top of an LLM's full logits `current` on the answered questions (see the module);
    `alone_prior`: the prior weight of "no change" (None: every fit of the grid equally likely); `groups`: a key per
    answer naming its question (None: each answer its own). Fewer than the folds need of a kind: no change."""
    y = np.asarray(correct, dtype=np.float64)
    z = np.asarray(current, dtype=np.float64)
    report: dict[str, object] = {"answers": int(len(y)), "correct": int(y.sum()), "folds": int(folds)}
    need = max(MIN_PER_CLASS_FOR_CV, folds)
    if minority_count(y) < need:
        return UpdateFit(1.0, None, 0.0, {**report, "correction": f"off: fewer than {need} answers of each kind"})
    if groups is not None and np.unique(np.asarray(groups)).size < 2:  # one fold would train on no answer at all
        return UpdateFit(1.0, None, 0.0, {**report, "correction": ONE_QUESTION})
    design, center, feature_scale = standardised_design(features, len(y))
    held_out = grid_held_out(design, y, stratified_folds(y, folds, seed, groups), folds, scales, strengths,
                             lambda train, test: (z[train], z[test]))
    weights, scores = weighed_fits(y, held_out, held_out, alone_prior)  # "no change" is always in the average
    report.update(**scores, averaged_fits=averaged_fits(weights))
    if set(weights) <= {VECTOR_ALONE}:
        return UpdateFit(1.0, None, 0.0, {**report, "router_scale": 1.0,
                                          "correction": "off: cross-validation prefers the LLM unchanged"})
    scale, w = averaged_weights(design, y, z, weights)
    plain, bias = plain_weights(w, center, feature_scale)
    return UpdateFit(scale, plain, bias, {**report, "router_scale": scale, "correction": "on"})


def with_updated_llm(
    router: RouterT, name: str, vectors: np.ndarray, correct: Sequence[Union[int, bool]], offsets_of: OffsetsOf, *,
    features: Optional[np.ndarray], learned: Optional[np.ndarray] = None,
    alignment: Optional[AlignmentResult] = None, groups: Optional[np.ndarray] = None,
) -> RouterT:
    """A copy of `router` whose LLM `name` is adapted to its answers `correct` on the questions with checked
    `vectors` and their `features` (see `Router.update_llm`), the fit recorded in `manifest["onboarded"]` with
    "update": true; `offsets_of`: the router's offsets (`Router._offsets`); `learned`, `alignment`, `groups` as
    `with_new_llm` reads them."""
    if name not in router.llms:
        raise JeirtError(f"LLM {name!r} is not in this router, so it cannot be updated; add it with add_llm")
    if not router.manifest["encoder"].get("feature_output"):
        raise JeirtError("this router's encoder exposes no features (encoder.feature_output), and updating an LLM "
                         "fits a correction on them")
    if features is None:
        raise JeirtError("updating an LLM fits a correction on the encoder's features: give the questions as texts "
                         "or as router.encode(texts, features=True)'s result")
    labels = check_labels(correct, vectors.shape[0])
    if len(labels) < MIN_LABELS:  # as add_llm: none would leave a record of nothing (and NaN alignment scores)
        raise JeirtError(f"need at least {MIN_LABELS} answers to update an LLM, got {len(labels)}")
    checked = router_features(router, features, vectors.shape[0])
    f = checked.astype(np.float64)
    j = router.llms.index(name)
    current = base_logits(vectors.astype(np.float64), router.llm_vectors[j].astype(np.float64))
    offsets = offsets_of(vectors, checked, [name])  # its votes and any correction it has
    if offsets is not None:
        current = current + offsets[:, 0].astype(np.float64)
    cal = router.calibration
    if cal is not None:
        current = float(cal.scale[j]) * current + float(cal.bias[j])
    # As add_llm's correction: answers on the router's training questions are left out (there z looks too good).
    rows = ~learned_mask(learned, len(labels))
    gate = alignment_gate(router, alignment)
    like_router = like_the_routers(gate.get("in_distribution"), rows, gate.get("percentile", DEFAULT_PERCENTILE_FOR_GATE))
    fit = fit_update(current[rows], f[rows], labels[rows], groups=question_keys(vectors, groups)[rows],
                     alone_prior=LIKE_ROUTER_ALONE_PRIOR if like_router else None)
    enough = minority_count(labels) >= max(MIN_PER_CLASS_FOR_CV, DEFAULT_FOLDS)  # else too few whichever are left out
    if enough and (~rows).any() and fit.weights is None and str(fit.report["correction"]).startswith("off: fewer"):
        fit.report["correction"] = (
            f"off: {int((~rows).sum())} of the {len(labels)} answers are on questions the router learned from, and "
            f"the update is fitted only on the others, which have fewer than {MIN_PER_CLASS_FOR_CV} of each kind")
    record: dict[str, Any] = {
        "name": name, "update": True, **fit.report, "answers": int(len(labels)), "correct": int(labels.sum()),
        "like_router": like_router,
        "on_training_questions": None if learned is None else int((~rows).sum()),
    }
    if alignment is not None:
        record["alignment"] = alignment_record(alignment)
    changes: dict[str, Any] = {"onboarded": (*(router.manifest.onboarded or ()), freeze(record))}
    corrections = router.corrections
    if fit.weights is not None:
        old = router.calibration or Calibration.identity(len(router.llms))
        new_scale = fit.scale * float(old.scale[j])
        scale, bias = old.scale.copy(), old.bias.copy()
        scale[j], bias[j] = new_scale, fit.scale * float(old.bias[j])
        changes["calibration"] = old.with_pairs(scale, bias)  # "per_llm" once its pair is not the others'
        corrections = _added_correction(corrections, name, fit.weights / new_scale, fit.bias / new_scale)
    return router._with_llms(router.llms, router.llm_vectors, corrections=corrections, **changes)


def _added_correction(
    corrections: Optional[FeatureCorrections], name: str, weights: np.ndarray, bias: float
) -> FeatureCorrections:
    """`corrections` with (weights, bias) added to `name`'s row (a new row when it has none)."""
    if corrections is None:
        return new_corrections(name, weights, bias)
    if name not in corrections.llms:
        return corrections.with_llm(name, weights, bias)
    row = corrections.llms.index(name)
    summed_weights, summed_bias = corrections.weights.copy(), corrections.bias.copy()
    summed_weights[row] += np.asarray(weights, np.float32)
    summed_bias[row] += np.float32(bias)
    return FeatureCorrections(corrections.llms, summed_weights, summed_bias)
