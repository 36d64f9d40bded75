"""Metrics for predicted P(correct): accuracy at 0.5, ROC AUC, log-loss, Brier, expected calibration error.

Defined once, here, for the report (jeirt_lite.analysis), for training (through jeirt_lite_training._runtime) and
for the laboratory's evaluations, so that a router's numbers mean the same wherever they are printed. All vectorised
NumPy. Conventions (stated once, used everywhere):
* accuracy predicts "correct" when p >= 0.5;
* log-loss clips p to [1e-7, 1 - 1e-7] and uses the natural log;
* ECE uses ECE_BINS = 15 equal-width bins on [0, 1] (p = 1 falls in the last bin) and weights each bin's
  |mean label - mean p| by its share of the cells;
* AUC is the Mann-Whitney statistic with ties counted as half; it is NaN when only one class is present.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._errors import JeirtError
from ._ranks import roc_auc as rank_auc

ECE_BINS = 15
LOG_LOSS_EPS = 1e-7
METRIC_NAMES = ("n", "accuracy", "auc", "log_loss", "brier", "ece")


def _check(y: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(y, dtype=np.float64).ravel()
    p = np.asarray(p, dtype=np.float64).ravel()
    if y.shape != p.shape:
        raise JeirtError(f"labels and probabilities differ in length: {y.shape[0]} vs {p.shape[0]}")
    if not np.all(np.isfinite(p)) or (p.size and (p.min() < 0.0 or p.max() > 1.0)):
        raise JeirtError("probabilities must be finite and within [0, 1]")
    if y.size and not np.all((y == 0.0) | (y == 1.0)):
        raise JeirtError("labels must be 0 or 1")
    return y, p


def accuracy(y: np.ndarray, p: np.ndarray) -> float:
    y, p = _check(y, p)
    return float(np.mean((p >= 0.5) == (y == 1.0))) if y.size else float("nan")


def roc_auc(y: np.ndarray, p: np.ndarray) -> float:
    """Probability that a random positive is scored above a random negative (ties count half)."""
    y, p = _check(y, p)
    return rank_auc(y == 1.0, p)


def cell_log_losses(y: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Each cell's log-loss (p clipped as log_loss clips it), for paired comparisons cell by cell."""
    y, p = _check(y, p)
    p = np.clip(p, LOG_LOSS_EPS, 1.0 - LOG_LOSS_EPS)
    return np.asarray(-(y * np.log(p) + (1.0 - y) * np.log1p(-p)))


def log_loss(y: np.ndarray, p: np.ndarray) -> float:
    losses = cell_log_losses(y, p)
    return float(np.mean(losses)) if losses.size else float("nan")


def brier(y: np.ndarray, p: np.ndarray) -> float:
    y, p = _check(y, p)
    return float(np.mean((p - y) ** 2)) if y.size else float("nan")


def _bin_index(p: np.ndarray, n_bins: int) -> np.ndarray:
    return np.minimum((p * n_bins).astype(np.int64), n_bins - 1)


@dataclass(frozen=True)
class ReliabilityTable:
    """Per equal-width bin: its edges, the number of cells, the mean predicted p and the observed rate."""

    lower: np.ndarray
    upper: np.ndarray
    count: np.ndarray  # int64
    mean_predicted: np.ndarray  # NaN for empty bins
    observed_rate: np.ndarray  # NaN for empty bins

    def calibration_error(self) -> float:
        """The ECE of the cells binned here: each filled bin's |observed rate - mean p| weighted by its share."""
        filled = self.count > 0
        if not filled.any():
            return float("nan")
        gaps = np.abs(self.observed_rate[filled] - self.mean_predicted[filled])
        return float(np.sum(gaps * self.count[filled]) / self.count.sum())


def reliability_table(y: np.ndarray, p: np.ndarray, n_bins: int = ECE_BINS) -> ReliabilityTable:
    y, p = _check(y, p)
    index = _bin_index(p, n_bins)
    count = np.bincount(index, minlength=n_bins)
    sum_p = np.bincount(index, weights=p, minlength=n_bins)
    sum_y = np.bincount(index, weights=y, minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_p = np.where(count > 0, sum_p / np.maximum(count, 1), np.nan)
        rate = np.where(count > 0, sum_y / np.maximum(count, 1), np.nan)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    return ReliabilityTable(edges[:-1], edges[1:], count.astype(np.int64), mean_p, rate)


def expected_calibration_error(y: np.ndarray, p: np.ndarray, n_bins: int = ECE_BINS) -> float:
    return reliability_table(y, p, n_bins).calibration_error()


def all_metrics(y: np.ndarray, p: np.ndarray) -> dict[str, float]:
    """Every metric of METRIC_NAMES for one set of cells."""
    y, p = _check(y, p)
    return {
        "n": float(y.size),
        "accuracy": accuracy(y, p),
        "auc": roc_auc(y, p),
        "log_loss": log_loss(y, p),
        "brier": brier(y, p),
        "ece": expected_calibration_error(y, p),
    }
