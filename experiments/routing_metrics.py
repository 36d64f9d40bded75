"""What a router needs from predictions beyond the overall AUC: the order of the LLMs within a question, the order
of the questions for each LLM, and routing with costs (the accuracy–cost curve and its area, RouterBench's AIQ).

* within-question AUC: for each question with both right and wrong answers, the AUC of its LLMs' predicted P
  against their answers; averaged over questions, weighted by their observed cells. This is the order a router uses.
* per-LLM AUC: for each LLM, the AUC of its predicted P over the questions it answered; the mean over LLMs.
* routing with costs: each question goes to argmax_k P_k − λ·cost_k among the LLMs with a cost and an observed
  answer, for a sweep of λ; each λ gives a point (mean cost, accuracy). AIQ is the area under the non-decreasing
  upper convex hull of those points over the cost range [cheapest LLM, dearest LLM], divided by that range (the
  hull is extended flat beyond its end points). `aiq_single_llm_mix` is the hull of the single LLMs' own points on
  these cells: an oracle's choice of one LLM per price (it knows their accuracy on these very questions), an upper
  reference rather than a router.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from jeirt_lite._metrics import roc_auc

# λ in units of accuracy per (cost / dearest cost): 0 routes to the most likely LLM; the top of the grid to the
# cheapest candidate of nearly every question.
LAMBDA_GRID = (0.0, *np.geomspace(1e-3, 10.0, 41).tolist())


def within_question_auc(question: np.ndarray, y: np.ndarray, p: np.ndarray) -> float:
    """Cell-weighted mean over questions (with both outcomes) of the AUC of P across that question's LLMs."""
    order = np.argsort(question, kind="stable")
    q, y, p = question[order], y[order], p[order]
    starts = np.flatnonzero(np.r_[True, q[1:] != q[:-1]])
    ends = np.r_[starts[1:], len(q)]
    total, weight = 0.0, 0
    for s, e in zip(starts, ends):
        ys = y[s:e]
        if 0 < ys.sum() < len(ys):
            total += roc_auc(ys, p[s:e]) * (e - s)
            weight += e - s
    return total / weight if weight else float("nan")


def per_llm_auc(llm: np.ndarray, y: np.ndarray, p: np.ndarray) -> float:
    """Mean over LLMs (with both outcomes) of the AUC of P across the questions that LLM answered."""
    aucs = [roc_auc(y[llm == k], p[llm == k]) for k in np.unique(llm) if 0 < y[llm == k].sum() < (llm == k).sum()]
    return float(np.mean(aucs)) if aucs else float("nan")


def cell_matrix(question: np.ndarray, llm: np.ndarray, values: np.ndarray, n_llms: int) -> tuple[np.ndarray, np.ndarray]:
    """(question ids, (n_questions, K) matrix of `values`, NaN where no cell)."""
    rows, inverse = np.unique(question, return_inverse=True)
    out = np.full((len(rows), n_llms), np.nan)
    out[inverse, llm] = values
    return rows, out


def upper_hull(points: np.ndarray) -> np.ndarray:
    """The non-decreasing upper convex hull of (cost, accuracy) points, sorted by cost."""
    pts = sorted(map(tuple, points))
    hull: list[tuple[float, float]] = []
    for c, a in pts:
        if hull and a <= hull[-1][1]:
            continue  # a dearer point that is not better is never worth choosing
        while len(hull) >= 2:
            (c1, a1), (c2, a2) = hull[-2], hull[-1]
            if (a2 - a1) * (c - c1) <= (a - a1) * (c2 - c1):  # hull[-1] lies under the chord: drop it
                hull.pop()
            else:
                break
        hull.append((c, a))
    return np.array(hull)


def area_under(hull: np.ndarray, lo: float, hi: float) -> float:
    """Mean accuracy of the hull over costs [lo, hi], flat beyond its end points."""
    grid = np.linspace(lo, hi, 2001)
    return float(np.interp(grid, hull[:, 0], hull[:, 1]).mean())


def routing_curve(p: np.ndarray, y: np.ndarray, costs: np.ndarray) -> np.ndarray:
    """(len(LAMBDA_GRID), 2) points (mean cost, accuracy) of argmax P − λ·cost/max(cost) over observed cells."""
    observed = ~np.isnan(y)
    scale = costs / costs.max()
    out = []
    for lam in LAMBDA_GRID:
        choice = np.argmax(np.where(observed, p - lam * scale, -np.inf), axis=1)
        rows = np.arange(len(y))
        out.append((float(costs[choice].mean()), float(y[rows, choice].mean())))
    return np.array(out)


def routing_with_costs(
    question: np.ndarray, llm: np.ndarray, y: np.ndarray, p: np.ndarray, costs: np.ndarray
) -> dict[str, Any]:
    """AIQ of routing on these cells by P, among the LLMs with a finite cost, and of the mix of single LLMs."""
    priced = np.flatnonzero(np.isfinite(costs))
    keep = np.isin(llm, priced)
    position = np.full(len(costs), -1)
    position[priced] = np.arange(len(priced))
    _, ym = cell_matrix(question[keep], position[llm[keep]], y[keep], len(priced))
    _, pm = cell_matrix(question[keep], position[llm[keep]], p[keep], len(priced))
    has = ~np.isnan(ym).all(axis=1)
    ym, pm, c = ym[has], pm[has], costs[priced]
    lo, hi = float(c.min()), float(c.max())
    curve = routing_curve(pm, ym, c)
    singles = np.array([(c[k], np.nanmean(ym[:, k])) for k in range(len(c)) if (~np.isnan(ym[:, k])).any()])
    return {
        "aiq": area_under(upper_hull(curve), lo, hi),
        "aiq_single_llm_mix": area_under(upper_hull(singles), lo, hi),
        "accuracy_at_lambda_0": float(curve[0, 1]),
        "distinct_llms_max": int(max(len(np.unique(np.argmax(np.where(~np.isnan(ym), pm - lam * c / hi, -np.inf), axis=1)))
                                     for lam in LAMBDA_GRID)),
        "n_questions": len(ym),
        "n_priced_llms": len(c),
        "curve": curve.tolist(),
    }


def router_metrics(question: np.ndarray, llm: np.ndarray, y: np.ndarray, p: np.ndarray,
                   costs: np.ndarray | None) -> dict[str, Any]:
    """within-question AUC, per-LLM AUC and (with costs) the routing-with-costs block, for one method's cells."""
    out: dict[str, Any] = {
        "within_question_auc": within_question_auc(question, y, p),
        "per_llm_auc": per_llm_auc(llm, y, p),
    }
    if costs is not None and np.isfinite(costs).sum() >= 2:
        out["routing"] = routing_with_costs(question, llm, y, p, costs)
    return out
