"""What neighbour votes cost: `Router.route(texts, k=1)` with the router's votes against the same router without
them (`with_neighbours(None)`), in one run, rounds interleaved, at each thread count asked for.

Prints texts/s (best round, and the median) and the ratio. Wall-clock numbers are reported, never asserted.

Usage: python benches/bench_neighbours.py [--router DIR] [--texts 2000] [--rounds 5] [--threads 1,2]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # numpy's BLAS on one thread: the router's own threads are what is measured

import argparse  # noqa: E402
import csv  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from jeirt_lite import Router  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _texts(count: int) -> list[str]:
    with open(REPO / "data" / "mmlu_pro" / "questions.csv", newline="", encoding="utf-8") as handle:
        rows = [row["text"] for row in csv.DictReader(handle)]
    return rows[:: max(1, len(rows) // count)][:count]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--router", type=Path, default=None, help="a router folder with votes (default: shipped)")
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", default="1", help="comma list of thread counts")
    args = parser.parse_args()
    texts = _texts(args.texts)
    print(f"{len(texts)} MMLU-Pro texts, {args.rounds} rounds, load average {os.getloadavg()[0]:.1f}, "
          f"{os.cpu_count()} cores")
    for threads in (int(t) for t in args.threads.split(",")):
        voting = Router.load(args.router, threads=threads)
        if voting.neighbours is None:
            raise SystemExit(f"{voting.path}: this router has no neighbour votes")
        plain = voting.with_neighbours(None)
        rates: dict[str, list[float]] = {"with votes": [], "without": []}
        for _ in range(args.rounds):
            for name, router in (("with votes", voting), ("without", plain)):
                start = time.perf_counter()
                router.route(texts, k=1)
                rates[name].append(len(texts) / (time.perf_counter() - start))
        for name, values in rates.items():
            print(f"threads {threads}  {name:<10}  best {max(values):9,.0f} texts/s   median "
                  f"{statistics.median(values):9,.0f}")
        print(f"threads {threads}  the votes cost {max(rates['without']) / max(rates['with votes']):.1f}x (best rounds)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
