"""The public kernels' input checks (`jeirt_lite.kernels`): each bad argument is refused by the Python wrapper with
a JeirtError naming it, before the Rust core sees it, and the optional arguments do what the docstrings say. A
mutation round found these unchecked (docs/research/mutation.md)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
from jeirt_lite import JeirtError
from jeirt_lite.kernels import mean_probability, probabilities, top_k
from test_kernels import ATOL, RTOL, reference_logits, sigmoid

Q = np.array([[1.0, 0.5, 0.0, 2.0], [0.0, 1.0, 1.0, 0.0], [3.0, -1.0, 0.5, 1.0]], np.float32)  # N 3, d 4
M = np.array([[1.0, 0.0, 2.0, 1.0], [0.5, 2.0, 0.0, -1.0]], np.float32)  # K 2


class _RaisesTypeError:
    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        raise TypeError("no array here")


KERNELS: list[Callable[..., Any]] = [probabilities, mean_probability, lambda q, m, **kw: top_k(q, m, k=1, **kw)]


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"offsets": np.zeros(3, np.float32)}, r"offsets must have shape \(3, 2\) \(questions x LLMs\), got \(3,\)"),
        ({"offsets": np.zeros((3, 2, 1), np.float32)}, r"offsets must have shape \(3, 2\)"),
        ({"offsets": np.zeros((3, 3), np.float32)}, r"offsets must have shape \(3, 2\) .*got \(3, 3\)"),
        ({"offsets": np.zeros((2, 2), np.float32)}, r"offsets must have shape \(3, 2\) .*got \(2, 2\)"),
        ({"offsets": np.zeros((4, 2), np.float32)}, r"offsets must have shape \(3, 2\) .*got \(4, 2\)"),
        ({"scale": np.float32(1.0)}, r"scale must have one entry per LLM \(shape \(2,\)\), got shape \(\)"),
        ({"scale": np.ones(3, np.float32)}, r"scale must have one entry per LLM .*got shape \(3,\)"),
        ({"bias": np.ones(1, np.float32)}, r"bias must have one entry per LLM .*got shape \(1,\)"),
        ({"bias": np.ones((2, 1), np.float32)}, r"bias must have one entry per LLM .*got shape \(2, 1\)"),
        ({"bias": _RaisesTypeError()}, "bias must be a numeric 1-D array: no array here"),
        ({"scale": np.array(["a", "b"])}, "scale must hold real numbers"),
        ({"threads": "2"}, "threads must be an int or None, got a str$"),
        ({"threads": True}, "threads must be an int or None, got a bool$"),
        ({"threads": -1}, r"threads must be in 0\.\.256 \(0 or None = all cores\), got -1"),
        ({"threads": 257}, r"threads must be in 0\.\.256 \(0 or None = all cores\), got 257"),  # whatever N is
        ({"threads": 10**30}, r"threads must be in 0\.\.256"),
        ({"offsets": [[0.0] * 4] * 2 + [[0.0] * 3]}, r"offsets must be a numeric 2-D array"),
    ],
)
def test_a_bad_optional_argument_is_refused_naming_it(
    kernel: Callable[..., Any], kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(JeirtError, match=message):
        kernel(Q, M, **kwargs)


@pytest.mark.parametrize("kernel", KERNELS)
def test_questions_that_are_no_array_are_refused_naming_them(kernel: Callable[..., Any]) -> None:
    with pytest.raises(JeirtError, match="questions must be a numeric 2-D array: no array here"):
        kernel(_RaisesTypeError(), M)
    with pytest.raises(JeirtError, match="llms must hold real numbers, got dtype bool"):
        kernel(Q, M > 0)


def test_offsets_are_added_to_each_logit_before_the_calibration() -> None:
    offsets = np.array([[0.5, -1.0], [2.0, 0.0], [-0.25, 1.5]], np.float32)  # N (3) differs from d (4)
    scale, bias = np.array([2.0, 0.5], np.float32), np.array([0.1, -0.3], np.float32)
    want = sigmoid(scale * (reference_logits(Q, M) + offsets) + bias)
    got = probabilities(Q, M, scale=scale, bias=bias, offsets=offsets, threads=1)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(mean_probability(Q, M, scale=scale, bias=bias, offsets=offsets, threads=1),
                               want.mean(axis=0), rtol=RTOL, atol=ATOL)
    idx, p = top_k(Q, M, k=2, scale=scale, bias=bias, offsets=offsets, threads=1)
    np.testing.assert_array_equal(idx, np.argsort(-want, axis=1, kind="stable"))
    np.testing.assert_allclose(p, np.take_along_axis(want, idx.astype(np.int64), axis=1), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("precision", ["float32", "bfloat16"])
def test_top_k_with_offsets_or_a_penalty_ranks_by_them_at_either_precision(precision: str) -> None:
    # The bfloat16 kernel takes neither: with them, top_k runs the float32 kernel whatever the precision.
    offsets = np.array([[-9.0, 9.0], [9.0, -9.0], [-9.0, 9.0]], np.float32)
    idx, p = top_k(Q, M, k=1, offsets=offsets, precision=precision, threads=1)
    np.testing.assert_array_equal(idx[:, 0], [1, 0, 1])
    np.testing.assert_allclose(p[:, 0], sigmoid(reference_logits(Q, M) + offsets)[[0, 1, 2], [1, 0, 1]], rtol=RTOL)
    plain = sigmoid(reference_logits(Q, M))
    assert (plain[:, 0] >= plain[:, 1]).all()  # without a penalty the first LLM wins every question
    penalty = np.array([1.0, 0.0], np.float32)  # with this one it can never win
    idx, p = top_k(Q, M, k=1, penalty=penalty, precision=precision, threads=1)
    np.testing.assert_array_equal(idx[:, 0], [1, 1, 1])
    np.testing.assert_allclose(p[:, 0], plain[:, 1], rtol=RTOL)


def test_top_k_gives_the_best_llm_by_default_and_refuses_k_outside_1_to_k() -> None:
    idx, p = top_k(Q, M, threads=1)
    assert idx.shape == p.shape == (3, 1)
    np.testing.assert_array_equal(idx[:, 0], np.argmax(reference_logits(Q, M), axis=1))
    for k in (0, 3):
        with pytest.raises(JeirtError, match=rf"k must be in 1..=K \(K = 2\), got {k}"):
            top_k(Q, M, k=k)
    for k, named in ((True, "a bool"), (1.0, "a float"), ("1", "a str")):
        with pytest.raises(JeirtError, match=f"k must be an int, got {named}$"):
            top_k(Q, M, k=k)  # type: ignore[arg-type]
