"""experiments.onboarding_weighting: the rules compared there are add_llm's own."""

from __future__ import annotations

import numpy as np
import pytest
from jeirt_lite._correction_grid import LIKE_ROUTER_ALONE_PRIOR, VECTOR_ALONE, evidence_weights

from experiments.onboarding_weighting import rule_weights, simplest_within, summary


def _held_out() -> tuple[np.ndarray, dict[tuple[float, float], np.ndarray]]:
    rng = np.random.default_rng(0)
    y = (rng.random(200) < 0.5).astype(np.float64)
    signal = np.where(y == 1, 1.0, -1.0)
    return y, {VECTOR_ALONE: 0.2 * signal + rng.normal(size=200), (1.0, 300.0): 0.6 * signal + rng.normal(size=200),
               (0.5, 3000.0): 0.3 * signal + rng.normal(size=200)}


def test_the_hybrid_rule_is_add_llms() -> None:
    y, held_out = _held_out()
    assert rule_weights("hybrid", y, held_out, like=True) == {simplest_within(y, held_out, 2.0): 1.0}
    assert rule_weights("hybrid", y, held_out, like=False) == evidence_weights(y, held_out)
    assert rule_weights("simplest", y, held_out, like=False) == {simplest_within(y, held_out, 1.0): 1.0}
    half = rule_weights("average_half_alone", y, held_out, like=False)
    plain = rule_weights("average", y, held_out, like=False)
    assert sum(half.values()) == pytest.approx(1.0)
    assert half[VECTOR_ALONE] > plain.get(VECTOR_ALONE, 0.0)  # the half prior moves weight to the vector alone
    assert rule_weights("add_llm", y, held_out, like=True) == evidence_weights(y, held_out, LIKE_ROUTER_ALONE_PRIOR)
    assert rule_weights("add_llm", y, held_out, like=False) == plain
    strong = rule_weights("average_alone_0.99", y, held_out, like=False)
    assert strong[VECTOR_ALONE] > rule_weights("average_alone_0.9", y, held_out, like=False)[VECTOR_ALONE]
    with pytest.raises(ValueError, match="unknown rule"):
        rule_weights("best", y, held_out, like=False)


def test_the_simplest_fit_must_beat_the_vector_alone_by_the_margin() -> None:
    # Held-out losses where the correction beats the vector alone by 1.5 standard errors: enough at one standard
    # error, not at two.
    n = 400
    e = np.random.default_rng(9).normal(size=n)
    gap = (e - e.mean()) / e.std(ddof=1) * 0.2  # per-answer loss differences, standard deviation 0.2
    gap += -1.5 * 0.2 / np.sqrt(n) - gap.mean()
    y = np.ones(n)
    # held-out logits whose losses log(1 + e^-z) are log 2 and log 2 + gap
    held_out = {(1.0, float("inf")): np.zeros(n), (1.0, 100.0): -np.log(np.expm1(np.log(2.0) + gap))}
    assert simplest_within(y, held_out, 1.0) == (1.0, 100.0)
    assert simplest_within(y, held_out, 2.0) == (1.0, float("inf"))


def test_the_summary_is_the_mean_difference_to_the_vector_alone_with_its_standard_error() -> None:
    rows = [{"vector": 0.6, "simplest": 0.6, "average": 0.62, "average_half_alone": 0.61, "hybrid": 0.62},
            {"vector": 0.7, "simplest": 0.7, "average": 0.70, "average_half_alone": 0.71, "hybrid": 0.70}]
    out = summary(rows)
    assert out["draws"] == 2 and out["vector"] == pytest.approx(0.65)
    assert out["average"]["minus_vector"] == pytest.approx(0.01)
    assert out["average"]["se"] == pytest.approx(np.std([0.02, 0.0], ddof=1) / np.sqrt(2))
    assert out["simplest"]["minus_vector"] == 0.0


def test_the_weighting_table_has_a_row_per_setup_and_fraction() -> None:
    from experiments.onboarding_tables import weighting_table

    rows = [{"vector": 0.6, "simplest": 0.6, "average": 0.62, "average_half_alone": 0.61, "hybrid": 0.6},
            {"vector": 0.7, "simplest": 0.7, "average": 0.70, "average_half_alone": 0.71, "hybrid": 0.7}]
    result = {"setup": {"setup": "in_domain", "seeds": "8-13", "rules": []},
              "summary": {"0.01": summary(rows), "0.25": summary(rows[:1] * 2)}}
    lines = weighting_table([result]).splitlines()
    assert len(lines) == 4 and lines[2].startswith("| in_domain 1% (seeds 8-13) | 2 | 0.6500 | +0.0000 ± 0.0000 |")
    assert "+0.0100 ± 0.0100" in lines[2] and lines[3].startswith("| in_domain 25% (seeds 8-13) | 2 |")
