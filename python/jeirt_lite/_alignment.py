"""Directional alignment with the training questions, and the in-distribution flag.

A question's alignment is the mean cosine between its direction and its `TOP_K` nearest reference directions (unit
directions of a seeded sample of training questions, stored in the router). Directions are taken around the mean
training question vector (the centre, stored too): learned question vectors share a large common component, and
without centring every cosine would be close to 1. Questions whose alignment falls below a
threshold set on validation questions (a low percentile of their alignment) are flagged as out of distribution:
the router has seen little like them, and its predictions there deserve less trust.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from ._errors import JeirtError
from ._limits import check_finite_rows

TOP_K = 10
DEFAULT_PERCENTILE = 5.0
DEFAULT_REFERENCE_SIZE = 2048


def unit_rows(vectors: np.ndarray, dtype: type = np.float64) -> np.ndarray:
    """Rows scaled to length 1, computed in `dtype`; a zero row stays zero rather than becoming NaN."""
    array: np.ndarray = np.asarray(vectors, dtype=dtype)
    if array.ndim != 2:
        raise JeirtError(f"expected a 2-D array of vectors, got shape {array.shape}")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    return array / np.where(norms > 0, norms, 1.0)


@dataclass(frozen=True)
class AlignmentResult:
    scores: np.ndarray  # (N,) float32, cosine-like, in [-1, 1]
    in_distribution: np.ndarray  # (N,) bool: score >= threshold
    threshold: float


def alignment_scores(
    vectors: np.ndarray, reference: np.ndarray, top_k: int = TOP_K, center: Optional[np.ndarray] = None
) -> np.ndarray:
    """Mean of the `top_k` largest cosines between each (centred) question vector and the reference directions."""
    x = np.asarray(vectors, dtype=np.float64)
    if x.ndim == 2:
        check_finite_rows(x, "question vectors")  # a NaN score would read as out of distribution, or set a threshold
    if center is not None:
        x = x - np.asarray(center, dtype=np.float64).reshape(1, -1)
    x = unit_rows(x)
    ref = unit_rows(np.asarray(reference, dtype=np.float64))
    if x.shape[1] != ref.shape[1]:
        raise JeirtError(f"question vectors have dimension {x.shape[1]}, reference directions {ref.shape[1]}")
    if ref.shape[0] == 0:
        raise JeirtError("no reference directions")
    k = max(1, min(int(top_k), ref.shape[0]))
    out = np.empty(x.shape[0], dtype=np.float32)
    for start in range(0, x.shape[0], 4096):  # bounded memory: (chunk, R) cosines at a time
        cosines = x[start : start + 4096] @ ref.T
        top = -np.partition(-cosines, k - 1, axis=1)[:, :k]
        out[start : start + 4096] = top.mean(axis=1)
    return out


def reference_directions(
    train_vectors: np.ndarray, size: int = DEFAULT_REFERENCE_SIZE, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """(reference, center): unit directions around the training mean of a seeded sample of at most `size`
    training question vectors, float32 (R, d), and that mean, float32 (d,)."""
    x = np.asarray(train_vectors, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] == 0:
        raise JeirtError(f"need a non-empty (N, d) array of training question vectors, got shape {x.shape}")
    check_finite_rows(x, "training question vectors")  # one would make the centre, and every direction, NaN
    center = x.mean(axis=0)
    rows = np.arange(x.shape[0])
    if x.shape[0] > size:
        rows = np.sort(np.random.default_rng(seed).choice(x.shape[0], size, replace=False))
    return unit_rows(x[rows] - center).astype(np.float32), center.astype(np.float32)


def validation_threshold(
    val_vectors: np.ndarray,
    reference: np.ndarray,
    percentile: float = DEFAULT_PERCENTILE,
    top_k: int = TOP_K,
    center: Optional[np.ndarray] = None,
) -> float:
    """The `percentile`-th percentile of validation questions' alignment: about that share of in-distribution
    questions get flagged."""
    if not 0.0 <= percentile <= 100.0:
        raise JeirtError(f"percentile must be within [0, 100], got {percentile}")
    return float(np.percentile(alignment_scores(val_vectors, reference, top_k, center), percentile))


def align(
    vectors: np.ndarray,
    reference: np.ndarray,
    threshold: float,
    top_k: int = TOP_K,
    center: Optional[np.ndarray] = None,
) -> AlignmentResult:
    """Scores and the in-distribution flag (score >= threshold) for question vectors."""
    scores = alignment_scores(vectors, reference, top_k, center)
    return AlignmentResult(scores, scores >= np.float32(threshold), float(threshold))
