"""`Router.add_llm`: the new LLM's vector, its feature correction and its fit report, in a new router; the check of
the features given with its answers and the manifest's record of its fit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional, TypeVar, Union

import numpy as np

from ._alignment import AlignmentResult
from ._corrections import OnboardingFit, fit_onboarding
from ._errors import JeirtError
from ._feature_offsets import new_corrections
from ._limits import check_finite_rows
from ._llm_params import Calibration, check_costs
from ._manifest import check_llm_name, freeze
from ._onboarding import check_labels
from ._router_tables import RouterTables

RouterT = TypeVar("RouterT", bound=RouterTables)


def with_new_llm(
    router: RouterT,
    name: str,
    vectors: np.ndarray,
    correct: Sequence[Union[int, bool]],
    *,
    features: Optional[np.ndarray],
    l2: float,
    cost: Optional[float],
    learned: Optional[np.ndarray] = None,
    alignment: Optional[AlignmentResult] = None,
    groups: Optional[np.ndarray] = None,
) -> RouterT:
    """A copy of `router` holding the LLM `name` fitted from its answers (see `Router.add_llm`); `learned`: which
    answered questions the router learned from (None: unknown); `alignment`: the questions' alignment with the
    router's training questions, when it carries a reference (their flags gate the correction); `groups`: a key
    per answer naming its question (None: equal question vectors are one question)."""
    check_llm_name(name, "the new LLM's name")  # as a saved router's names are checked, so that it can be saved
    if name != name.strip():  # training strips names: ' x ' would be a second LLM named like x
        raise JeirtError(f"the new LLM's name {name!r} has spaces at its ends; give it as {name.strip()!r}")
    if name in router.llms:
        raise JeirtError(f"LLM {name!r} is already in this router")
    questions = router._check_vectors(vectors)
    labels = check_labels(correct, questions.shape[0])
    if features is not None:
        spec = router.manifest["encoder"]
        feature_dim = int(spec.get("feature_dim") or 0) if spec.get("feature_output") else 0
        features = check_features(features, questions.shape[0], feature_dim)
    gate: dict[str, Any] = {}
    if alignment is not None:
        gate["in_distribution"] = alignment.in_distribution
        spec = router.manifest.alignment
        percentile = spec.details.get("percentile") if spec is not None else None
        if isinstance(percentile, (int, float)) and 0 <= percentile < 50:  # the router's own flag rate, in %
            gate["percentile"] = float(percentile)
    fit = fit_onboarding(
        questions, features, labels, prior_mean=router.llm_vectors.mean(axis=0), l2=l2, learned=learned, groups=groups,
        **gate,
    )
    record = onboarding_record(name, l2, fit, alignment)
    changes: dict[str, Any] = {"onboarded": (*(router.manifest.onboarded or ()), freeze(record))}
    if cost is not None:
        changes["costs"] = {**router.costs, **check_costs({name: cost}, router.llms + (name,), "cost")}
    calibration = router.calibration
    if calibration is None and fit.router_scale != 1.0:
        # Identity for the existing LLMs: only the new one's logit is scaled (see OnboardingFit).
        count = len(router.llms)
        calibration = Calibration("per_llm", np.ones(count, np.float32), np.zeros(count, np.float32))
    if calibration is not None:
        changes["calibration"] = calibration.extended(scale=fit.router_scale)
    corrections = router.corrections
    if fit.weights is not None:
        corrections = (
            new_corrections(name, fit.weights, fit.bias)
            if corrections is None
            else corrections.with_llm(name, fit.weights, fit.bias)
        )
    table = np.vstack([router.llm_vectors, fit.vector[None, :]])
    return router._with_llms(router.llms + (name,), table, corrections=corrections, **changes)


def check_features(features: object, rows: int, feature_dim: int) -> np.ndarray:
    """Encoder features as float32 (rows, feature_dim); the router's encoder must expose features of that size."""
    if feature_dim < 1:
        raise JeirtError("this router's encoder exposes no features (encoder.feature_output), so none can be given")
    array = np.asarray(features)
    if array.shape != (rows, feature_dim) or not np.issubdtype(array.dtype, np.number):
        raise JeirtError(f"features must be a numeric ({rows}, {feature_dim}) array, got shape {array.shape}")
    check_finite_rows(array, "features")
    return array.astype(np.float32)


def onboarding_record(name: str, l2: float, fit: OnboardingFit, alignment: Optional[Any]) -> dict[str, Any]:
    """The manifest's record of one onboarded LLM: its fit report and how its questions align with the router's."""
    record: dict[str, Any] = {"name": name, "l2": float(l2), **fit.report}
    if alignment is not None:
        share = float(np.mean(alignment.in_distribution))
        record["alignment"] = {
            "mean_score": float(np.mean(alignment.scores)),
            "in_distribution_share": share,
            # The threshold flags about 5% of the router's own validation questions, so a majority flagged
            # means these questions are unlike the router's training questions.
            "mostly_out_of_distribution": share < 0.5,
        }
    return record
