"""Routing rules on precomputed question vectors: most likely, cost-aware, cheapest above a threshold.

* plain: the k LLMs with the highest P(correct) (the kernels' top-k);
* cost-aware: the k LLMs with the highest P(correct) − cost_weight · cost (the penalty is subtracted inside
  the kernels' fused top-k, no N × K matrix);
* threshold: the cheapest LLM whose P(correct) ≥ min_probability (ties: higher P, then lower table index); when
  no LLM clears the threshold, the most likely LLM, flagged in `RouteResult.fallback`. With k > 1 the next
  choices are the next cheapest that clear it, then the rest by P. Vectorised NumPy over chunks of rows of the
  (calibrated) probability matrix: memory stays at chunk × K.

All of them can be restricted to a subset of the LLMs; indices are always rows of the full table.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from . import kernels
from ._errors import JeirtError
from ._llm_params import Calibration

THRESHOLD_CHUNK_ROWS = 8192


def _check_probability(value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 1.0:
        raise JeirtError(f"min_probability must be a number in [0, 1], got {value!r}")
    return float(value)


def route_rows(
    questions: np.ndarray,
    llm_vectors: np.ndarray,
    k: int,
    *,
    calibration: Optional[Calibration],
    costs: Optional[np.ndarray],
    cost_weight: float,
    min_probability: Optional[float],
    threads: int,
    offsets: Optional[np.ndarray] = None,
) -> tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]:
    """(indices (N, k) uint32, probabilities (N, k) float32, fallback (N,) bool or None) for one LLM table;
    `offsets` (N, K) are per-(question, LLM) logit offsets (onboarded LLMs' feature corrections)."""
    scale = None if calibration is None else calibration.scale
    bias = None if calibration is None else calibration.bias
    if (
        isinstance(cost_weight, bool)
        or not isinstance(cost_weight, (int, float))
        or not np.isfinite(cost_weight)
    ):
        raise JeirtError(f"cost_weight must be a finite number, got {cost_weight!r}")
    if cost_weight < 0:
        raise JeirtError(f"cost_weight must be >= 0 (a trade-off weight), got {cost_weight!r}")
    if min_probability is None:
        penalty = None if cost_weight == 0 or costs is None else (cost_weight * costs).astype(np.float32)
        indices, probabilities = kernels.top_k(
            questions, llm_vectors, k, threads=threads, scale=scale, bias=bias, penalty=penalty, offsets=offsets
        )
        return indices, probabilities, None

    threshold = _check_probability(min_probability)
    if cost_weight != 0:
        raise JeirtError(
            "use either cost_weight (trade-off) or min_probability (cheapest above it), not both"
        )
    if costs is None:
        raise JeirtError("min_probability routing needs costs (in the router or passed in)")
    if not 1 <= k <= llm_vectors.shape[0]:
        raise JeirtError(f"k must be in 1..=K (K = {llm_vectors.shape[0]}), got {k}")
    n = questions.shape[0]
    indices = np.empty((n, k), dtype=np.uint32)
    probabilities = np.empty((n, k), dtype=np.float32)
    fallback = np.empty(n, dtype=bool)
    for start in range(0, n, THRESHOLD_CHUNK_ROWS):
        rows = slice(start, min(n, start + THRESHOLD_CHUNK_ROWS))
        p = kernels.probabilities(
            questions[rows],
            llm_vectors,
            threads=threads,
            scale=scale,
            bias=bias,
            offsets=None if offsets is None else offsets[rows],
        )
        clear = p >= threshold
        # lexsort: last key is primary. Clearing LLMs first; among them cheapest, among the rest most likely;
        # then higher P; then (stable) lower index.
        secondary = np.where(clear, costs[None, :], -p.astype(np.float64))
        order = np.lexsort((-p, secondary, ~clear), axis=-1)[:, :k]
        indices[rows] = order
        probabilities[rows] = np.take_along_axis(p, order, axis=1)
        fallback[rows] = ~clear.any(axis=1)
    return indices, probabilities, fallback
