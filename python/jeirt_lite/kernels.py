"""Fast JE-IRT scoring and routing kernels (Rust, multi-threaded, SIMD).

For a question vector ``q`` and an LLM vector ``m`` the model's logit is ``q.m/|q| - |q|`` and
``P(correct) = sigmoid(logit)``. A zero question vector has no direction and no difficulty: its logit is 0
(P = 0.5 for every LLM). Inputs are converted once to C-contiguous float32 (no copy when they already are).
NaN or inf in any row, or a question whose norm overflows float32, raises :class:`JeirtError` naming the
row. ``threads=None`` (or 0) uses every core; small problems run on the calling thread.

Calibration: every kernel takes optional per-LLM ``scale`` and ``bias`` arrays (length K, finite, scale > 0)
and then works on ``sigmoid(scale[j] * logit + bias[j])``, applied inside the fused pass. ``top_k`` also takes a
per-LLM ``penalty`` and then ranks by ``P - penalty[j]`` (cost-aware routing). Without them the kernels behave
exactly as before.

Offsets: every kernel takes an optional ``(N, K)`` float32 ``offsets`` array, added to each (question, LLM) logit
before the calibration (an onboarded LLM's feature correction; see :mod:`jeirt_lite._corrections`).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from jeirt_lite import _core
from jeirt_lite._errors import JeirtError
from jeirt_lite._limits import MAX_THREADS
from jeirt_lite._type_names import python_type as _type_name

__all__ = ["JeirtError", "bf16_supported", "mean_probability", "probabilities", "top_k"]


def _real_array(x: npt.ArrayLike, name: str, kind: str) -> np.ndarray:
    """``x`` as an array of real numbers (no copy), or a JeirtError naming ``name``, which should be a ``kind``
    ("2-D", "1-D") array."""
    try:
        raw = np.asarray(x)
    except (TypeError, ValueError) as e:
        raise JeirtError(f"{name} must be a numeric {kind} array: {e}") from None
    if raw.dtype == np.bool_ or raw.dtype.kind not in "iuf":
        raise JeirtError(f"{name} must hold real numbers, got dtype {raw.dtype}")
    return raw


def _as_matrix(x: npt.ArrayLike, name: str) -> npt.NDArray[np.float32]:
    """``x`` as a C-contiguous float32 2-D array with at least one column, or a JeirtError naming ``name``."""
    raw = _real_array(x, name, "2-D")
    if raw.ndim != 2:
        raise JeirtError(f"{name} must be 2-D, got {raw.ndim}-D with shape {raw.shape}")
    if raw.shape[1] == 0:
        raise JeirtError(f"{name} must have dimension d >= 1, got shape {raw.shape}")
    return np.ascontiguousarray(raw, dtype=np.float32)


def _offsets(x: npt.ArrayLike | None, n: int, k: int) -> npt.NDArray[np.float32] | None:
    """Optional (N, K) logit offsets as C-contiguous float32; NaN/inf are left to the kernel, which names them."""
    if x is None:
        return None
    try:
        ndim = np.asarray(x).ndim
    except (TypeError, ValueError) as e:  # a ragged nested list
        raise JeirtError(f"offsets must be a numeric 2-D array: {e}") from None
    offsets = _as_matrix(x, "offsets") if ndim == 2 else None
    if offsets is None or offsets.shape != (n, k):
        raise JeirtError(f"offsets must have shape ({n}, {k}) (questions x LLMs), got {np.shape(x)}")
    return offsets


def _threads(threads: int | None) -> int:
    if threads is None:
        return 0
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)):
        raise JeirtError(f"threads must be an int or None, got {_type_name(threads)}")
    if threads < 0 or threads > MAX_THREADS:  # the bound of Router.load, whatever the problem's size
        raise JeirtError(f"threads must be in 0..{MAX_THREADS} (0 or None = all cores), got {threads}")
    return int(threads)


def _per_llm(x: npt.ArrayLike | None, name: str, k: int) -> npt.NDArray[np.float32] | None:
    """An optional per-LLM array as contiguous float32 of length ``k``; bad values are left to the kernel,
    which names the entry."""
    if x is None:
        return None
    raw = _real_array(x, name, "1-D")
    if raw.ndim != 1 or raw.shape[0] != k:
        raise JeirtError(f"{name} must have one entry per LLM (shape ({k},)), got shape {raw.shape}")
    return np.ascontiguousarray(raw, dtype=np.float32)


def _scoring_inputs(
    questions: npt.ArrayLike,
    llms: npt.ArrayLike,
    threads: int | None,
    scale: npt.ArrayLike | None,
    bias: npt.ArrayLike | None,
    offsets: npt.ArrayLike | None,
) -> tuple[
    npt.NDArray[np.float32], npt.NDArray[np.float32], int,
    npt.NDArray[np.float32] | None, npt.NDArray[np.float32] | None, npt.NDArray[np.float32] | None,
]:
    """The arguments `probabilities` and `mean_probability` pass their kernel, in its order, each checked in that
    order (the first bad one is the one named). `top_k` checks its k and penalty between them, and keeps its own."""
    q, m = _as_matrix(questions, "questions"), _as_matrix(llms, "llms")
    k = m.shape[0]
    return q, m, _threads(threads), _per_llm(scale, "scale", k), _per_llm(bias, "bias", k), _offsets(offsets, q.shape[0], k)


def _precision(precision: str) -> str:
    if precision not in ("float32", "bfloat16"):
        raise JeirtError(f"precision must be 'float32' or 'bfloat16', got {precision!r}")
    return precision


def probabilities(
    questions: npt.ArrayLike,
    llms: npt.ArrayLike,
    *,
    threads: int | None = None,
    scale: npt.ArrayLike | None = None,
    bias: npt.ArrayLike | None = None,
    offsets: npt.ArrayLike | None = None,
    precision: str = "float32",
) -> npt.NDArray[np.float32]:
    """P(correct) for every question x LLM pair.

    Args:
        questions: ``(N, d)`` question vectors; ``N`` may be 0.
        llms: ``(K, d)`` LLM vectors, ``K >= 1``.
        threads: worker threads; ``None`` or 0 = all cores.
        scale, bias: optional ``(K,)`` calibration: ``sigmoid(scale * logit + bias)``.
        offsets: optional ``(N, K)`` added to each logit before the calibration.
        precision: ``"float32"``, or ``"bfloat16"``: logits from bfloat16 products (AVX-512 BF16, where
            :func:`bf16_supported`; float32 otherwise and with offsets). The common direction of the question
            rows (from a sample of them) and that of the LLM rows are taken out before the rounding and added back
            exactly; within 1e-3 of float32's on the shipped router over real questions, but a row's values can
            move slightly with the other rows of the call. docs/research/throughput.md has the speed and the
            errors.

    Returns:
        float32 array ``(N, K)`` of ``sigmoid(q.m/|q| - |q|)`` (calibrated when asked).

    Raises:
        JeirtError: non-2-D or non-numeric input, ``d`` mismatch or ``d = 0``, ``K = 0``, NaN/inf rows.

    >>> import numpy as np
    >>> probabilities(np.array([[3.0, 4.0]]), np.array([[5.0, 0.0], [0.0, 0.0]])).round(4)
    array([[0.1192, 0.0067]], dtype=float32)
    """
    return _core.probabilities(
        *_scoring_inputs(questions, llms, threads, scale, bias, offsets), bfloat16=_precision(precision) == "bfloat16"
    )


def top_k(
    questions: npt.ArrayLike,
    llms: npt.ArrayLike,
    k: int = 1,
    *,
    threads: int | None = None,
    scale: npt.ArrayLike | None = None,
    bias: npt.ArrayLike | None = None,
    penalty: npt.ArrayLike | None = None,
    precision: str = "float32",
    offsets: npt.ArrayLike | None = None,
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.float32]]:
    """The ``k`` most likely-correct LLMs for each question, without building the ``N x K`` matrix.

    Ranked by logit (which keeps the order where float32 probabilities round to 1.0), best first; equal
    logits are broken by the lower LLM index.

    Args:
        questions: ``(N, d)`` question vectors; ``N`` may be 0.
        llms: ``(K, d)`` LLM vectors, ``K >= 1``.
        k: how many LLMs per question, ``1 <= k <= K``.
        threads: worker threads; ``None`` or 0 = all cores.
        scale, bias: optional ``(K,)`` calibration, applied before ranking.
        penalty: optional ``(K,)``: rank by ``P - penalty`` (e.g. ``cost_weight * cost``) instead of by logit;
            ties by lower index; the values returned are still the probabilities.
        precision: ``"float32"``, or ``"bfloat16"``: the LLMs are ranked with bfloat16 products (AVX-512 BF16,
            where :func:`bf16_supported`; float32 otherwise and with a penalty or offsets) and the chosen k scored again
            exactly, so the probabilities are float32's and the set differs only where two LLMs are close in logit:
            within about 1e-3 on the shipped router over real questions, more for larger vectors (the products'
            error grows with ``‖q‖·‖m‖``; up to about 1e-2 on random ones of norm 3). Whether it saves CPU time
            depends on the CPU and K: docs/research/throughput.md has the measurements.
        offsets: optional ``(N, K)`` added to each logit before the calibration.

    Returns:
        ``(indices, probabilities)``: uint32 ``(N, k)`` LLM indices and float32 ``(N, k)`` P(correct).

    Raises:
        JeirtError: as :func:`probabilities`, and ``k`` outside ``1..=K``.

    >>> import numpy as np
    >>> idx, p = top_k(np.array([[1.0, 0.0]]), np.array([[0.0, 1.0], [2.0, 0.0]]), k=1)
    >>> idx, p.round(4)
    (array([[1]], dtype=uint32), array([[0.7311]], dtype=float32))
    """
    q, m = _as_matrix(questions, "questions"), _as_matrix(llms, "llms")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise JeirtError(f"k must be an int, got {_type_name(k)}")
    if not 1 <= k <= m.shape[0]:
        raise JeirtError(f"k must be in 1..=K (K = {m.shape[0]}), got {k}")
    n_llms = m.shape[0]
    if _precision(precision) == "bfloat16" and penalty is None and offsets is None:
        return _core.top_k_bf16(
            q, m, int(k), _threads(threads), _per_llm(scale, "scale", n_llms), _per_llm(bias, "bias", n_llms)
        )
    return _core.top_k(
        q,
        m,
        int(k),
        _threads(threads),
        _per_llm(scale, "scale", n_llms),
        _per_llm(bias, "bias", n_llms),
        _per_llm(penalty, "penalty", n_llms),
        _offsets(offsets, q.shape[0], n_llms),
    )


def bf16_supported() -> bool:
    """Whether this CPU has AVX-512 BF16, which ``top_k(..., precision="bfloat16")`` uses."""
    return bool(_core.bf16_supported())


def mean_probability(
    questions: npt.ArrayLike,
    llms: npt.ArrayLike,
    *,
    threads: int | None = None,
    scale: npt.ArrayLike | None = None,
    bias: npt.ArrayLike | None = None,
    offsets: npt.ArrayLike | None = None,
) -> npt.NDArray[np.float32]:
    """Mean P(correct) of each LLM over a question bank (a forecast of its accuracy).

    Sums are accumulated in float64 in a fixed order, so the result does not depend on ``threads``.

    Args:
        questions: ``(N, d)`` question vectors, ``N >= 1``.
        llms: ``(K, d)`` LLM vectors, ``K >= 1``.
        threads: worker threads; ``None`` or 0 = all cores.
        scale, bias: optional ``(K,)`` calibration.
        offsets: optional ``(N, K)`` added to each logit before the calibration.

    Returns:
        float32 array ``(K,)``.

    Raises:
        JeirtError: as :func:`probabilities`, and an empty question bank.

    >>> import numpy as np
    >>> mean_probability(np.array([[0.0, 0.0], [1.0, 0.0]]), np.array([[1.0, 0.0]])).round(4)
    array([0.5], dtype=float32)
    """
    return _core.mean_probability(*_scoring_inputs(questions, llms, threads, scale, bias, offsets))
