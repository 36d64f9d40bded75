"""CPU seconds per call of one kernel on one thread, for comparing two builds of the extension on a busy machine.

Times ``time.process_time()`` over ``--calls`` calls after one warm-up call, on float32 Gaussian arrays of the
shape ``bench_kernels.py`` uses. Run it with each build on ``PYTHONPATH`` (and ``OPENBLAS_NUM_THREADS=1`` for the
``matmul`` line), alternating, and compare.

Usage: python benches/kernel_cpu_time.py top_k [--precision bfloat16] [--n 100000] [--k 112] [--calls 10]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from jeirt_lite import kernels

KERNELS = ("top_k", "probabilities", "mean_probability", "matmul")


def main(argv: list[str] | None = None) -> float:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kernel", choices=KERNELS)
    parser.add_argument("--precision", choices=["float32", "bfloat16"], default="float32")
    parser.add_argument("--n", type=int, default=100_000, help="questions")
    parser.add_argument("--d", type=int, default=256, help="vector dimension")
    parser.add_argument("--k", type=int, default=112, help="LLMs")
    parser.add_argument("--calls", type=int, default=10, help="timed calls")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    q = rng.standard_normal((args.n, args.d), dtype=np.float32) * np.float32(1.5 / np.sqrt(args.d))
    m = (rng.standard_normal((args.k, args.d)) / np.sqrt(args.d) * 4.0).astype(np.float32)
    precision = {} if args.precision == "float32" else {"precision": args.precision}
    calls: dict[str, Callable[[], Any]] = {
        "top_k": lambda: kernels.top_k(q, m, 1, threads=1, **precision),
        "probabilities": lambda: kernels.probabilities(q, m, threads=1, **precision),
        "mean_probability": lambda: kernels.mean_probability(q, m, threads=1),
        "matmul": lambda: q @ m.T,
    }
    call = calls[args.kernel]
    call()
    start = time.process_time()
    for _ in range(args.calls):
        call()
    per_call = (time.process_time() - start) / args.calls
    print(f"{args.kernel} {args.precision} N={args.n} d={args.d} K={args.k}: {per_call:.4f} CPU s per call")
    return per_call


if __name__ == "__main__":
    main()
