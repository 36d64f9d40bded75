"""The laboratory's tables of the training library's metrics: `all_metrics` per group of cells, and the reliability
table as JSON rows and as markdown (experiments.compare and calibration_eval write them; `fit` reads neither)."""

from __future__ import annotations

import numpy as np
from jeirt_lite._metrics import ReliabilityTable, all_metrics


def metrics_by_group(y: np.ndarray, p: np.ndarray, groups: np.ndarray) -> dict[str, dict[str, float]]:
    """all_metrics for each distinct value of `groups` (one label per cell), sorted by group name."""
    y, p = np.asarray(y).ravel(), np.asarray(p).ravel()
    groups = np.asarray(groups).astype(str)
    if y.shape != p.shape:
        raise ValueError(f"labels and probabilities differ in length: {y.shape[0]} vs {p.shape[0]}")
    if groups.shape != y.shape:
        raise ValueError("need one group label per cell")
    names, inverse = np.unique(groups, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    bounds = np.r_[0, np.cumsum(np.bincount(inverse, minlength=len(names)))]
    return {
        str(name): all_metrics(y[order[bounds[i]:bounds[i + 1]]], p[order[bounds[i]:bounds[i + 1]]])
        for i, name in enumerate(names)
    }


def reliability_rows(table: ReliabilityTable) -> list[dict[str, float]]:
    """One dict per bin: its edges, count, mean predicted p and observed rate (NaN for an empty bin)."""
    return [
        {"lower": float(lo), "upper": float(hi), "count": int(c), "mean_predicted": float(mp), "observed_rate": float(o)}
        for lo, hi, c, mp, o in zip(table.lower, table.upper, table.count, table.mean_predicted, table.observed_rate)
    ]


def reliability_markdown(table: ReliabilityTable) -> str:
    lines = ["| bin | count | mean predicted | observed |", "|---|---:|---:|---:|"]
    for row in reliability_rows(table):
        lines.append(f"| {row['lower']:.3f}–{row['upper']:.3f} | {row['count']} | "
                     f"{row['mean_predicted']:.3f} | {row['observed_rate']:.3f} |")
    return "\n".join(lines)
