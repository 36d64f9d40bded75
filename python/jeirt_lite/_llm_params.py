"""Per-LLM fields of the router manifest: probability calibration, costs and onboarding records.

    "calibration": {"kind": "per_llm" | "global", "scale": [K floats > 0], "bias": [K floats]}
        P(correct) = sigmoid(scale[j] * logit + bias[j]); fitted on validation data (python/jeirt_lite_training/calibration.py)
        and applied inside the Rust kernels. "global": one (scale, bias) pair shared by every LLM; "per_llm": a pair
        per LLM. A change that leaves the LLMs with different pairs (add_llm's new LLM, update_llm's refit of one)
        makes a "global" calibration "per_llm".
    "costs": {"llm name": cost >= 0, ...}
        what one call of each LLM costs, in any unit the user picks (the shipped router uses billions of
        parameters as a proxy); LLMs may be left out (their cost is unknown; routing that needs it says so).
    "onboarded": [{"name": "llm name", ...}, ...]
        the fit report of each add_llm and update_llm, oldest first; every record names an LLM of the router.

All are checked when a router loads, and errors name the field and the entry at fault.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ._errors import JeirtError
from ._type_names import TypeOf, json_type, python_type

PER_LLM, GLOBAL = "per_llm", "global"
CALIBRATION_KINDS = (PER_LLM, GLOBAL)


@dataclass(frozen=True)
class Calibration:
    """Per-LLM temperature and bias on the logit: P = sigmoid(scale * logit + bias)."""

    kind: str
    scale: np.ndarray  # (K,) float32, > 0
    bias: np.ndarray  # (K,) float32

    @classmethod
    def identity(cls, count: int) -> Calibration:
        """Scale 1 and bias 0 for `count` LLMs: where a router without calibration needs one changed for a single LLM
        (add_llm's scaled logit, update_llm's refit), the others keep their raw probabilities."""
        return cls(PER_LLM, np.ones(count, np.float32), np.zeros(count, np.float32))

    def to_manifest(self) -> dict[str, Any]:
        return {"kind": self.kind, "scale": self.scale.tolist(), "bias": self.bias.tolist()}

    @property
    def shared(self) -> bool:
        """Whether every LLM has the same (scale, bias) pair, as kind "global" says."""
        return bool(np.all(self.scale == self.scale[0]) and np.all(self.bias == self.bias[0]))

    def select(self, rows: Sequence[int]) -> Calibration:
        return Calibration(self.kind, self.scale[list(rows)], self.bias[list(rows)])

    def with_pairs(self, scale: np.ndarray, bias: np.ndarray) -> Calibration:
        """This calibration with other per-LLM pairs: "global" while they are still one pair, else "per_llm"."""
        changed = Calibration(self.kind, scale, bias)
        return changed if changed.kind != GLOBAL or changed.shared else Calibration(PER_LLM, scale, bias)

    def extended(self, count: int = 1, scale: float = 1.0) -> Calibration:
        """With `count` more LLMs at scale `scale` and bias 0: an onboarded LLM's vector is fitted by maximum a
        posteriori directly, not by the training run the calibration corrects, so it gets the identity unless its
        fit scales its logit (`OnboardingFit.router_scale`)."""
        if not (0 < scale < float("inf")):
            raise JeirtError(f"calibration scale must be a positive number, got {scale!r}")
        return self.with_pairs(
            np.concatenate([self.scale, np.full(count, scale, np.float32)]),
            np.concatenate([self.bias, np.zeros(count, np.float32)]),
        )


def _floats(value: Any, field: str, k: int, where: str) -> np.ndarray:
    if not isinstance(value, list) or len(value) != k:
        size = len(value) if isinstance(value, list) else json_type(value)
        raise JeirtError(f"{where}: {field} must be a list of {k} numbers (one per LLM), got {size}")
    out = np.empty(k, dtype=np.float64)
    for i, x in enumerate(value):
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
            raise JeirtError(f"{where}: {field}[{i}] must be a finite number, got {x!r}")
        out[i] = x
    return out


def _as_list(value: Any) -> Any:
    return value.tolist() if isinstance(value, np.ndarray) else value


def _checked_calibration(scale: Any, bias: Any, kind: Any, k: int, where: str) -> Calibration:
    if kind not in CALIBRATION_KINDS:
        raise JeirtError(f"{where}: kind must be one of {', '.join(CALIBRATION_KINDS)}, got {kind!r}")
    s = _floats(_as_list(scale), "calibration.scale", k, where)
    b = _floats(_as_list(bias), "calibration.bias", k, where)
    bad = np.flatnonzero(s <= 0)
    if bad.size:
        raise JeirtError(f"{where}: calibration.scale[{int(bad[0])}] must be > 0, got {float(s[bad[0]])!r}")
    return Calibration(kind, s.astype(np.float32), b.astype(np.float32))


def make_calibration(scale: Any, bias: Any, kind: str, k: int, where: str = "calibration") -> Calibration:
    """A validated calibration for K LLMs (lists or arrays of K finite numbers, scale > 0); kind "global" needs one
    pair shared by all."""
    calibration = _checked_calibration(scale, bias, kind, k, where)
    if kind == GLOBAL and not calibration.shared:
        s, b = calibration.scale, calibration.bias
        j = int(np.flatnonzero((s != s[0]) | (b != b[0]))[0])
        raise JeirtError(
            f"{where}: kind 'global' is one scale and bias for every LLM, but LLM {j} (in table order) has "
            f"({float(s[j]):g}, {float(b[j]):g}) and LLM 0 ({float(s[0]):g}, {float(b[0]):g}); give kind 'per_llm'"
        )
    return calibration


def parse_calibration(manifest: Mapping[str, Any], k: int, where: str) -> Optional[Calibration]:
    value = manifest.get("calibration")
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise JeirtError(f"{where}: calibration must be an object with kind, scale and bias")
    missing = [f for f in ("kind", "scale", "bias") if f not in value]
    if missing:
        raise JeirtError(f"{where}: calibration lacks {', '.join(missing)}")
    calibration = _checked_calibration(value["scale"], value["bias"], value["kind"], k, where)
    # Read as what the pairs are: add_llm and update_llm of earlier versions kept "global" over differing pairs.
    return calibration.with_pairs(calibration.scale, calibration.bias)


def parse_onboarded(manifest: Mapping[str, Any], llm_names: Sequence[str], where: str) -> Optional[list[Any]]:
    """The onboarding records, each an object naming an LLM of the router: a record of an LLM the router does
    not hold belongs to another router (remove_llm and select_llms drop a removed LLM's records)."""
    value = manifest.get("onboarded")
    if value is None:
        return None
    if not isinstance(value, list):
        raise JeirtError(f"{where}: onboarded must be a list of records")
    known = set(llm_names)
    for i, record in enumerate(value):
        name = record.get("name") if isinstance(record, Mapping) else None
        if not isinstance(name, str):
            raise JeirtError(f"{where}: onboarded[{i}] must be a record with the name of its LLM")
        if name not in known:
            raise JeirtError(f"{where}: onboarded[{i}] records LLM {name!r}, which this router does not hold")
    return value


def check_costs(value: Any, llm_names: Sequence[str], where: str, type_of: TypeOf = python_type) -> dict[str, float]:
    """A validated {name: cost} mapping: known LLM names, finite costs >= 0; `type_of` names a value that is not a
    mapping (JSON's words for router.json's costs, Python's for a caller's)."""
    if not isinstance(value, Mapping):
        raise JeirtError(f"{where}: costs must map LLM names to numbers, got {type_of(value)}")
    known = set(llm_names)
    out: dict[str, float] = {}
    for name, cost in value.items():
        if name not in known:
            raise JeirtError(f"{where}: costs names unknown LLM {name!r}")
        if isinstance(cost, bool) or not isinstance(cost, (int, float, np.floating, np.integer)):
            raise JeirtError(f"{where}: cost of {name!r} must be a number, got {cost!r}")
        if not math.isfinite(float(cost)) or cost < 0:
            raise JeirtError(f"{where}: cost of {name!r} must be finite and >= 0, got {cost!r}")
        out[str(name)] = float(cost)
    return out


def parse_costs(
    manifest: Mapping[str, Any], llm_names: Sequence[str], where: str
) -> Optional[dict[str, float]]:
    value = manifest.get("costs")
    return None if value is None else check_costs(value, llm_names, where, json_type)


def cost_vector(costs: Mapping[str, float], llm_names: Sequence[str], what: str) -> np.ndarray:
    """Costs in table order; every LLM in `llm_names` needs one."""
    missing = [name for name in llm_names if name not in costs]
    if missing:
        raise JeirtError(f"{what} needs a cost for every LLM; missing: {', '.join(missing[:5])}")
    return np.array([costs[name] for name in llm_names], dtype=np.float64)
