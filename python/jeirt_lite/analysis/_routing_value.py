"""What routing buys on questions with known answers: the router against fixed choices, and its quality–cost curve.

Every rule picks, per question, one LLM among those with an observed answer to it and is scored by that answer:

* router: the highest P(correct) (the router's plain `route`);
* best single LLM: the one LLM most often right on these same questions (chosen in hindsight, so a bound the
  router has to beat without hindsight), among those that answered nearly as many of them as any LLM did: on
  block-missing data an LLM that answered only the easiest benchmark would otherwise be "best" by its share alone;
  a question it has no answer to goes to the next best LLM that answered it;
* oracle: right when any LLM was right;
* max P − λ·cost over a grid of λ, and the cheapest LLM with P ≥ t over a grid of t: among the LLMs with a known
  cost only (an unknown cost is never filled in), as `route(cost_weight=λ)` and `route(min_probability=t)` do.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

# λ from 0 up to one unit of P(correct) per largest cost, in round 1-2-5 steps (values a user types).
SMALLEST_SHARE = 0.02
# An LLM is a candidate for "best single LLM" when it answered at least this share of what the widest-answering LLM
# answered: a few missing cells (MMLU-Pro's best LLM misses 2%) keep it in, a benchmark never asked does not.
COVERAGE_SHARE = 0.95
THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.9)


@dataclass
class RoutingValue:
    n_questions: int
    router: float
    best_single: float
    best_single_name: str
    best_single_answered: int  # of the n_questions, how many best_single_name answered
    oracle: float
    mean_llm: float
    single: dict[str, tuple[float, float]] = field(default_factory=dict)  # priced LLM: (accuracy, cost)
    curve: list[tuple[str, float, float, float]] = field(default_factory=list)  # (rule, setting, acc, mean cost)
    n_priced: int = 0
    # Share of the questions where the rule, choosing among all its LLMs as `route` does rather than among those that
    # answered, picks an LLM with no answer to score: the rule's row above cannot tell how that LLM would have done
    # (block-missing data: an LLM that never answered a benchmark can still be routed its questions).
    router_unanswered: float = 0.0
    curve_unanswered: list[float] = field(default_factory=list)  # per curve row, in its order
    best_priced: str = ""  # the best single LLM among those with a cost, chosen as best_single_name is


def cost_weights(largest_cost: float) -> list[float]:
    """0, then the 1-2-5 values of λ from SMALLEST_SHARE to 1 unit of P(correct) per `largest_cost` (costs in any
    unit: dollars per token as well as billions of parameters)."""
    scale = largest_cost or 1.0  # no cost at all: as if the largest were 1
    low, high = SMALLEST_SHARE / scale, 1.0 / scale
    decades = range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)
    steps = sorted(float(f"{m}e{e}") for e in decades for m in (1, 2, 5))
    return [0.0] + [w for w in steps if low <= w <= high]


def _pick(scores: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """Per row, the allowed column with the highest score (ties: lower index)."""
    picks: np.ndarray = np.argmax(np.where(allowed, scores, -np.inf), axis=1)
    return picks


def _accuracy(choice: np.ndarray, answers: np.ndarray) -> float:
    return float(np.mean(answers[np.arange(len(answers)), choice]))


def _best_single(y: np.ndarray, observed: np.ndarray) -> tuple[int, np.ndarray]:
    """The best single LLM's column among those that answered at least COVERAGE_SHARE of what the widest one did, and
    per row its pick: that LLM where it answered, else the answering LLM with the highest share right."""
    answered = observed.sum(axis=0)
    hits = np.nansum(y, axis=0) / np.maximum(answered, 1)
    candidate = (answered > 0) & (answered >= COVERAGE_SHARE * answered.max())
    best = int(np.argmax(np.where(candidate, hits, -1.0)))
    priority = hits.copy()
    priority[best] = np.inf  # first wherever it answered
    return best, _pick(np.broadcast_to(priority, y.shape), observed)


def routing_value(
    probabilities: np.ndarray, answers: np.ndarray, names: Sequence[str], costs: Mapping[str, float]
) -> RoutingValue:
    """All rules on questions × LLMs: `probabilities` (N, K), `answers` (N, K) 1/0 with NaN where unobserved."""
    observed = ~np.isnan(answers)
    keep = observed.any(axis=1)
    p, y, observed = probabilities[keep].astype(np.float64), answers[keep], observed[keep]
    best, single_picks = _best_single(y, observed)
    result = RoutingValue(
        n_questions=int(keep.sum()),
        router=_accuracy(_pick(p, observed), y),
        best_single=_accuracy(single_picks, y),
        best_single_name=str(names[best]),
        best_single_answered=int(observed[:, best].sum()),
        oracle=float(np.mean(np.nansum(y, axis=1) > 0)),
        mean_llm=float(np.nanmean(y)),
        router_unanswered=_unanswered(_pick(p, np.ones_like(observed)), observed),
    )
    cost = np.array([costs.get(name, np.nan) for name in names], dtype=np.float64)
    priced = observed & ~np.isnan(cost)
    rows = priced.any(axis=1)
    result.n_priced = int((~np.isnan(cost)).sum())
    if not rows.any():
        return result
    has_cost = np.broadcast_to(~np.isnan(cost), p[rows].shape)  # what route's cost rules choose among
    p, y, priced, cost, observed = p[rows], y[rows], priced[rows], np.nan_to_num(cost), observed[rows]
    result.single = {
        str(names[int(j)]): (float(np.nanmean(y[:, j])), float(cost[j])) for j in np.flatnonzero(priced.any(axis=0))
    }
    result.best_priced = str(names[_best_single(y, priced)[0]])
    for weight in cost_weights(float(cost.max())):
        choice = _pick(p - weight * cost, priced)
        result.curve.append(("max P − λ·cost", weight, _accuracy(choice, y), float(cost[choice].mean())))
        result.curve_unanswered.append(_unanswered(_pick(p - weight * cost, has_cost), observed))
    for t in THRESHOLDS:
        clear = (p >= t) & priced
        choice = np.where(clear.any(axis=1), _pick(-np.broadcast_to(cost, p.shape), clear), _pick(p, priced))
        result.curve.append(("cheapest with P ≥ t", t, _accuracy(choice, y), float(cost[choice].mean())))
        free = (p >= t) & has_cost
        own = np.where(free.any(axis=1), _pick(-np.broadcast_to(cost, p.shape), free), _pick(p, has_cost))
        result.curve_unanswered.append(_unanswered(own, observed))
    return result


def _unanswered(choice: np.ndarray, observed: np.ndarray) -> float:
    """Share of the rows whose chosen column has no observed answer."""
    return float(np.mean(~observed[np.arange(len(observed)), choice]))


def cost_frontier(single: Mapping[str, tuple[float, float]]) -> list[str]:
    """The priced LLMs that no cheaper one beats, cheapest first, from {name: (accuracy, cost)} (at equal cost the
    more accurate comes first and an LLM must beat every one before it)."""
    frontier: list[str] = []
    best = -math.inf
    for name, (accuracy, _) in sorted(single.items(), key=lambda item: (item[1][1], -item[1][0])):
        if accuracy > best:
            frontier.append(name)
            best = accuracy
    return frontier


def answer_matrix(question: np.ndarray, llm: np.ndarray, correct: np.ndarray, n_questions: int,
                  columns: Sequence[int]) -> np.ndarray:
    """(n_questions, len(columns)) answers of the data's LLM `columns[j]` (-1: not in the data), NaN unobserved."""
    position = np.full(max(int(llm.max(initial=0)) + 1, max(columns, default=0) + 1), -1, dtype=np.int64)
    for j, column in enumerate(columns):
        if column >= 0:
            position[column] = j
    out = np.full((n_questions, len(columns)), np.nan)
    cell = position[llm]
    keep = cell >= 0
    out[question[keep], cell[keep]] = correct[keep]
    return out
