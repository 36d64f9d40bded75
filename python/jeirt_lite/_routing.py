"""Routing rules on precomputed question vectors: most likely, cost-aware, cheapest above a threshold.

* plain: the k LLMs with the highest P(correct) (the kernels' top-k);
* cost-aware: the k LLMs with the highest P(correct) − cost_weight · cost, the key computed in float64 (in
  float32 a large λ·cost swallows P: at λ = 1e8 every LLM of one cost would tie); the probabilities reported
  are P itself, whatever λ;
* threshold: the cheapest LLM whose P(correct) ≥ min_probability (ties: higher P, then lower table index); when
  no LLM clears the threshold, the most likely LLM, flagged in `RouteResult.fallback`. With k > 1 the next
  choices are the next cheapest that clear it, then the rest by P. P is compared with the threshold in float64,
  so a P equal to the threshold clears it.

Both adjusted rules work in NumPy over chunks of rows of the (calibrated) probability matrix: memory stays at
about CHUNK_CELLS cells, whatever K.

All of them can be restricted to a subset of the LLMs; indices are always rows of the full table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Optional

import numpy as np

from . import kernels
from ._errors import JeirtError, option_error
from ._limits import check_probability, finite_float
from ._llm_params import Calibration, cost_vector
from ._text import counted

CHUNK_CELLS = 1 << 19


def _chunk_rows(n_llms: int) -> int:
    return max(1, CHUNK_CELLS // max(1, n_llms))


def routing_rows(
    names: Sequence[str],
    k: object,
    cost_weight: float,
    min_probability: Optional[float],
    llms: Optional[Sequence[str]],
    cost_table: Mapping[str, float],
) -> list[int]:
    """The rows of a router's table `names` that a route chooses among, its options checked before any question
    is encoded: by `Router.route`, and by `route`, `score` and the Ray engine before they read a question."""
    weight = finite_float(cost_weight, "cost_weight", low=0.0)
    if min_probability is not None:
        check_probability(min_probability, "min_probability")
        if weight != 0:
            raise option_error("use either cost_weight (trade-off) or min_probability (cheapest above it), "
                               "not both")
    among = "the router's"
    if llms is not None:
        among = "the given"
    elif weight != 0 or min_probability is not None:
        # An LLM without a known cost cannot be traded off against the others: it is left out, never given
        # an invented cost. Naming it in `llms` explicitly is an error instead (cost_vector says which).
        llms = [name for name in names if name in cost_table]
        if not llms:
            raise JeirtError(
                "cost-aware routing needs per-LLM costs; this router stores none (train --costs or "
                "router.with_costs({name: cost}).save(path) store them; --costs FILE or costs= give them for a run; "
                "docs/guide/routing-costs.md)"
            )
        among = "the priced"
    rows = list(range(len(names))) if llms is None else subset_rows(names, llms)
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or not 1 <= k <= len(rows):
        raise option_error(f"k must be between 1 and the {counted(len(rows), 'LLM')} routed among ({among} LLMs), got {k!r}")
    if weight != 0 or min_probability is not None:
        try:  # an LLM named in llms without a cost
            costs = cost_vector(cost_table, [names[r] for r in rows], "cost-aware routing")
        except JeirtError as unpriced:
            raise option_error(str(unpriced)) from None
        # Refused here, before any question is encoded (score's first rows, Ray's workers): route_rows does not
        # check it again.
        with np.errstate(over="ignore"):
            if not np.isfinite(weight * costs).all():
                raise option_error(f"cost_weight {cost_weight!r} times the costs overflows; use a smaller weight "
                                   "or unit")
    return rows


def subset_rows(names: Sequence[str], wanted: Sequence[str]) -> list[int]:
    """The rows in `names` of the LLMs `wanted` (a call's `llms` option: what is wrong with it is an option
    error)."""
    if isinstance(wanted, str):
        raise option_error("llms must be a list of LLM names, not one string")
    rows = []
    for name in wanted:
        try:
            rows.append(list(names).index(name))
        except ValueError:
            raise option_error(f"unknown LLM {name!r}; this router holds {', '.join(names)}") from None
    if not rows:
        raise option_error("llms must name at least one LLM")
    if len(set(rows)) != len(rows):
        raise option_error("llms names an LLM twice")
    return rows


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
    `offsets` (N, K) are per-(question, LLM) logit offsets (onboarded LLMs' feature corrections).

    `cost_weight`, `min_probability` and the `costs` they use are those `routing_rows` checked (Router.route, the
    one caller, runs it first, before a question is encoded): a weight and a threshold in their bounds, not both,
    a weight that does not overflow the costs. Only k is checked again here, against this table, for the adjusted
    rules (the plain one leaves it to kernels.top_k), since the arrays below are sized by it."""
    scale = None if calibration is None else calibration.scale
    bias = None if calibration is None else calibration.bias
    weight = float(cost_weight)
    threshold = None if min_probability is None else float(min_probability)
    if threshold is None and (weight == 0 or costs is None):
        indices, probabilities = kernels.top_k(
            questions, llm_vectors, k, threads=threads, scale=scale, bias=bias, offsets=offsets
        )
        return indices, probabilities, None
    if costs is None:
        raise JeirtError("min_probability routing needs costs (in the router or passed in)")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= llm_vectors.shape[0]:
        raise JeirtError(f"k must be in 1..=K (K = {llm_vectors.shape[0]}), got {k!r}")
    cost64 = np.asarray(costs, dtype=np.float64)
    penalty = weight * cost64
    n = questions.shape[0]
    indices = np.empty((n, k), dtype=np.uint32)
    probabilities = np.empty((n, k), dtype=np.float32)
    fallback = None if threshold is None else np.empty(n, dtype=bool)
    step = _chunk_rows(llm_vectors.shape[0])
    for start in range(0, n, step):
        rows = slice(start, min(n, start + step))
        p = kernels.probabilities(
            questions[rows],
            llm_vectors,
            threads=threads,
            scale=scale,
            bias=bias,
            offsets=None if offsets is None else offsets[rows],
        )
        p64 = p.astype(np.float64)
        if threshold is None:
            # lexsort: last key is primary. Best key first; keys equal in float64 (at a huge λ the penalty's
            # rounding swallows P: always for LLMs of equal cost) by higher P; then (stable) lower index.
            order = np.lexsort((-p64, penalty[None, :] - p64), axis=-1)[:, :k]
        else:
            clear = p64 >= threshold
            # lexsort: last key is primary. Clearing LLMs first; among them cheapest, among the rest most
            # likely; then higher P; then (stable) lower index.
            secondary = np.where(clear, cost64[None, :], -p64)
            order = np.lexsort((-p64, secondary, ~clear), axis=-1)[:, :k]
            assert fallback is not None
            fallback[rows] = ~clear.any(axis=1)
        indices[rows] = order
        probabilities[rows] = np.take_along_axis(p, order, axis=1)
    return indices, probabilities, fallback
