"""Rows/s of `score --engine ray` with 1 and 2 workers against the single-machine path, on real MMLU-Pro texts.

    python benches/bench_ray.py [--rows N] [--router PATH] [--tiny]   # default: the shipped router
    python benches/bench_ray.py --address auto --workers 1,4,16 --scratch /shared/tmp --router /shared/router
                                                                       # on a running cluster (docs/guide/ray.md)

Each path scores a small and a large bank (default 1,000 and 10,000 rows). Reports the end-to-end rate, the steady
rate (from the difference of the two runs) with its ratio to the single-machine path, and the start-up time that
remains (Ray's runtime start excluded; actor start and router load included). Asserts nothing about time.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10000)
    parser.add_argument("--router", type=Path, default=None)
    parser.add_argument("--tiny", action="store_true", help="a tiny router built in code (measures overhead)")
    parser.add_argument("--address", default=None, help="an existing Ray cluster (default: a local runtime)")
    parser.add_argument("--workers", default="1,2", help="comma list of worker counts to measure")
    parser.add_argument("--scratch", type=Path, default=None,
                        help="where the test banks go; on a cluster, a folder every node can read")
    args = parser.parse_args()
    worker_counts = [int(w) for w in args.workers.split(",")]
    import ray
    from jeirt_lite import Router
    from jeirt_lite.batch import ScoreOptions, score_file
    from jeirt_lite.ray_engine import score_dataset

    scratch = Path(tempfile.mkdtemp(dir=args.scratch))
    if args.router is None and not args.tiny:
        from jeirt_lite._router import DEFAULT_ROUTER_PATH

        args.router = DEFAULT_ROUTER_PATH
    if args.router is None:
        sys.path.insert(0, str(REPO / "tests"))
        from tiny_router import build_tiny_router

        args.router = build_tiny_router(scratch / "tiny")
    csv.field_size_limit(1 << 30)
    with open(REPO / "data" / "mmlu_pro" / "questions.csv", newline="", encoding="utf-8") as handle:
        texts = [row["text"] for row in csv.DictReader(handle)][: args.rows]
    small = min(1000, len(texts) // 4)
    banks = {}
    for n in (small, len(texts)):
        banks[n] = scratch / f"bank{n}.parquet"
        # One row group, as a big export usually is: score_dataset re-blocks it so that both workers get work.
        pq.write_table(pa.table({"id": list(range(n)), "text": texts[:n]}), banks[n])
    print(f"cores {os.cpu_count()}, rows {small} and {len(texts)}, router {args.router}")

    def single_machine(n: int) -> None:
        score_file(Router.load(args.router, threads=1), input_path=banks[n], output=scratch / "local.parquet",
                   options=ScoreOptions(k=2))

    local = report("single machine (1 thread)", single_machine, small, len(texts))
    for workers in worker_counts:
        if args.address:
            ray.init(address=args.address, include_dashboard=False, log_to_driver=False)
        else:  # +1 CPU for the read tasks
            ray.init(num_cpus=workers + 1, include_dashboard=False, log_to_driver=False)
        ray.data.DataContext.get_current().enable_progress_bars = False

        def on_ray(n: int, workers: int = workers) -> None:
            ds = ray.data.read_parquet(str(banks[n]))
            assert score_dataset(ds, args.router, k=2, batch_size=1024, concurrency=workers).count() == n

        report(f"ray, {workers} worker(s)", on_ray, small, len(texts), local)
        ray.shutdown()


def report(label: str, run: Callable[[int], None], small: int, large: int, reference: float = 0.0) -> float:
    """Times `run` on a small and a large bank: the difference gives the steady rate, the rest the start-up.

    One untimed run first: the first Dataset on a fresh Ray runtime also pays for starting its worker processes.
    """
    run(small)
    seconds = {}
    for n in (small, large):
        started = time.perf_counter()
        run(n)
        seconds[n] = time.perf_counter() - started
    steady = (large - small) / (seconds[large] - seconds[small])
    startup = seconds[small] - small / steady
    versus = f", {steady / reference:.2f}x single machine" if reference else ""
    print(f"{label}: {large / seconds[large]:,.0f} rows/s end to end on {large} rows; "
          f"steady {steady:,.0f} rows/s{versus}; start-up {startup:.1f} s")
    return steady

if __name__ == "__main__":
    main()
