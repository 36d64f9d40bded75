"""`Router.add_llm`: the new LLM's vector, its feature correction and its fit report, in a new router; the check of
the features given with its answers and the manifest's record of its fit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
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


@dataclass(frozen=True)
class AnsweredQuestions:
    """The questions an LLM answered, as add_llm and update_llm read them."""

    vectors: np.ndarray  # checked question vectors
    features: Optional[np.ndarray]  # the encoder's features, None where not given
    learned: Optional[np.ndarray]  # which the router learned from, None when unknown
    alignment: Optional[AlignmentResult]  # their alignment with the router's, None when it carries no reference
    groups: Optional[np.ndarray]  # a key per answer naming its question (None: equal vectors are one question)

    def details(self) -> dict[str, Any]:
        """The keyword arguments of with_new_llm and with_updated_llm besides the vectors."""
        return {"features": self.features, "learned": self.learned, "alignment": self.alignment,
                "groups": self.groups}


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
        features = router_features(router, features, questions.shape[0])
    fit = fit_onboarding(
        questions, features, labels, prior_mean=router.llm_vectors.mean(axis=0), l2=l2, learned=learned, groups=groups,
        **alignment_gate(router, alignment),
    )
    record = onboarding_record(name, l2, fit, alignment)
    changes: dict[str, Any] = {"onboarded": (*(router.manifest.onboarded or ()), freeze(record))}
    if cost is not None:
        changes["costs"] = {**router.costs, **check_costs({name: cost}, router.llms + (name,), "cost")}
    calibration = router.calibration
    if calibration is None and fit.router_scale != 1.0:
        # Identity for the existing LLMs: only the new one's logit is scaled (see OnboardingFit).
        calibration = Calibration.identity(len(router.llms))
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


def alignment_gate(router: RouterTables, alignment: Optional[AlignmentResult]) -> dict[str, Any]:
    """The answered questions' in-distribution flags and the router's own flag rate (in %), as fit_onboarding reads
    them; empty without an alignment."""
    gate: dict[str, Any] = {}
    if alignment is not None:
        gate["in_distribution"] = alignment.in_distribution
        spec = router.manifest.alignment
        percentile = spec.details.get("percentile") if spec is not None else None
        if isinstance(percentile, (int, float)) and 0 <= percentile < 50:  # the router's own flag rate, in %
            gate["percentile"] = float(percentile)
    return gate


def router_features(router: RouterTables, features: object, rows: int) -> np.ndarray:
    """`features` checked against the router's encoder (check_features)."""
    spec = router.manifest["encoder"]
    return check_features(features, rows, int(spec.get("feature_dim") or 0) if spec.get("feature_output") else 0)


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
        record["alignment"] = alignment_record(alignment)
    return record


def alignment_record(alignment: AlignmentResult) -> dict[str, Any]:
    """How the answered questions align with the router's, as the manifest's record of a fit keeps it."""
    share = float(np.mean(alignment.in_distribution))
    return {
        "mean_score": float(np.mean(alignment.scores)),
        "in_distribution_share": share,
        # The threshold flags about 5% of the router's own validation questions, so a majority flagged
        # means these questions are unlike the router's training questions.
        "mostly_out_of_distribution": share < 0.5,
    }
