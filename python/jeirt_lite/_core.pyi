"""Typed stub for the Rust extension ``jeirt_lite._core`` (see rust/src/py.rs).

All kernels take C-contiguous float32 2-D arrays (questions ``(N, d)``, llms ``(K, d)``), read them without
copying, release the GIL, and raise :class:`JeirtError` on bad input. ``threads = 0`` means all cores.
For question q and LLM m: ``logit = q.m/|q| - |q|`` (0 when ``q`` is the zero vector), ``P = sigmoid(logit)``.
"""

import numpy as np
import numpy.typing as npt

__all__ = ["JeirtError", "probabilities", "top_k", "mean_probability", "build_profile", "simd_level"]

class JeirtError(ValueError):
    """Bad input to a kernel: shapes, NaN/inf rows (named), k, threads."""

def probabilities(
    questions: npt.NDArray[np.float32],
    llms: npt.NDArray[np.float32],
    threads: int,
    scale: npt.NDArray[np.float32] | None = None,
    bias: npt.NDArray[np.float32] | None = None,
) -> npt.NDArray[np.float32]:
    """P(correct) for every pair: float32 ``(N, K)``; with scale/bias ``sigmoid(scale * logit + bias)``."""

def top_k(
    questions: npt.NDArray[np.float32],
    llms: npt.NDArray[np.float32],
    k: int,
    threads: int,
    scale: npt.NDArray[np.float32] | None = None,
    bias: npt.NDArray[np.float32] | None = None,
    penalty: npt.NDArray[np.float32] | None = None,
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.float32]]:
    """The k most likely-correct LLMs per question, best first, ties by lower index: ``(N, k)`` each.

    With ``penalty`` the key is ``P - penalty`` instead of the logit."""

def mean_probability(
    questions: npt.NDArray[np.float32],
    llms: npt.NDArray[np.float32],
    threads: int,
    scale: npt.NDArray[np.float32] | None = None,
    bias: npt.NDArray[np.float32] | None = None,
) -> npt.NDArray[np.float32]:
    """Mean P(correct) per LLM over the questions (float64 sums): float32 ``(K,)``; N = 0 raises."""

def build_profile() -> str:
    """``"release"`` or ``"debug"``."""

def simd_level() -> str:
    """The code path on this CPU: ``"avx512f"``, ``"avx2+fma"`` or ``"portable"``."""
