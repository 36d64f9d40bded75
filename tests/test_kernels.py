"""jeirt_lite.kernels against a plain NumPy float64 reference (hypothesis over shapes and values)."""

from __future__ import annotations

import multiprocessing
import os
import threading

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jeirt_lite import JeirtError, _core, kernels

RTOL, ATOL = 1e-5, 1e-6


def reference_logits(q: npt.ArrayLike, m: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """``q.m/|q| - |q|`` in float64 from the float32 inputs (0 for a zero question)."""
    q64 = np.asarray(q, dtype=np.float32).astype(np.float64)
    m64 = np.asarray(m, dtype=np.float32).astype(np.float64)
    norm = np.linalg.norm(q64, axis=1, keepdims=True)
    safe = np.where(norm == 0.0, 1.0, norm)
    logits = (q64 @ m64.T) / safe - norm
    return np.where(norm == 0.0, 0.0, logits)


def sigmoid(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


@st.composite
def problems(draw: st.DrawFn, min_n: int = 0) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """Random (Q, M) with odd sizes, d = 1, K = 1 and N = 0 among them.

    Values are multiples of 1/8 in [-2, 2], so float32 dot products are exact and the comparison
    measures the kernels (norm, division, sigmoid), not float32 accumulation luck.
    """
    n = draw(st.integers(min_n, 300))
    k = draw(st.integers(1, 70))
    d = draw(st.integers(1, 80))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    q = (rng.integers(-16, 17, size=(n, d)) / 8).astype(np.float32)
    m = (rng.integers(-16, 17, size=(k, d)) / 8).astype(np.float32)
    if n > 0 and draw(st.booleans()):
        q[draw(st.integers(0, n - 1))] = 0.0  # a zero question somewhere
    if k > 1 and draw(st.booleans()):
        # Exact ties: copy some LLM rows onto others (later or earlier indices).
        for _ in range(draw(st.integers(1, k))):
            m[draw(st.integers(0, k - 1))] = m[draw(st.integers(0, k - 1))]
    return q, m


@settings(max_examples=60, deadline=None)
@given(problems())
def test_probabilities_match_reference(qm: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]) -> None:
    q, m = qm
    got = kernels.probabilities(q, m)
    assert got.dtype == np.float32 and got.shape == (q.shape[0], m.shape[0])
    np.testing.assert_allclose(got, sigmoid(reference_logits(q, m)), rtol=RTOL, atol=ATOL)


@settings(max_examples=60, deadline=None)
@given(problems(), st.data())
def test_top_k_matches_reference(
    qm: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]], data: st.DataObject
) -> None:
    q, m = qm
    n, k_llms = q.shape[0], m.shape[0]
    k = data.draw(st.sampled_from(sorted({1, min(3, k_llms), k_llms})))
    idx, p = kernels.top_k(q, m, k)
    assert idx.dtype == np.uint32 and p.dtype == np.float32
    assert idx.shape == p.shape == (n, k)
    logits = reference_logits(q, m)
    order = np.argsort(-logits, axis=1, kind="stable")[:, :k]  # ties -> lower index first
    want_logits = np.take_along_axis(logits, order, axis=1)
    np.testing.assert_allclose(p, sigmoid(want_logits), rtol=RTOL, atol=ATOL)
    # Indices must match exactly unless the reference logits are within float32 noise of a neighbour.
    got_logits = np.take_along_axis(logits, idx.astype(np.int64), axis=1)
    near = np.abs(got_logits - want_logits) <= 1e-4 * (1 + np.abs(want_logits))
    exact = idx == order
    assert np.all(exact | near)
    # Identical LLM rows are exact ties: those must come out in index order, never swapped.
    for i, r in zip(*np.nonzero(~exact)):
        assert not np.array_equal(m[idx[i, r]], m[order[i, r]]), (i, r)


@settings(max_examples=40, deadline=None)
@given(problems(min_n=1))
def test_mean_probability_matches_reference(
    qm: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]],
) -> None:
    q, m = qm
    got = kernels.mean_probability(q, m)
    assert got.dtype == np.float32 and got.shape == (m.shape[0],)
    np.testing.assert_allclose(got, sigmoid(reference_logits(q, m)).mean(axis=0), rtol=RTOL, atol=ATOL)


def test_duplicated_llm_rows_tie_exactly_lower_index_first() -> None:
    rng = np.random.default_rng(0)
    base = rng.standard_normal((3, 50)).astype(np.float32)
    m = base[np.arange(40) % 3]  # every panel position holds copies
    q = rng.standard_normal((200, 50)).astype(np.float32)
    idx, p = kernels.top_k(q, m, k=4)
    best = idx[:, 0].astype(np.int64)
    assert np.all(best < 3)
    np.testing.assert_array_equal(idx, best[:, None] + np.array([0, 3, 6, 9]))
    assert np.all(p == p[:, :1])
    probs = kernels.probabilities(q, m)
    np.testing.assert_array_equal(probs[:, 3:], probs[:, np.arange(3, 40) % 3])
    np.testing.assert_array_equal(p[:, 0], probs[np.arange(200), best])


def test_zero_question_is_one_half_and_empty_bank_shapes() -> None:
    m = np.ones((4, 3), dtype=np.float32)
    np.testing.assert_array_equal(kernels.probabilities(np.zeros((2, 3)), m), np.full((2, 4), 0.5))
    assert kernels.probabilities(np.zeros((0, 3)), m).shape == (0, 4)
    idx, p = kernels.top_k(np.zeros((0, 3)), m, k=2)
    assert idx.shape == p.shape == (0, 2)
    with pytest.raises(JeirtError, match="cannot forecast on an empty question bank"):
        kernels.mean_probability(np.zeros((0, 3)), m)


def test_saturated_probabilities_still_rank_by_logit() -> None:
    # Both logits are large enough that float32 P rounds to 1.0; the order must still follow the logits.
    q = np.array([[1.0, 0.0]], dtype=np.float32)
    m = np.array([[40.0, 0.0], [60.0, 0.0], [50.0, 0.0]], dtype=np.float32)
    idx, p = kernels.top_k(q, m, k=3)
    np.testing.assert_array_equal(idx, [[1, 2, 0]])
    np.testing.assert_array_equal(p, [[1.0, 1.0, 1.0]])


@pytest.mark.parametrize(
    ("q_shape", "m_shape", "message"),
    [
        ((2, 3), (4, 4), "questions has dimension 3 but llms has dimension 4"),
        ((2, 3), (0, 3), "K = 0"),
        ((3,), (4, 3), "questions must be 2-D"),
        ((2, 3), (2, 3, 1), "llms must be 2-D"),
        ((2, 0), (4, 0), "questions must have dimension d >= 1"),
    ],
)
def test_shape_errors(q_shape: tuple[int, ...], m_shape: tuple[int, ...], message: str) -> None:
    q, m = np.ones(q_shape, dtype=np.float32), np.ones(m_shape, dtype=np.float32)
    for call in (kernels.probabilities, kernels.top_k, kernels.mean_probability):
        with pytest.raises(JeirtError, match=message):
            call(q, m)


@pytest.mark.parametrize("k", [0, 5, -1])
def test_bad_k(k: int) -> None:
    with pytest.raises(JeirtError, match=rf"k must be in 1..=K \(K = 4\), got {k}"):
        kernels.top_k(np.ones((2, 3)), np.ones((4, 3)), k=k)
    with pytest.raises(JeirtError, match="k must be in"):
        _core.top_k(np.ones((2, 3), np.float32), np.ones((4, 3), np.float32), k, 1)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_rows_are_named(bad: float) -> None:
    rng = np.random.default_rng(1)
    q = rng.standard_normal((5000, 16)).astype(np.float32)
    m = rng.standard_normal((7, 16)).astype(np.float32)
    q[4000, 2] = bad
    q[1717, 5] = bad
    for call in (kernels.probabilities, kernels.top_k, kernels.mean_probability):
        with pytest.raises(JeirtError, match="question row 1717 contains NaN or inf"):
            call(q, m)
    q[[1717, 4000]] = 0.0
    m[6, 0] = bad
    for call in (kernels.probabilities, kernels.top_k, kernels.mean_probability):
        with pytest.raises(JeirtError, match="llm row 6 contains NaN or inf"):
            call(q, m)


def test_question_norm_overflow_is_an_error() -> None:
    q = np.full((3, 4), 3e38, dtype=np.float32)
    q[0] = 1.0
    with pytest.raises(JeirtError, match="question row 1 has a norm that overflows float32"):
        kernels.top_k(q, np.ones((2, 4)))


@pytest.mark.parametrize("bad", [np.array([[True, False]]), np.array([["a", "b"]]), np.array([[1 + 2j, 0]])])
def test_non_numeric_dtypes_are_rejected(bad: npt.NDArray[np.generic]) -> None:
    with pytest.raises(JeirtError, match="questions must hold real numbers"):
        kernels.probabilities(bad, np.ones((2, 2)))
    with pytest.raises(JeirtError, match="llms must hold real numbers"):
        kernels.top_k(np.ones((2, 2)), bad)


def test_threads_argument() -> None:
    q, m = np.ones((3, 2)), np.ones((2, 2))
    with pytest.raises(JeirtError, match=r"threads must be in 0\.\.256"):
        kernels.probabilities(q, m, threads=-1)
    with pytest.raises(JeirtError, match="threads must be >= 0"):  # the extension's own check
        _core.probabilities(q.astype(np.float32), m.astype(np.float32), -2)
    np.testing.assert_array_equal(kernels.probabilities(q, m, threads=3), kernels.probabilities(q, m))


def test_converted_inputs_give_the_same_answers() -> None:
    rng = np.random.default_rng(2)
    q64 = rng.standard_normal((120, 70))
    m64 = rng.standard_normal((9, 70))
    q32, m32 = q64.astype(np.float32), m64.astype(np.float32)
    want = kernels.probabilities(q32, m32)
    np.testing.assert_array_equal(kernels.probabilities(q64, m64), want)  # float64 -> float32
    q_t = np.asfortranarray(q32)  # not C-contiguous
    np.testing.assert_array_equal(kernels.probabilities(q_t, m32[:, :]), want)
    strided = np.zeros((240, 70), dtype=np.float32)
    strided[::2] = q32
    np.testing.assert_array_equal(kernels.probabilities(strided[::2], m32), want)
    np.testing.assert_array_equal(kernels.probabilities(q32.tolist(), m32.tolist()), want)
    idx, _ = kernels.top_k(q64, m64, k=2)
    np.testing.assert_array_equal(idx, kernels.top_k(q32, m32, k=2)[0])
    # The raw extension refuses what the wrapper would have converted.
    with pytest.raises(TypeError):
        _core.probabilities(q64, m32, 0)  # type: ignore[arg-type]
    with pytest.raises(JeirtError, match="C-contiguous"):
        _core.probabilities(q_t, m32, 0)


def test_concurrent_python_threads_get_single_thread_answers() -> None:
    rng = np.random.default_rng(3)
    q = rng.standard_normal((20_000, 64)).astype(np.float32)
    m = rng.standard_normal((50, 64)).astype(np.float32)
    want_idx, want_p = kernels.top_k(q, m, k=3, threads=1)
    barrier = threading.Barrier(8)
    results: list[tuple[npt.NDArray[np.uint32], npt.NDArray[np.float32]]] = []
    lock = threading.Lock()

    def worker(threads: int) -> None:
        barrier.wait()
        out = kernels.top_k(q, m, k=3, threads=threads)
        with lock:
            results.append(out)

    pool = [threading.Thread(target=worker, args=(i % 3,)) for i in range(8)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    assert len(results) == 8
    for idx, p in results:
        np.testing.assert_array_equal(idx, want_idx)
        np.testing.assert_array_equal(p, want_p)


def _child_top_k(queue: multiprocessing.Queue[object]) -> None:
    rng = np.random.default_rng(4)
    q = rng.standard_normal((20_000, 64)).astype(np.float32)
    m = rng.standard_normal((50, 64)).astype(np.float32)
    idx, _ = kernels.top_k(q, m, k=1, threads=2)
    queue.put(idx[:5].tolist())


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_still_computes() -> None:
    rng = np.random.default_rng(4)
    q = rng.standard_normal((20_000, 64)).astype(np.float32)
    m = rng.standard_normal((50, 64)).astype(np.float32)
    want, _ = kernels.top_k(q, m, k=1, threads=2)  # the parent's pool is now running
    ctx = multiprocessing.get_context("fork")
    queue: multiprocessing.Queue[object] = ctx.Queue()
    child = ctx.Process(target=_child_top_k, args=(queue,))
    child.start()
    got = queue.get(timeout=60)
    child.join(timeout=60)
    assert child.exitcode == 0
    assert got == want[:5].tolist()


def test_build_info() -> None:
    assert _core.build_profile() in {"release", "debug"}
    assert _core.simd_level() in {"avx512f", "avx2+fma", "portable"}
    assert issubclass(JeirtError, ValueError)
