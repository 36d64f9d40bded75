"""Benchmark of the Rust kernels against NumPy on the same arrays, in one run.

For each K it times, best of ``--repeats``:
  * ``probabilities``, ``top_k(k=1)`` and ``mean_probability`` (Rust, all cores by default),
  * (a) the NumPy reference of the same computation (norms, ``Q @ M.T``, sigmoid, argmax / mean), float32,
    in place where NumPy allows, and
  * (b) NumPy's bare ``Q @ M.T``,
and prints pairs/s, GFLOP/s (2 N K d useful flops), the ratios, the share of the measured multiply-add peak of
the cores used (a register-only FMA loop, and vdpbf16ps where the CPU has AVX-512 BF16), the core count and the
SIMD level, and writes them to a JSON file. Where the CPU has AVX-512 BF16, ``top_k`` and ``probabilities`` are
also timed with ``precision="bfloat16"``. Wall-clock numbers are reported, never asserted.

Memory: Q is N x d float32 (1 GB at the default size) and the reference materialises N x K float32 (4 GB at
K = 1000); one such matrix is alive at a time.

Usage: python benches/bench_kernels.py [--n 1000000] [--d 256] [--ks 112 1000] [--out bench_results/kernels.json]

A CPU without AVX-512 can be imitated on this one: ``JEIRT_SIMD=avx2+fma OPENBLAS_CORETYPE=Haswell`` caps both the
Rust kernels and NumPy's OpenBLAS at AVX2 (and turns the bfloat16 rows off).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from jeirt_lite import _core, kernels

F32 = npt.NDArray[np.float32]


# The clock every measurement reads: wall time, or this process's CPU time (``--clock cpu``), which other jobs on
# a shared machine do not inflate; with one thread on both sides (``--threads 1``, ``OPENBLAS_NUM_THREADS=1``) it
# is the work each side does.
CLOCK: Callable[[], float] = time.perf_counter


def best_time(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """Minimum time of ``repeats`` calls on ``CLOCK``, and the last result (the previous one freed first)."""
    best, result = float("inf"), None
    for _ in range(repeats):
        result = None
        gc.collect()
        start = CLOCK()
        result = fn()
        best = min(best, CLOCK() - start)
    return best, result


def question_norms(q: F32) -> F32:
    norms: F32 = np.sqrt(np.einsum("ij,ij->i", q, q))
    return norms


def reference_logits(q: F32, m: F32) -> F32:
    """``q.m/|q| - |q|`` as NumPy would write it, in place after the matmul (zero rows not special-cased)."""
    norms = question_norms(q)[:, None]
    logits = q @ m.T
    logits /= norms
    logits -= norms
    return logits


def reference_probabilities(q: F32, m: F32) -> F32:
    p = reference_logits(q, m)
    np.negative(p, out=p)
    np.exp(p, out=p)
    p += 1.0
    np.reciprocal(p, out=p)
    return p


def reference_top1(q: F32, m: F32) -> tuple[npt.NDArray[np.intp], F32]:
    logits = reference_logits(q, m)
    idx = np.argmax(logits, axis=1)
    best = logits[np.arange(len(idx)), idx]
    del logits
    return idx, (1.0 / (1.0 + np.exp(-best))).astype(np.float32)


def reference_mean(q: F32, m: F32) -> npt.NDArray[np.float64]:
    mean: npt.NDArray[np.float64] = reference_probabilities(q, m).mean(axis=0, dtype=np.float64)
    return mean


def bench_one_k(
    q: F32, k: int, repeats: int, threads: int, rng: np.random.Generator, peaks: dict[str, float]
) -> list[dict[str, Any]]:
    n, d = q.shape
    m = (rng.standard_normal((k, d)) / np.sqrt(d) * 4.0).astype(np.float32)
    flops = 2.0 * n * k * d
    bare, _ = best_time(lambda: q @ m.T, repeats)
    rows: list[dict[str, Any]] = []

    def record(kernel: str, rust_s: float, ref_s: float, agreement: dict[str, float]) -> None:
        row = {
            "K": k,
            "kernel": kernel,
            "rust_s": rust_s,
            "numpy_reference_s": ref_s,
            "numpy_matmul_s": bare,
            "rust_pairs_per_s": n * k / rust_s,
            "rust_gflops": flops / rust_s / 1e9,
            "numpy_reference_gflops": flops / ref_s / 1e9,
            "numpy_matmul_gflops": flops / bare / 1e9,
            "speedup_vs_reference": ref_s / rust_s,
            "speedup_vs_matmul": bare / rust_s,
            # Useful flops over the measured multiply-add peak of the cores used (float32 FMA; the bf16 row
            # also over the bf16 peak).
            "fraction_of_fma_peak": flops / rust_s / 1e9 / peaks["float32"],
            "numpy_matmul_fraction_of_fma_peak": flops / bare / 1e9 / peaks["float32"],
            **agreement,
        }
        if "bfloat16" in kernel and "bfloat16" in peaks:
            row["fraction_of_bf16_peak"] = flops / rust_s / 1e9 / peaks["bfloat16"]
        rows.append(row)
        print(
            f"K={k:5d} {kernel:23s} rust {rust_s:8.3f}s ({row['rust_pairs_per_s'] / 1e9:6.2f} G pairs/s, "
            f"{row['rust_gflops']:6.1f} GFLOP/s) | numpy ref {ref_s:8.3f}s -> x{row['speedup_vs_reference']:5.2f}"
            f" | bare Q@M.T {bare:7.3f}s -> x{row['speedup_vs_matmul']:5.2f}"
            f" | {100 * row['fraction_of_fma_peak']:4.0f}% of FMA peak"
            + (f", {100 * row['fraction_of_bf16_peak']:4.0f}% of bf16 peak" if "fraction_of_bf16_peak" in row else ""),
            flush=True,
        )

    with np.errstate(over="ignore"):
        ref_s, (ref_idx, ref_p) = best_time(lambda: reference_top1(q, m), repeats)
        rust_s, (idx, p) = best_time(lambda: kernels.top_k(q, m, 1, threads=threads), repeats)
        record(
            "top_k(k=1)",
            rust_s,
            ref_s,
            {
                "top1_agreement": float(np.mean(idx[:, 0] == ref_idx)),
                "max_abs_prob_diff": float(np.max(np.abs(p[:, 0] - ref_p))),
            },
        )
        if _core.bf16_supported():
            rust_s, (idx, p) = best_time(
                lambda: kernels.top_k(q, m, 1, threads=threads, precision="bfloat16"), repeats
            )
            record(
                "top_k(k=1, bfloat16)",
                rust_s,
                ref_s,
                {
                    "top1_agreement": float(np.mean(idx[:, 0] == ref_idx)),
                    "max_abs_prob_diff": float(np.max(np.abs(p[:, 0] - ref_p))),
                },
            )
        del ref_idx, ref_p, idx, p

        ref_s, ref_mean = best_time(lambda: reference_mean(q, m), repeats)
        rust_s, mean = best_time(lambda: kernels.mean_probability(q, m, threads=threads), repeats)
        record("mean_probability", rust_s, ref_s, {"max_abs_diff": float(np.max(np.abs(mean - ref_mean)))})

        ref_s, ref_p = best_time(lambda: reference_probabilities(q, m), repeats)
        sample = ref_p[: min(n, 100_000)].copy()
        del ref_p
        rust_s, p = best_time(lambda: kernels.probabilities(q, m, threads=threads), repeats)
        record(
            "probabilities",
            rust_s,
            ref_s,
            {"max_abs_diff_first_100k_rows": float(np.max(np.abs(p[: len(sample)] - sample)))},
        )
        if _core.bf16_supported():
            exact = p[: len(sample)].copy()
            del p
            rust_s, p = best_time(
                lambda: kernels.probabilities(q, m, threads=threads, precision="bfloat16"), repeats
            )
            record(
                "probabilities(bfloat16)",
                rust_s,
                ref_s,
                {
                    "max_abs_diff_first_100k_rows": float(np.max(np.abs(p[: len(sample)] - sample))),
                    "max_abs_diff_to_float32_kernel": float(np.max(np.abs(p[: len(sample)] - exact))),
                },
            )
        del p, sample
    return rows


def blas_kernel() -> str | None:
    """The kernel family NumPy's OpenBLAS picked on this CPU (e.g. "Haswell" = AVX2, "SkylakeX" = AVX-512), which
    sets the bare matmul's speed; ``OPENBLAS_CORETYPE`` overrides the choice. None where it cannot be read."""
    try:
        import threadpoolctl
    except ImportError:
        return None
    kinds = {str(i.get("architecture")) for i in threadpoolctl.threadpool_info() if i.get("internal_api") == "openblas"}
    return ",".join(sorted(kinds)) or None


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=1_000_000, help="questions (rows of Q)")
    parser.add_argument("--d", type=int, default=256, help="vector dimension")
    parser.add_argument("--ks", type=int, nargs="+", default=[112, 1000], help="LLM counts K")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per measurement (best is kept)")
    parser.add_argument("--threads", type=int, default=0, help="Rust threads (0 = all cores)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--clock",
        choices=["wall", "cpu"],
        default="wall",
        help="wall time, or this process's CPU time (for --threads 1 with OPENBLAS_NUM_THREADS=1 on a busy machine)",
    )
    parser.add_argument("--out", type=Path, default=Path("bench_results/kernels.json"))
    args = parser.parse_args(argv)

    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    if _core.build_profile() != "release":
        sys.exit("refusing to benchmark a debug build of jeirt_lite._core: rebuild with --release")

    cores = os.cpu_count()
    print(
        f"jeirt_lite._core {_core.build_profile()}, simd {_core.simd_level()}, bf16 {_core.bf16_supported()}, "
        f"{cores} cores, numpy {np.__version__} (OpenBLAS kernel {blas_kernel()}); N={args.n} d={args.d} "
        f"K={args.ks} threads={args.threads} clock={args.clock}",
        flush=True,
    )
    rng = np.random.default_rng(args.seed)
    q = np.empty((args.n, args.d), dtype=np.float32)
    for start in range(0, args.n, 100_000):  # fill in slices: no float64 temporary of the full size
        block = q[start : start + 100_000]
        block[...] = rng.standard_normal(block.shape, dtype=np.float32)
    q *= np.float32(1.5 / np.sqrt(args.d))  # |q| ~ 1.5: logits of order 1, probabilities not saturated

    used = args.threads or cores or 1
    wall, cpu = time.perf_counter(), time.process_time()
    f32_peak, bf16_peak = _core.multiply_add_peak(0.3)  # one core, on the wall clock; times the cores used
    if args.clock == "cpu":  # the same loops on this process's CPU time
        busy = (time.perf_counter() - wall) / max(time.process_time() - cpu, 1e-9)
        f32_peak, bf16_peak = f32_peak * busy, (bf16_peak * busy if bf16_peak else None)
    peaks = {"float32": f32_peak * used, **({"bfloat16": bf16_peak * used} if bf16_peak else {})}
    print(f"measured multiply-add peak, {used} cores: " + ", ".join(f"{k} {v:.0f} GFLOP/s" for k, v in peaks.items()))
    results = []
    for k in args.ks:
        results.extend(bench_one_k(q, k, args.repeats, args.threads, rng, peaks))
    report = {
        "machine": {
            "cores": cores,
            "simd_level": _core.simd_level(),
            "bf16": _core.bf16_supported(),
            "openblas_kernel": blas_kernel(),
            "build_profile": _core.build_profile(),
            "numpy": np.__version__,
            "python": platform.python_version(),
            "processor": platform.processor() or platform.machine(),
            "load_average_at_end": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
            "measured_peak_gflops": peaks,
        },
        "params": {
            "n": args.n,
            "d": args.d,
            "ks": args.ks,
            "repeats": args.repeats,
            "threads": args.threads,
            "clock": args.clock,
        },
        "results": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(f"wrote {args.out}")
    return report


if __name__ == "__main__":
    main()
