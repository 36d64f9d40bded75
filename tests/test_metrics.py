"""The metrics of predicted P(correct) (jeirt_lite._metrics, which the report, training and the laboratory share)
against sklearn and against cases worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from jeirt_lite._metrics import (
    ECE_BINS,
    accuracy,
    all_metrics,
    brier,
    expected_calibration_error,
    log_loss,
    reliability_table,
    roc_auc,
)
from sklearn.metrics import brier_score_loss, roc_auc_score
from sklearn.metrics import log_loss as sk_log_loss


def test_hand_computed_cases() -> None:
    y = np.array([1, 0, 1, 0])
    p = np.array([0.9, 0.4, 0.5, 0.6])
    assert accuracy(y, p) == 0.75  # 0.5 counts as "correct"; 0.6 for a wrong answer is the one miss
    # Positives 0.9, 0.5; negatives 0.4, 0.6: pairs (0.9>0.4, 0.9>0.6, 0.5>0.4, 0.5<0.6) = 3/4.
    assert roc_auc(y, p) == 0.75
    assert roc_auc(np.array([1, 0]), np.array([0.3, 0.3])) == 0.5  # a tie counts half
    assert brier(y, p) == pytest.approx((0.01 + 0.16 + 0.25 + 0.36) / 4)
    assert log_loss(y, p) == pytest.approx(-(math.log(0.9) + math.log(0.6) + math.log(0.5) + math.log(0.4)) / 4)
    assert math.isnan(roc_auc(np.array([1, 1]), np.array([0.2, 0.8])))


def test_ece_by_hand() -> None:
    # Bin of 0.1 (bin 1 of 15): two cells with labels 1, 0 -> |0.5 - 0.1| * 2/4.
    # p = 1.0 goes to the last bin: label 1 -> gap 0. p = 0.7 (bin 10): label 0 -> gap 0.7 * 1/4.
    y = np.array([1, 0, 1, 0])
    p = np.array([0.1, 0.1, 1.0, 0.7])
    assert expected_calibration_error(y, p) == pytest.approx(0.4 * 0.5 + 0.7 * 0.25)
    table = reliability_table(y, p)
    assert table.count.sum() == 4 and table.count[-1] == 1 and table.count[1] == 2 and len(table.count) == ECE_BINS
    assert np.isnan(table.mean_predicted[0]) and table.observed_rate[1] == 0.5
    perfect_p = np.repeat([0.2, 0.8], 5)
    perfect_y = np.array([1, 0, 0, 0, 0, 1, 1, 1, 1, 0])
    assert expected_calibration_error(perfect_y, perfect_p) == pytest.approx(0.0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_against_sklearn(seed: int) -> None:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, 5000)
    p = np.clip(rng.beta(2, 2, 5000) * 0.6 + 0.4 * y * rng.random(5000), 0, 1)
    p[:500] = np.round(p[:500], 1)  # ties
    p[0], p[1] = 0.0, 1.0  # extremes: clipped for log-loss
    assert roc_auc(y, p) == pytest.approx(roc_auc_score(y, p), abs=1e-12)
    assert log_loss(y, p) == pytest.approx(sk_log_loss(y, np.clip(p, 1e-7, 1 - 1e-7)), rel=1e-9)
    assert brier(y, p) == pytest.approx(brier_score_loss(y, p), rel=1e-12)


def test_ece_against_loop() -> None:
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 2000).astype(float)
    p = rng.random(2000)
    total = 0.0
    for b in range(ECE_BINS):
        lo, hi = b / ECE_BINS, (b + 1) / ECE_BINS
        inside = (p >= lo) & ((p < hi) if b < ECE_BINS - 1 else (p <= hi))
        if inside.any():
            total += inside.sum() * abs(y[inside].mean() - p[inside].mean())
    assert expected_calibration_error(y, p) == pytest.approx(total / 2000, rel=1e-9)


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        accuracy(np.array([1, 0]), np.array([0.5]))
    with pytest.raises(ValueError, match="within"):
        brier(np.array([1]), np.array([1.5]))
    with pytest.raises(ValueError, match="0 or 1"):
        log_loss(np.array([2]), np.array([0.5]))


def test_the_conventions_stated_at_the_top() -> None:
    y = np.array([0, 1, 0, 1])
    assert accuracy(y, np.array([0.2, 0.3, 0.1, 0.8])) == 0.75  # right on 0.2, 0.1 and 0.8, wrong on 0.3
    # 15 bins: 0.068 and 0.13 share bin 1 (|0.5 - 0.099|); with 14 or 16 bins they would not.
    assert expected_calibration_error(np.array([1, 0]), np.array([0.068, 0.13])) == pytest.approx(0.401)
    table = reliability_table(np.array([1, 0, 1]), np.array([1.0, 0.05, 0.95]), n_bins=10)
    assert list(table.count) == [1] + [0] * 8 + [2]  # p = 1 falls in the last bin, whatever the number of bins
    assert np.isnan(table.observed_rate[1:9]).all() and np.isnan(table.mean_predicted[1:9]).all()
    assert (table.lower[9], table.upper[9], table.mean_predicted[9], table.observed_rate[9]) == (0.9, 1.0, 0.975, 1.0)
    table = reliability_table(np.array([1, 0, 1]), np.array([1.0, 0.05, 0.95]))
    assert np.allclose(table.lower, np.arange(15) / 15) and np.allclose(table.upper, np.arange(1, 16) / 15)


@pytest.mark.parametrize(
    ("y", "p", "message"),
    [
        ([1, 0, 1], [0.5, 0.5], "differ in length: 3 vs 2"),
        ([1], [0.5, 0.5], "differ in length: 1 vs 2"),
        ([1, 0], [0.5, -0.5], "within"),
        ([1, 0], [0.5, float("nan")], "finite"),
        ([1, -1], [0.5, 0.5], "0 or 1"),
        ([1, 0.5], [0.5, 0.5], "0 or 1"),
    ],
)
def test_every_metric_refuses_what_it_cannot_score(y: list[float], p: list[float], message: str) -> None:
    for metric in (accuracy, roc_auc, log_loss, brier, expected_calibration_error, all_metrics):
        with pytest.raises(ValueError, match=message):
            metric(np.array(y), np.array(p))

