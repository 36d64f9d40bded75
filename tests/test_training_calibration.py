"""jeirt_lite_training.calibration: the temperature/bias fit recovers known values and lands in a router's manifest."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from jeirt_lite import EncodedQuestions, Router
from jeirt_lite_training.calibration import fit_calibration, fit_temperature_bias, store_calibration
from jeirt_lite_training.types import Responses
from test_kernels import reference_logits


def test_fit_recovers_per_group_temperature_and_bias() -> None:
    rng = np.random.default_rng(0)
    n = 200_000
    z = rng.normal(size=n) * 1.5
    g = rng.integers(0, 2, size=n)
    a_true, b_true = np.array([2.0, 0.5]), np.array([-0.5, 0.3])
    y = (rng.random(n) < 1 / (1 + np.exp(-(a_true[g] * z + b_true[g])))).astype(np.float64)
    a, b = fit_temperature_bias(z, y, g, 2)
    np.testing.assert_allclose(a, a_true, atol=0.05)
    np.testing.assert_allclose(b, b_true, atol=0.05)
    glob = fit_calibration(z, y, g, 2, kind="global")
    assert glob["kind"] == "global" and len(glob["scale"]) == len(glob["bias"]) == 2
    assert glob["scale"][0] == glob["scale"][1] and glob["bias"][0] == glob["bias"][1]
    for unknown in ("auto", "isotonic", "temperature", "per-llm"):  # names on both sides of the known ones
        with pytest.raises(ValueError, match=f"kind must be 'per_llm' or 'global', got '{unknown}'"):
            fit_calibration(z, y, g, 2, kind=unknown)


def test_logits_far_from_zero_converge_instead_of_diverging() -> None:
    # A router logit plus neighbour votes can reach ±30: from the identity the sigmoid is flat there, and full
    # Newton steps ran off to a scale of 4e7. The fit must find the same optimum as from well-scaled logits.
    rng = np.random.default_rng(3)
    true = rng.normal(size=40_000) * 1.5
    y = (rng.random(true.size) < 1 / (1 + np.exp(-(true + 0.3)))).astype(float)
    groups = rng.integers(0, 2, size=true.size)
    a, b = fit_temperature_bias(20.0 * true, y, groups, 2)
    np.testing.assert_allclose(a, 1 / 20.0, rtol=0.1)
    np.testing.assert_allclose(b, 0.3, atol=0.1)
    plain_a, plain_b = fit_temperature_bias(true, y, groups, 2)
    np.testing.assert_allclose(a * 20.0, plain_a, rtol=1e-3)
    np.testing.assert_allclose(b, plain_b, atol=1e-3)


def test_a_one_sided_llm_stays_finite() -> None:
    z = np.linspace(-2, 2, 50)
    a, b = fit_temperature_bias(z, np.ones(50), np.zeros(50, np.int64), 1)
    assert np.isfinite(a).all() and np.isfinite(b).all() and a[0] > 0


def test_a_logit_that_points_the_wrong_way_keeps_the_smallest_positive_scale() -> None:
    # Right exactly where the logit says wrong: the best scale is negative, which would invert the ranking.
    z = np.linspace(-3, 3, 200)
    a, _ = fit_temperature_bias(z, (z < 0).astype(np.float64), np.zeros(200, np.int64), 1)
    assert a[0] == 1e-3


def test_store_calibration_writes_a_calibration_the_router_applies(
    tiny_router_path: Path, tmp_path: Path
) -> None:
    router = Router.load(tiny_router_path)
    path = router.save(tmp_path / "r")
    rng = np.random.default_rng(1)
    qv = rng.normal(size=(300, router.dim)).astype(np.float32)
    cells = Responses(np.repeat(np.arange(300), 5), np.tile(np.arange(5), 300), np.zeros(1500, np.float32))
    z = reference_logits(qv, router.llm_vectors)[cells.question, cells.llm]
    cells = Responses(
        cells.question, cells.llm, (rng.random(1500) < 1 / (1 + np.exp(-0.5 * z))).astype(np.float32)
    )
    stored = fit_calibration(z, cells.correct, cells.llm, 5, "per_llm")
    store_calibration(path, stored, costs={"llm-0": 1.0})
    loaded = Router.load(path)
    assert loaded.calibration is not None and loaded.manifest["calibration"]["kind"] == "per_llm"
    assert loaded.costs == {"llm-0": 1.0}
    np.testing.assert_allclose(loaded.calibration.scale, stored["scale"], rtol=1e-6)  # stored as float32
    assert 0.2 < float(np.mean(loaded.calibration.scale)) < 0.9  # the data were generated with scale 0.5
    p = 1 / (1 + np.exp(-(np.asarray(stored["scale"]) * z.reshape(300, 5) + np.asarray(stored["bias"]))))
    np.testing.assert_allclose(loaded.predict_proba(EncodedQuestions(qv)), p, rtol=1e-4, atol=1e-6)


def test_the_fit_is_the_exact_optimum_of_the_ridged_log_loss() -> None:
    # Few cells per group, so the ridge term matters: at the returned (a, b) the objective's gradient is zero.
    from jeirt_lite_training.calibration import RIDGE

    rng = np.random.default_rng(5)
    z = rng.normal(size=60) * 2.0 + np.repeat([0.0, 1.5, -2.5], 20)  # off-centre logits: the two parameters interact
    g = np.repeat(np.arange(3), 20)
    y = (rng.random(60) < 1 / (1 + np.exp(-(0.7 * z - 0.4)))).astype(np.float64)
    a, b = fit_temperature_bias(z, y, g, 3)
    p = 1 / (1 + np.exp(-(a[g] * z + b[g])))
    plain_a, plain_b = np.bincount(g, (p - y) * z, 3), np.bincount(g, p - y, 3)  # the log-loss's own gradient
    np.testing.assert_allclose(plain_a + RIDGE * (a - 1.0), 0.0, atol=1e-8)
    np.testing.assert_allclose(plain_b + RIDGE * b, 0.0, atol=1e-8)
    # And the ridge is tiny: even at 20 cells a group's fit is the plain log-loss optimum but for a few thousandths.
    assert RIDGE <= 1e-3
    assert np.abs(plain_a).max() < 5e-3 and np.abs(plain_b).max() < 5e-3


def test_apply_calibration_is_the_stated_formula() -> None:
    from jeirt_lite_training.calibration import apply_calibration

    calibration = {"kind": "per_llm", "scale": [2.0, 0.5], "bias": [-1.0, 0.25]}
    got = apply_calibration(np.array([0.0, 1.0, -2.0]), np.array([0, 1, 0]), calibration)
    want = 1 / (1 + np.exp(-np.array([2.0 * 0.0 - 1.0, 0.5 * 1.0 + 0.25, 2.0 * -2.0 - 1.0])))
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_storing_a_calibration_keeps_what_it_is_not_given(tmp_path: Path) -> None:
    shipped = Router.load(threads=1)  # a router with neighbour votes and a calibration
    assert shipped.neighbours is not None and shipped.calibration is not None
    path = shipped.save(tmp_path / "r")
    stored = {"kind": "global", "scale": [0.5] * len(shipped.llms), "bias": [0.1] * len(shipped.llms)}
    store_calibration(path, stored)
    loaded = Router.load(path, threads=1)
    assert loaded.neighbours is not None and loaded.neighbours.k == shipped.neighbours.k  # votes not dropped
    assert loaded.calibration is not None and float(loaded.calibration.scale[0]) == 0.5
    store_calibration(path, None, costs={shipped.llms[0]: 2.0})
    again = Router.load(path, threads=1)
    assert again.calibration is not None and float(again.calibration.bias[0]) == pytest.approx(0.1)
    assert again.neighbours is not None and again.costs == {**shipped.costs, shipped.llms[0]: 2.0}
