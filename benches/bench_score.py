"""Benchmark `jeirt-lite score` end to end, as a subprocess, so each run's own peak RSS is measured.

Three runs by default:
  texts    real MMLU-Pro question texts (data/mmlu_pro/questions.csv) repeated to 10k rows, CSV in,
           Parquet out
  vectors  precomputed question vectors (`--vectors`) at 10k and 1M rows: the router's own embeddings of real
           texts, repeated (so norms and directions are realistic), .npy in, Parquet out

For each: rows/s, (LLM, question) pairs/s, wall time and peak RSS (os.wait4's ru_maxrss for that child only).
Peak RSS must not grow with the row count: the 1M/10k ratio is printed (about 1.0 means flat). Results go to
bench_results/score.json. Nothing is asserted about time (it depends on the machine and its load).

    python benches/bench_score.py                       # the router shipped in the package
    python benches/bench_score.py --router PATH --text-rows 2000 20000 --vector-rows 10000 1000000
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

import numpy as np

REPO = Path(__file__).resolve().parents[1]
QUESTIONS = REPO / "data" / "mmlu_pro" / "questions.csv"


def usable_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def real_texts(limit: Optional[int] = None) -> list[tuple[str, str]]:
    csv.field_size_limit(2**31 - 1)
    with open(QUESTIONS, newline="", encoding="utf-8") as handle:
        rows = [(row["question_id"], row["text"]) for row in csv.DictReader(handle)]
    return rows[:limit] if limit else rows


def write_text_bank(path: Path, rows: int) -> None:
    """Real questions repeated until `rows` rows; ids stay unique."""
    source = real_texts()
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "text"])
        for i in range(rows):
            question_id, text = source[i % len(source)]
            writer.writerow([f"{question_id}-{i // len(source)}", text])


def write_vector_bank(path: Path, rows: int, seed_vectors: np.ndarray) -> None:
    """`rows` question vectors: the seed embeddings repeated, written block by block (never all in memory)."""
    from numpy.lib import format as npy

    dim = seed_vectors.shape[1]
    block = np.tile(seed_vectors.astype(np.float32), (max(1, 65536 // len(seed_vectors)), 1))
    with open(path, "wb") as handle:
        npy.write_array_header_1_0(
            handle,
            {"descr": npy.dtype_to_descr(np.dtype(np.float32)), "fortran_order": False, "shape": (rows, dim)},
        )
        left = rows
        while left:
            part = block[: min(left, len(block))]
            handle.write(part.tobytes())
            left -= len(part)


def run_score(args: list[str]) -> dict[str, Any]:
    """Run `python -m jeirt_lite score ARGS`; wall time and this child's own peak RSS."""
    command = [sys.executable, "-m", "jeirt_lite", "score", *args]
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # wait4 reports this child's rusage alone; RUSAGE_CHILDREN would give the maximum over every child so far.
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    stdout, stderr = process.stdout.read(), process.stderr.read()  # type: ignore[union-attr]
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(
            f"{' '.join(command)} failed ({process.returncode}):\n{stderr.decode(errors='replace')}"
        )
    # The CLI's own summary times the scoring loop alone (read, encode, score, write), without interpreter
    # start, imports and router loading.
    summary = re.search(r"scored ([\d,]+) questions.* in ([\d.]+) s", stderr.decode(errors="replace"))
    if summary is None:
        raise SystemExit(f"no summary line in the output of {' '.join(command)}")
    return {
        "seconds": wall,
        "loop_seconds": float(summary.group(2)),
        "peak_rss_mb": usage.ru_maxrss / 1024,
        "cpu_seconds": usage.ru_utime + usage.ru_stime,
        "stdout": stdout.decode(errors="replace"),
    }


def measure(name: str, rows: int, n_llms: int, args: list[str]) -> dict[str, Any]:
    """One run. `rows_per_s` and `pairs_per_s` time the scoring loop (the CLI's summary line); the
    `_end_to_end` rate adds interpreter start, imports and router loading, which dominate small banks."""
    result = run_score(args)
    result.pop("stdout")
    loop = max(1e-9, result["loop_seconds"])
    entry = {
        "run": name,
        "rows": rows,
        "rows_per_s": rows / loop,
        "pairs_per_s": rows * n_llms / loop,
        "rows_per_s_end_to_end": rows / result["seconds"],
        **result,
    }
    print(
        f"{name:<18} {rows:>9,} rows  loop {loop:7.2f} s  {entry['rows_per_s']:>10,.0f} rows/s  "
        f"{entry['pairs_per_s']:>12,.0f} pairs/s  | process {result['seconds']:6.2f} s  "
        f"peak RSS {result['peak_rss_mb']:6.1f} MB",
        flush=True,
    )
    return entry


def parse_options() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--router", type=Path, default=None, help="router folder (default: the shipped router)"
    )
    parser.add_argument(
        "--text-rows",
        type=int,
        nargs="*",
        default=[10_000],
        help="row counts for runs on real texts; with two or more the RSS ratio last/first is printed "
        "too (default 10000; none to skip)",
    )
    parser.add_argument(
        "--vector-rows",
        type=int,
        nargs="+",
        default=[10_000, 1_000_000],
        help="row counts for --vectors runs; the RSS ratio is last/first (default 10000 1000000)",
    )
    parser.add_argument("--chunk-size", type=int, default=4096)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument(
        "--threads", type=int, default=None, help="--threads for the runs (default: all cores)"
    )
    parser.add_argument(
        "--format", choices=["parquet", "csv", "jsonl"], default="parquet", help="output format"
    )
    parser.add_argument("--output", type=Path, default=REPO / "bench_results" / "score.json")
    parser.add_argument(
        "--scratch", type=Path, default=None, help="folder for the generated banks (default: temp)"
    )
    return parser.parse_args()


def run_all(router: Any, options: argparse.Namespace, common: list[str]) -> list[dict[str, Any]]:
    """The startup run, the runs on real texts, on vectors and the forecast run, on banks written to a scratch
    folder (removed afterwards)."""
    n_llms = len(router.llms)
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(dir=options.scratch) as scratch_name:
        scratch = Path(scratch_name)
        out = scratch / f"scores.{options.format}"
        # A tiny run first: the fixed cost of starting Python, importing and loading the router.
        write_text_bank(scratch / "startup.csv", 10)
        runs.append(
            measure("startup (10 texts)", 10, n_llms, [str(scratch / "startup.csv"), "-o", str(out), *common])
        )
        for rows in options.text_rows:
            bank = scratch / f"texts-{rows}.csv"
            write_text_bank(bank, rows)
            runs.append(measure("texts", rows, n_llms, [str(bank), "-o", str(out), *common]))
            bank.unlink()
        seed = router.encode([text for _, text in real_texts(256)], features=False).vectors
        for rows in options.vector_rows:
            bank = scratch / f"vectors-{rows}.npy"
            write_vector_bank(bank, rows, seed)
            runs.append(measure("vectors", rows, n_llms, ["--vectors", str(bank), "-o", str(out), *common]))
            bank.unlink()
        forecast_bank = scratch / f"vectors-{options.vector_rows[-1]}.npy"
        write_vector_bank(forecast_bank, options.vector_rows[-1], seed)
        runs.append(
            measure(
                "vectors forecast",
                options.vector_rows[-1],
                n_llms,
                ["--vectors", str(forecast_bank), "--forecast", *common],
            )
        )
    return runs


def peak_rss_ratios(runs: list[dict[str, Any]]) -> dict[str, Optional[float]]:
    """Per kind of run, the peak RSS of its last run over its first (None with fewer than two), printed."""
    ratios: dict[str, Optional[float]] = {}
    for kind in ("texts", "vectors"):
        same = [run for run in runs if run["run"] == kind]
        ratios[kind] = same[-1]["peak_rss_mb"] / same[0]["peak_rss_mb"] if len(same) > 1 else None
        if ratios[kind] is not None:
            print(f"peak RSS {kind} {same[-1]['rows']:,} rows / {same[0]['rows']:,} rows: {ratios[kind]:.3f}")
    return ratios


def main() -> None:
    options = parse_options()

    from jeirt_lite import Router

    router = Router.load(options.router, threads=options.threads)
    n_llms = len(router.llms)
    common = [
        "--router",
        str(router.path),
        "--k",
        str(min(options.k, n_llms)),
        "--chunk-size",
        str(options.chunk_size),
    ]
    if options.threads is not None:
        common += ["--threads", str(options.threads)]
    print(
        f"router {router.path} ({n_llms} LLMs, d={router.dim}, label {router.manifest.get('label')!r}); "
        f"{usable_cores()} usable cores; threads {router.threads}",
        flush=True,
    )

    runs = run_all(router, options, common)
    ratios = peak_rss_ratios(runs)
    report = {
        "machine": {
            "cores": usable_cores(),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "router": {
            "path": str(router.path),
            "llms": n_llms,
            "dim": router.dim,
            "label": router.manifest.get("label"),
        },
        "settings": {
            "k": min(options.k, n_llms),
            "chunk_size": options.chunk_size,
            "threads": router.threads,
            "output_format": options.format,
        },
        "runs": runs,
        "peak_rss_ratio_vectors_last_over_first": ratios["vectors"],
        "peak_rss_ratio_texts_last_over_first": ratios["texts"],
    }
    options.output.parent.mkdir(parents=True, exist_ok=True)
    options.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {options.output}")


if __name__ == "__main__":
    main()
