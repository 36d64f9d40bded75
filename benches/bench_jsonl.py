"""Reading a JSONL bank against the same bank in CSV: the reader alone and `score` on one thread, rounds interleaved.

The bank: real MMLU-Pro question texts (data/mmlu_pro/questions.csv) repeated to `--rows`, distinct ids, columns
id, subject, text, written once as CSV (the csv module) and once as JSONL (`json.dumps`, one object a line).

  * reader: the texts and ids of every row through `TextReader` (what `score` reads with), CPU seconds;
  * score: `jeirt_lite.batch.score_file` of each file to CSV, top-1 (what `jeirt-lite score BANK -o out.csv
    --threads N` runs once the router is loaded), with the shipped router as it ships and without its votes
    (`--no-neighbours`), CPU seconds of the process and of the calling thread (with more than one thread the
    encoding runs on the pool, and the calling thread's reading, scoring and writing is what bounds the rate).

Best and median rounds and the JSONL / CSV ratios are printed; nothing is asserted. On a machine shared with other
jobs read the ratios, not the seconds.

Usage: python benches/bench_jsonl.py [--rows 200000] [--rounds 3] [--threads 1] [--no-score]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import csv  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from functools import partial  # noqa: E402
from pathlib import Path  # noqa: E402

from jeirt_lite import Router  # noqa: E402
from jeirt_lite._io.records import CsvRecords, JsonlRecords  # noqa: E402
from jeirt_lite._io.texts import TextReader  # noqa: E402
from jeirt_lite.batch import ScoreOptions, score_file  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def write_banks(folder: Path, rows: int) -> tuple[Path, Path]:
    csv.field_size_limit(1 << 30)
    with open(REPO / "data" / "mmlu_pro" / "questions.csv", newline="", encoding="utf-8") as handle:
        source = [(row["question_id"], row["subject"], row["text"]) for row in csv.DictReader(handle)]
    csv_path, jsonl_path = folder / "bank.csv", folder / "bank.jsonl"
    with open(csv_path, "w", newline="", encoding="utf-8") as table, open(jsonl_path, "w", encoding="utf-8") as lines:
        writer = csv.writer(table)
        writer.writerow(["id", "subject", "text"])
        for i in range(rows):
            question_id, subject, text = source[i % len(source)]
            row_id = f"{question_id}-{i // len(source)}"
            writer.writerow([row_id, subject, text])
            lines.write(json.dumps({"id": row_id, "subject": subject, "text": text}) + "\n")
    return csv_path, jsonl_path


def _cpu(run: Callable[[], object]) -> tuple[float, float]:
    """CPU seconds of `run`: the process's, the calling thread's."""
    start, start_thread = time.process_time(), time.thread_time()
    run()
    return time.process_time() - start, time.thread_time() - start_thread


def contestants(csv_path: Path, jsonl_path: Path, out: Path, threads: int | None) -> dict[str, Callable]:
    runs: dict[str, Callable] = {
        "reader, csv": lambda: sum(len(c.texts) for c in TextReader(csv_path, CsvRecords, "text", None, 4096, False)),
        "reader, jsonl": lambda: sum(
            len(c.texts) for c in TextReader(jsonl_path, JsonlRecords, "text", None, 4096, False)),
    }
    if threads:
        default = Router.load(None, threads=threads)
        for path_name, router in (("default", default), ("bare", default.with_neighbours(None))):
            for name, bank in (("csv", csv_path), ("jsonl", jsonl_path)):
                runs[f"score {path_name}, {name}"] = partial(score_file, router, input_path=bank, output=out,
                                                             options=ScoreOptions(k=1))
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="score's threads")
    parser.add_argument("--no-score", dest="score", action="store_false", help="the readers alone")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-jsonl-") as tmp:
        csv_path, jsonl_path = write_banks(Path(tmp), args.rows)
        runs = contestants(csv_path, jsonl_path, Path(tmp) / "scores.csv", args.threads if args.score else None)
        seconds: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
        for round_number in range(args.rounds):
            for name, run in runs.items():
                seconds[name].append(_cpu(run))
            print(f"round {round_number + 1}: " + ", ".join(f"{n} {s[-1][0]:.2f} ({s[-1][1]:.2f})"
                                                            for n, s in seconds.items()), flush=True)
    print(f"{args.rows:,} rows, score on {args.threads} threads, load average {os.getloadavg()[0]:.1f}; CPU seconds "
          "of the process, then of the calling thread: best (median), and / csv's in the same round")
    for name, spent in seconds.items():
        base = seconds[name.rsplit(", ", 1)[0] + ", csv"]
        for which, label in ((0, "process"), (1, "thread")):
            mine = [s[which] for s in spent]
            ratios = [a[which] / b[which] for a, b in zip(spent, base)]
            print(f"  {name:28s} {label:7s} {min(mine):6.2f} ({statistics.median(mine):6.2f})   / csv: median "
                  f"{statistics.median(ratios):.2f}x, range {min(ratios):.2f}-{max(ratios):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
