"""`top_k` and `probabilities` with `precision="bfloat16"` against the float32 kernels: on the shipped router over
every MMLU-Pro question (same top-1 LLM on >= 99.9%, probabilities within 1e-3) and on awkward shapes and values."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from jeirt_lite import JeirtError, Router, kernels

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(not kernels.bf16_supported(), reason="this CPU has no AVX-512 BF16")


def _questions(folder: str) -> list[str]:
    csv.field_size_limit(1 << 30)
    with open(REPO / "data" / folder / "questions.csv", newline="", encoding="utf-8") as handle:
        return [row["text"] for row in csv.DictReader(handle)]


def test_real_questions_keep_their_top_llm_and_probabilities() -> None:
    router = Router.load(threads=2)
    q, m, cal = router.encode(_questions("mmlu_pro"), features=False).vectors, router.llm_vectors, router.calibration
    assert cal is not None
    args = {"scale": cal.scale, "bias": cal.bias, "threads": 2}
    i32, p32 = kernels.top_k(q, m, 3, **args)
    ib, pb = kernels.top_k(q, m, 3, precision="bfloat16", **args)
    assert np.mean(ib[:, 0] == i32[:, 0]) >= 0.999
    full = kernels.probabilities(q, m, **args)
    chosen = np.take_along_axis(full, ib.astype(np.int64), axis=1)
    assert np.abs(pb - chosen).max() <= 1e-3  # the values are the chosen LLMs' float32 probabilities
    same = ib[:, 0] == i32[:, 0]
    assert np.abs(pb[same, 0] - p32[same, 0]).max() <= 1e-3


@pytest.mark.parametrize("folder", ["mmlu_pro", "zeroeval_crux_gsm_math"])
@pytest.mark.parametrize("calibrated", [True, False])
def test_real_probabilities_within_1e3_of_float32(folder: str, calibrated: bool) -> None:
    # probabilities in bfloat16 are not rescored: the common directions of the questions and of the LLMs are
    # taken out before the rounding and added back exactly, and every entry carries the rounding of what is left.
    # The bound: within 1e-3 of float32 everywhere, the same top-1 LLM on >= 99.9% of the questions.
    router = Router.load(threads=2)
    q, m, cal = router.encode(_questions(folder), features=False).vectors, router.llm_vectors, router.calibration
    assert cal is not None
    args = {"scale": cal.scale, "bias": cal.bias} if calibrated else {}
    full = kernels.probabilities(q, m, threads=2, **args)
    full_bf16 = kernels.probabilities(q, m, precision="bfloat16", threads=2, **args)
    assert full_bf16.shape == full.shape and full_bf16.dtype == np.float32
    assert 0 < np.abs(full_bf16 - full).max() <= 1e-3
    assert np.mean(full_bf16.argmax(axis=1) == full.argmax(axis=1)) >= 0.999
    # the same rows alone, and at one thread: the centring comes from a sample of the rows, so a row's result may
    # move with the others, but stays within the bound
    alone = kernels.probabilities(q[:100], m, precision="bfloat16", threads=1, **args)
    assert np.abs(alone - full[:100]).max() <= 1e-3


@pytest.mark.parametrize(("n", "d", "k_llms", "k"), [(1, 1, 1, 1), (37, 3, 33, 33), (500, 255, 112, 2), (300, 64, 7, 7)])
def test_shapes_match_float32(n: int, d: int, k_llms: int, k: int) -> None:
    rng = np.random.default_rng(n + d)
    q = rng.normal(size=(n, d)).astype(np.float32)
    q[0] = 0.0  # a zero row: logit 0 for every LLM, ties broken by index
    m = rng.normal(size=(k_llms, d)).astype(np.float32)
    i32, p32 = kernels.top_k(q, m, k)
    ib, pb = kernels.top_k(q, m, k, precision="bfloat16", threads=2)
    assert ib.shape == i32.shape and pb.dtype == np.float32
    assert np.mean(ib[:, 0] == i32[:, 0]) >= 0.98
    assert list(ib[0]) == list(range(k))
    if k == k_llms:  # every LLM is chosen: only the order can differ, and it comes from exact logits
        np.testing.assert_array_equal(np.sort(ib, axis=1), np.sort(i32, axis=1))
        np.testing.assert_allclose(pb, p32, atol=1e-6)


def test_tiny_and_huge_norms_and_bad_rows() -> None:
    rng = np.random.default_rng(3)
    m = rng.normal(size=(40, 16)).astype(np.float32)
    q = rng.normal(size=(30, 16)).astype(np.float32)
    q[:10] *= 1e-30
    q[10:20] *= 1e30
    i32, p32 = kernels.top_k(q, m, 1)
    ib, pb = kernels.top_k(q, m, 1, precision="bfloat16")
    assert np.mean(ib == i32) >= 0.9 and np.isfinite(pb).all()
    q[7, 3] = np.nan
    with pytest.raises(JeirtError, match="question row 7"):
        kernels.top_k(q, m, 1, precision="bfloat16")
    with pytest.raises(JeirtError, match="precision"):
        kernels.top_k(q, m, 1, precision="half")


@pytest.mark.parametrize(("n", "d", "k_llms"), [(1, 1, 1), (37, 3, 33), (500, 255, 112), (300, 64, 7)])
def test_probabilities_shapes_near_float32(n: int, d: int, k_llms: int) -> None:
    rng = np.random.default_rng(n + d + 1)
    q = (rng.normal(size=(n, d)) / np.sqrt(d)).astype(np.float32)
    q[0] = 0.0  # a zero row: P = 0.5 exactly for every LLM
    m = (rng.normal(size=(k_llms, d)) / np.sqrt(d)).astype(np.float32)
    scale, bias = rng.uniform(0.5, 2.0, k_llms), rng.normal(size=k_llms)
    p32 = kernels.probabilities(q, m, scale=scale, bias=bias)
    pb = kernels.probabilities(q, m, scale=scale, bias=bias, precision="bfloat16", threads=2)
    assert pb.shape == p32.shape and pb.dtype == np.float32
    np.testing.assert_allclose(pb, p32, atol=1e-2)  # random vectors: looser than the real router's 1e-3
    np.testing.assert_array_equal(pb[0], kernels.probabilities(q[:1], m, scale=scale, bias=bias)[0])


def test_probabilities_bf16_falls_back_with_offsets_and_reports_bad_rows() -> None:
    rng = np.random.default_rng(5)
    q = rng.normal(size=(40, 16)).astype(np.float32)
    m = rng.normal(size=(9, 16)).astype(np.float32)
    offsets = rng.normal(size=(40, 9)).astype(np.float32)
    exact = kernels.probabilities(q, m, offsets=offsets)
    np.testing.assert_array_equal(kernels.probabilities(q, m, offsets=offsets, precision="bfloat16"), exact)
    q[:10] *= 1e-30
    q[10:20] *= 1e30
    assert np.isfinite(kernels.probabilities(q, m, precision="bfloat16")).all()
    q[7, 3] = np.inf
    with pytest.raises(JeirtError, match="question row 7"):
        kernels.probabilities(q, m, precision="bfloat16")
    m[2, 0] = np.nan
    with pytest.raises(JeirtError, match="llm row 2"):
        kernels.probabilities(q[20:], m, precision="bfloat16")
    with pytest.raises(JeirtError, match="precision"):
        kernels.probabilities(q, m, precision="int8")
