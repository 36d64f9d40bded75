"""`top_k(..., precision="bfloat16")` against the float32 kernel: on the shipped router over every MMLU-Pro
question (same top-1 LLM on >= 99.9%, probabilities within 1e-3) and on awkward shapes and values."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from jeirt_lite import JeirtError, Router, kernels

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(not kernels.bf16_supported(), reason="this CPU has no AVX-512 BF16")


def test_real_questions_keep_their_top_llm_and_probabilities() -> None:
    csv.field_size_limit(1 << 30)
    with open(REPO / "data" / "mmlu_pro" / "questions.csv", newline="", encoding="utf-8") as handle:
        texts = [row["text"] for row in csv.DictReader(handle)]
    router = Router.load(threads=2)
    q, m, cal = router.embed(texts), router.llm_vectors, router.calibration
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
