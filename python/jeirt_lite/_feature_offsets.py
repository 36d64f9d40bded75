"""Onboarded LLMs' feature corrections as stored in a router folder, and the logit offsets they give.

    corrections.safetensors   "weights" (C, p) float32 and "bias" (C,) float32, one row per corrected LLM
    router.json "corrections": {"llms": [C names, in row order], "feature_dim": p}

For question features f (the encoder's pre-adapter embedding, the graph's `encoder.feature_output`) the corrected
LLM j gets `offset = f·weights[j] + bias[j]` added to its logit; every other LLM gets 0. See _corrections.py and
_correction_grid.py for how they are fitted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Optional

import numpy as np

from ._errors import JeirtError
from ._limits import check_finite_rows
from ._manifest import block_llms, block_tensors, check_feature_width

CORRECTIONS_FILE = "corrections.safetensors"
WEIGHTS_TENSOR = "weights"
BIAS_TENSOR = "bias"


def checked_features(features: Optional[np.ndarray], rows: int, width: int, reader: str) -> np.ndarray:
    """`features` as an (rows, width) numeric array; `reader`: what reads them, for the error when none came."""
    if features is None:
        raise JeirtError(f"{reader}: questions encoded elsewhere need the encoder's features too: "
                         "EncodedQuestions(vectors, features), as router.encode(texts) gives them")
    f = np.asarray(features)
    if f.ndim != 2 or f.shape != (rows, width) or not np.issubdtype(f.dtype, np.number):
        raise JeirtError(f"features must have shape ({rows}, {width}), got {f.shape}")
    return f


@dataclass(frozen=True)
class FeatureCorrections:
    """Per-LLM linear logit offsets on the encoder's features."""

    llms: tuple[str, ...]
    weights: np.ndarray  # (C, p) float32
    bias: np.ndarray  # (C,) float32

    @property
    def feature_dim(self) -> int:
        return int(self.weights.shape[1])

    def manifest_block(self) -> dict[str, Any]:
        return {"llms": list(self.llms), "feature_dim": self.feature_dim}

    def tensors(self) -> dict[str, np.ndarray]:
        return {WEIGHTS_TENSOR: self.weights, BIAS_TENSOR: self.bias}

    def offsets(self, features: Optional[np.ndarray], llm_names: Sequence[str], rows: int) -> np.ndarray:
        """(N, K) float32 logit offsets for the LLMs `llm_names` (zero columns for uncorrected ones)."""
        f = checked_features(features, rows, self.feature_dim,
                             f"this router corrects {', '.join(self.llms)} with the encoder's features")
        out = np.zeros((rows, len(llm_names)), dtype=np.float32)
        where = {name: j for j, name in enumerate(llm_names)}
        for row, name in enumerate(self.llms):
            if name in where:
                out[:, where[name]] = f.astype(np.float32) @ self.weights[row] + self.bias[row]
        check_finite_rows(out, "features")
        return out

    def with_llm(self, name: str, weights: np.ndarray, bias: float) -> FeatureCorrections:
        return FeatureCorrections(
            self.llms + (name,),
            np.vstack([self.weights, np.asarray(weights, np.float32)[None, :]]),
            np.append(self.bias, np.float32(bias)).astype(np.float32),
        )

    def renamed(self, names: Mapping[str, str]) -> FeatureCorrections:
        """The same corrections, each under its LLM's new name (`names`: old -> new; others unchanged)."""
        return replace(self, llms=tuple(str(names.get(name, name)) for name in self.llms))

    def restricted(self, names: Sequence[str]) -> Optional[FeatureCorrections]:
        """Only the corrections of LLMs in `names`; None when none is left."""
        rows = [i for i, name in enumerate(self.llms) if name in set(names)]
        if not rows:
            return None
        return FeatureCorrections(tuple(self.llms[i] for i in rows), self.weights[rows], self.bias[rows])


def new_corrections(name: str, weights: np.ndarray, bias: float) -> FeatureCorrections:
    return FeatureCorrections(
        (name,), np.asarray(weights, np.float32)[None, :], np.array([bias], dtype=np.float32)
    )


def parse_corrections(
    block: Any, tensors: Mapping[str, np.ndarray], llm_names: Sequence[str], feature_dim: Optional[int], where: str
) -> FeatureCorrections:
    """Validate the manifest block and the tensors against the router's LLMs and its encoder's feature size."""
    names = block_llms(block, llm_names, "corrections", where)
    weights, bias = block_tensors(tensors, (WEIGHTS_TENSOR, BIAS_TENSOR), where)
    if weights.ndim != 2 or weights.shape[0] != len(names) or bias.shape != (len(names),):
        raise JeirtError(
            f"{where}: weights {weights.shape} and bias {bias.shape} must have one row per corrected LLM "
            f"({len(names)})"
        )
    check_feature_width(weights.shape[1], feature_dim, "corrections", where)
    if weights.dtype != np.float32 or bias.dtype != np.float32:
        raise JeirtError(f"{where}: weights and bias must be float32")
    if not (np.isfinite(weights).all() and np.isfinite(bias).all()):
        raise JeirtError(f"{where}: weights and bias must be finite")
    weights.setflags(write=False)
    bias.setflags(write=False)
    return FeatureCorrections(tuple(names), weights, bias)
