"""Rows/s of `score --engine ray` with 1 and 2 workers against the single-machine path, on real MMLU-Pro texts.

    python benches/bench_ray.py [--rows N] [--router PATH]     # default: a tiny router built in code

Reports wall-clock rates measured in this run (Ray start-up excluded, each Dataset's pipeline start included) and
the ratio to the single-machine path; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=4000)
    parser.add_argument("--router", type=Path, default=None)
    args = parser.parse_args()
    import ray
    from jeirt_lite import Router
    from jeirt_lite.batch import ScoreOptions, score_file
    from jeirt_lite.ray import score_dataset

    scratch = Path(tempfile.mkdtemp())
    if args.router is None:
        sys.path.insert(0, str(REPO / "tests"))
        from tiny_router import build_tiny_router

        args.router = build_tiny_router(scratch / "tiny")
    csv.field_size_limit(1 << 30)
    with open(REPO / "data" / "mmlu_pro" / "questions.csv", newline="", encoding="utf-8") as handle:
        texts = [row["text"] for row in csv.DictReader(handle)][: args.rows]
    bank = scratch / "bank.parquet"
    # Row groups of 500: Ray splits a Parquet file into blocks by row group, so 2 workers get work.
    pq.write_table(pa.table({"id": list(range(len(texts))), "text": texts}), bank, row_group_size=500)

    started = time.perf_counter()
    score_file(Router.load(args.router, threads=1), input_path=bank, output=scratch / "local.parquet",
               options=ScoreOptions(k=2))
    local = len(texts) / (time.perf_counter() - started)
    print(f"cores {os.cpu_count()}, rows {len(texts)}, router {args.router}")
    print(f"single machine (1 thread): {local:,.0f} rows/s")
    for workers in (1, 2):
        ray.init(num_cpus=workers + 1, include_dashboard=False, log_to_driver=False)  # +1 CPU for the reads
        ray.data.DataContext.get_current().enable_progress_bars = False
        started = time.perf_counter()
        ds = ray.data.read_parquet(str(bank))
        rows = score_dataset(ds, args.router, k=2, batch_size=1024, concurrency=workers).count()
        rate = rows / (time.perf_counter() - started)
        print(f"ray, {workers} worker(s): {rate:,.0f} rows/s ({rate / local:.2f}x single machine)")
        ray.shutdown()


if __name__ == "__main__":
    main()
