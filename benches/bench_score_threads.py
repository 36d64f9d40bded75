"""`score` (texts in, top-k out) at 1, 2, ... threads on one bank of real texts, rounds interleaved, in one run.

The bank is MMLU-Pro's 10,801 question texts repeated to `--rows` rows (100,000 by default: each text about 9
times), written once as CSV; every round scores it with each thread count in turn through
`jeirt_lite.batch.score_file` (what `jeirt-lite score bank.csv -o out.csv --threads N` runs) and the output is
CSV. Prints rows/s per thread count (best and median round), the ratios to one thread, how many cores the run kept
busy on average (process CPU time over wall time: on a machine shared with other jobs it shows the share the
process got), the core count and the load average before and after. With `--rss-rows`, it also scores banks of
those sizes once each in a fresh process at the largest thread count and prints each one's peak resident memory
(flat memory means the same peak whatever the size). Never asserts a time.

Usage: python benches/bench_score_threads.py [--rows 100000] [--threads 1,2] [--rounds 3] [--router PATH]
       [--rss-rows 20000,100000]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from jeirt_lite import Router
from jeirt_lite.batch import ScoreOptions, score_file

REPO = Path(__file__).resolve().parents[1]


def write_bank(path: Path, rows: int) -> None:
    csv.field_size_limit(1 << 30)
    with open(REPO / "data" / "mmlu_pro" / "questions.csv", newline="", encoding="utf-8") as handle:
        texts = [row["text"] for row in csv.DictReader(handle)]
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "text"])
        for i in range(rows):
            writer.writerow([i, texts[i % len(texts)]])


SCORE_ONCE = """
import sys
from pathlib import Path
from jeirt_lite import Router
from jeirt_lite.batch import score_file
router = Router.load(None if sys.argv[3] == "-" else Path(sys.argv[3]), threads=int(sys.argv[4]))
score_file(router, input_path=Path(sys.argv[1]), output=Path(sys.argv[2]))
"""


def peak_rss(sizes: list[int], threads: int, router: Path | None) -> dict[str, float]:
    """Peak resident memory (MiB) of one fresh process scoring a bank of each size."""
    peaks: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-rss-") as tmp:
        for rows in sizes:
            bank, out = Path(tmp) / f"bank{rows}.csv", Path(tmp) / "scores.csv"
            write_bank(bank, rows)
            child = subprocess.Popen([sys.executable, "-c", SCORE_ONCE, str(bank), str(out),
                                      "-" if router is None else str(router), str(threads)])
            _, status, usage = os.wait4(child.pid, 0)
            if status != 0:
                raise SystemExit(f"scoring {rows:,} rows failed (status {status})")
            peaks[str(rows)] = usage.ru_maxrss / 1024  # kilobytes on Linux
            print(f"  {rows:9,} rows at {threads} threads: peak RSS {peaks[str(rows)]:,.0f} MiB", flush=True)
    return peaks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--k", type=int, default=1)
    parser.add_argument("--router", type=Path, default=None, help="router folder (default: the shipped one)")
    parser.add_argument("--out", type=Path, default=None, help="also write the numbers as JSON")
    parser.add_argument("--rss-rows", type=lambda v: [int(n) for n in v.split(",")], default=[],
                        help="comma-separated bank sizes whose peak memory to measure, one fresh process each")
    args = parser.parse_args(argv)
    counts = [int(t) for t in args.threads.split(",")]
    routers = {t: Router.load(args.router, threads=t) for t in counts}
    load_before = os.getloadavg()[0]
    rates: dict[int, list[float]] = {t: [] for t in counts}
    cores_used: dict[int, list[float]] = {t: [] for t in counts}  # CPU time / wall time of each run
    with tempfile.TemporaryDirectory(prefix="bench-score-") as tmp:
        bank, out = Path(tmp) / "bank.csv", Path(tmp) / "scores.csv"
        write_bank(bank, args.rows)
        for _ in range(args.rounds):
            for t in counts:
                cpu = time.process_time()
                summary = score_file(routers[t], input_path=bank, output=out, options=ScoreOptions(k=args.k))
                cpu = time.process_time() - cpu
                rates[t].append(summary.rows / summary.seconds)
                cores_used[t].append(cpu / summary.seconds)
                print(f"  threads {t}: {rates[t][-1]:,.0f} rows/s, {cpu:.2f} CPU-s, "
                      f"{cores_used[t][-1]:.2f} cores busy on average", flush=True)
    load_after = os.getloadavg()[0]
    fast = routers[counts[0]].fast_path
    print(f"{args.rows:,} MMLU-Pro texts (10,801 distinct, repeated), {args.rounds} interleaved rounds, "
          f"fast path {'on' if fast else 'off'}; {os.cpu_count()} cores, load average {load_before:.1f} before, "
          f"{load_after:.1f} after")
    base, base_median = max(rates[counts[0]]), statistics.median(rates[counts[0]])
    result: dict[str, Any] = {"rows": args.rows, "rounds": args.rounds, "cores": os.cpu_count(), "fast_path": fast,
                              "load_average": [load_before, load_after], "threads": {}}
    for t in counts:
        best, median = max(rates[t]), statistics.median(rates[t])
        print(f"  threads {t:3d}: best {best:9,.0f} rows/s, median {median:9,.0f}; best / 1-thread best "
              f"{best / base:.2f}x, median / 1-thread median {median / base_median:.2f}x")
        result["threads"][str(t)] = {"best_rows_per_s": best, "median_rows_per_s": median, "rounds": rates[t],
                                     "cores_busy": cores_used[t]}
    if args.rss_rows:
        result["peak_rss_mib"] = peak_rss(args.rss_rows, max(counts), args.router)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
