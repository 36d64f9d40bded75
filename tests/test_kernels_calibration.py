"""Calibration (per-LLM scale and bias on the logit) and the top-k penalty in the kernels, against NumPy."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jeirt_lite import JeirtError, kernels
from test_kernels import ATOL, RTOL, problems, reference_logits, sigmoid

Problem = tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]


def per_llm(data: st.DataObject, k: int, low: float, high: float) -> npt.NDArray[np.float32]:
    seed = data.draw(st.integers(0, 2**32 - 1))
    return np.random.default_rng(seed).uniform(low, high, size=k).astype(np.float32)


@settings(max_examples=50, deadline=None)
@given(problems(), st.data())
def test_calibrated_probabilities_and_means_match_reference(qm: Problem, data: st.DataObject) -> None:
    q, m = qm
    k = m.shape[0]
    scale, bias = per_llm(data, k, 0.2, 3.0), per_llm(data, k, -2.0, 2.0)
    want = sigmoid(scale.astype(np.float64) * reference_logits(q, m) + bias.astype(np.float64))
    got = kernels.probabilities(q, m, scale=scale, bias=bias)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    if q.shape[0]:
        means = kernels.mean_probability(q, m, scale=scale, bias=bias)
        np.testing.assert_allclose(means, want.mean(axis=0), rtol=RTOL, atol=ATOL)
    # Only one of the two: the other takes its neutral value.
    np.testing.assert_allclose(
        kernels.probabilities(q, m, bias=bias), sigmoid(reference_logits(q, m) + bias), rtol=RTOL, atol=ATOL
    )


@settings(max_examples=50, deadline=None)
@given(problems(), st.data())
def test_top_k_with_calibration_and_penalty_matches_reference(qm: Problem, data: st.DataObject) -> None:
    q, m = qm
    n, k_llms = q.shape[0], m.shape[0]
    k = data.draw(st.sampled_from(sorted({1, min(3, k_llms), k_llms})))
    scale, bias = per_llm(data, k_llms, 0.2, 3.0), per_llm(data, k_llms, -2.0, 2.0)
    penalty = per_llm(data, k_llms, 0.0, 0.3) if data.draw(st.booleans()) else None
    idx, p = kernels.top_k(q, m, k, scale=scale, bias=bias, penalty=penalty)
    assert idx.shape == p.shape == (n, k)
    calibrated = scale.astype(np.float64) * reference_logits(q, m) + bias
    probs = sigmoid(calibrated)
    keys = calibrated if penalty is None else probs - penalty
    order = np.argsort(-keys, axis=1, kind="stable")[:, :k]
    got = idx.astype(np.int64)
    # The chosen LLMs' keys equal the best keys up to float32 noise, and the values are their probabilities.
    np.testing.assert_allclose(
        np.take_along_axis(keys, got, axis=1), np.take_along_axis(keys, order, axis=1), rtol=1e-4, atol=2e-6
    )
    np.testing.assert_allclose(p, np.take_along_axis(probs, got, axis=1), rtol=RTOL, atol=2 * ATOL)
    assert all(len(set(row)) == k for row in got.tolist())  # no LLM twice


def test_no_calibration_is_bit_identical_to_identity_calibration() -> None:
    rng = np.random.default_rng(1)
    q, m = rng.standard_normal((500, 24)).astype(np.float32), rng.standard_normal((37, 24)).astype(np.float32)
    plain = kernels.probabilities(q, m)
    ident = kernels.probabilities(q, m, scale=np.ones(37), bias=np.zeros(37))
    np.testing.assert_allclose(plain, ident, rtol=0, atol=1e-7)
    i1, _ = kernels.top_k(q, m, 5)
    i2, _ = kernels.top_k(q, m, 5, penalty=np.zeros(37))
    # P saturates at 1.0 more often than the logit, so only the best one is compared where P < 1.
    unsaturated = kernels.probabilities(q, m).max(axis=1) < 0.999
    np.testing.assert_array_equal(i1[unsaturated, 0], i2[unsaturated, 0])


def test_a_large_penalty_moves_routing_to_the_cheap_llm() -> None:
    q = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    m = np.array([[3.0, 3.0], [2.0, 2.0]], dtype=np.float32)  # LLM 0 is better everywhere
    assert kernels.top_k(q, m, 1)[0].ravel().tolist() == [0, 0]
    idx, p = kernels.top_k(q, m, 1, penalty=[1.0, 0.0])
    assert idx.ravel().tolist() == [1, 1]
    np.testing.assert_allclose(p.ravel(), kernels.probabilities(q, m)[:, 1], rtol=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"scale": [1.0]}, r"scale must have one entry per LLM \(shape \(2,\)\)"),
        ({"scale": [1.0, 0.0]}, "calibration scale entry 1 must be > 0"),
        ({"scale": [1.0, -2.0]}, "calibration scale entry 1 must be > 0"),
        ({"bias": [np.nan, 0.0]}, "calibration bias entry 0 is NaN or inf"),
        ({"bias": [[0.0, 0.0]]}, "bias must have one entry per LLM"),
        ({"bias": ["a", "b"]}, "bias must hold real numbers"),
        ({"penalty": [0.0, np.inf]}, "penalty entry 1 is NaN or inf"),
    ],
)
def test_bad_per_llm_arrays_are_named(kwargs: dict[str, object], message: str) -> None:
    q, m = np.ones((3, 2), dtype=np.float32), np.ones((2, 2), dtype=np.float32)
    call = kernels.top_k if "penalty" in kwargs else kernels.probabilities
    with pytest.raises(JeirtError, match=message):
        call(q, m, **kwargs)  # type: ignore[operator]
