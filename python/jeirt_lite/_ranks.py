"""Average ranks and the rank AUC, with NumPy only: the analysis reads them, and `add_llm`'s report gives the
cross-validated AUC of a new LLM's fit."""

from __future__ import annotations

import numpy as np

from ._errors import JeirtError


def average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks with ties given their average rank (like scipy.stats.rankdata)."""
    x = np.asarray(values, dtype=np.float64).ravel()
    order = np.argsort(x, kind="mergesort")
    sorted_x = x[order]
    starts = np.flatnonzero(np.r_[True, sorted_x[1:] != sorted_x[:-1]]) if x.size else np.zeros(0, np.int64)
    ends = np.r_[starts[1:], x.size]
    ranks = np.empty(x.size)
    ranks[order] = np.repeat((starts + ends + 1) / 2.0, ends - starts)
    return ranks


def roc_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """P(a random positive scores above a random negative), ties half; NaN when one class is absent."""
    y = np.asarray(labels).ravel().astype(bool)
    s = np.asarray(scores, dtype=np.float64).ravel()
    if y.shape != s.shape:
        raise JeirtError(f"roc_auc needs one score per label, got {y.size} labels and {s.size} scores")
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    ranks = average_ranks(s)
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))
