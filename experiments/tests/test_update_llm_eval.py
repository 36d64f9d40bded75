"""experiments.update_llm_eval: adapting an LLM the shipped router holds, against the router unchanged and the
baselines, on the same draws."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from jeirt_lite import EncodedQuestions, Router

from experiments.update_llm_eval import METHODS, STATS, current_logits, evaluate_draw, forecast_mae, summary

QUESTIONS = Path(__file__).resolve().parents[2] / "data" / "zeroeval_crux_gsm_math" / "questions.csv"


def test_the_forecast_error_is_the_mean_over_the_groups() -> None:
    p, y = np.array([0.5, 0.5, 0.9]), np.array([1.0, 0.0, 0.0])
    assert forecast_mae(p, y, np.array(["a", "a", "b"])) == pytest.approx(0.45)  # (|0.5 − 0.5| + |0.9 − 0|) / 2
    assert forecast_mae(p, y, np.array(["a", "a", "a"])) == pytest.approx(abs(1.9 / 3 - 1 / 3))


def test_every_method_is_scored_on_the_answers_not_given_and_update_is_paired_with_each() -> None:
    with open(QUESTIONS, encoding="utf-8") as handle:
        rows = [row for _, row in zip(range(120), csv.DictReader(handle))]
    router = Router.load(threads=1)
    encoded = router.encode([row["text"] for row in rows], features=True)
    q, f = encoded.vectors, encoded.features
    z = current_logits(router, q, f)
    # The logits are those the router scores with (votes and calibration included).
    np.testing.assert_allclose(1 / (1 + np.exp(-z)), router.predict_proba(EncodedQuestions(q, f)), atol=1e-5)
    name = "gpt-4o-2024-05-13"
    j = router.llms.index(name)
    y = (np.arange(len(rows)) % 3 != 0).astype(np.float64)
    given = np.arange(len(rows)) < 60
    groups = np.array([row["benchmark"] for row in rows])
    result = evaluate_draw(router, name, z[:, j], q, f, y, groups, given, router.llm_vectors.mean(axis=0), 0,
                           None, None)
    assert set(result) == set(METHODS)
    assert all(np.isfinite(result[m][s]) for m in METHODS for s in STATS)
    table = summary([{"llm": name, "seed": s, **result} for s in range(2)])
    assert table["draws"] == 2 and table["update_minus_shipped"]["forecast_mae"] == pytest.approx(
        result["update"]["forecast_mae"] - result["shipped"]["forecast_mae"])
