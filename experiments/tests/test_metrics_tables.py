"""The laboratory's metric tables: per-group metrics are the metrics of each group's cells, and the reliability
table's rows and markdown carry every bin, empty bins as NaN."""

from __future__ import annotations

import math

import numpy as np
import pytest
from jeirt_lite._metrics import all_metrics, reliability_table

from experiments.metrics_tables import metrics_by_group, reliability_markdown, reliability_rows


def test_by_group_matches_slices() -> None:
    rng = np.random.default_rng(4)
    y = rng.integers(0, 2, 300)
    p = rng.random(300)
    groups = rng.choice(["b", "a", "c"], 300)
    out = metrics_by_group(y, p, groups)
    assert list(out) == ["a", "b", "c"]
    for g, values in out.items():
        assert values == all_metrics(y[groups == g], p[groups == g])
    assert sum(v["n"] for v in out.values()) == 300


@pytest.mark.parametrize(
    ("p", "groups", "message"),
    [
        ([0.5, 0.5, 0.5], ["a", "b"], "need one group label per cell"),
        ([0.5, 0.5, 0.5], ["a", "b", "c", "d"], "need one group label per cell"),
        ([0.5, 0.5], ["a", "b", "c"], "differ in length: 3 vs 2"),
        ([0.5, 1.5, 0.5], ["a", "b", "c"], "within"),
    ],
)
def test_groups_need_one_label_and_one_probability_per_cell(p: list[float], groups: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        metrics_by_group(np.array([1, 0, 1]), np.array(p), np.array(groups))


def test_the_reliability_rows_and_markdown_hold_every_bin() -> None:
    table = reliability_table(np.array([1, 0, 1]), np.array([1.0, 0.05, 0.95]), n_bins=10)
    rows = reliability_rows(table)
    assert len(rows) == 10
    assert rows[9] == {"lower": 0.9, "upper": 1.0, "count": 2, "mean_predicted": 0.975, "observed_rate": 1.0}
    assert rows[0]["count"] == 1 and rows[3]["count"] == 0 and math.isnan(rows[3]["observed_rate"])
    lines = reliability_markdown(table).splitlines()
    assert lines[:2] == ["| bin | count | mean predicted | observed |", "|---|---:|---:|---:|"] and len(lines) == 12
    assert "| 0.900–1.000 | 2 | 0.975 | 1.000 |" in lines and "| 0.300–0.400 | 0 | nan | nan |" in lines
