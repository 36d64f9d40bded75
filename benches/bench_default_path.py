"""The default path (the shipped router as it ships, neighbour votes on) beside the bare path (the same router
without its votes, `--no-neighbours`) and the model2vec + NumPy pipeline, in one run, rounds interleaved.

  * `score`: a CSV bank of real MMLU-Pro texts (repeated to `--rows`) scored to CSV, top-1
    (`jeirt_lite.batch.score_file`, what `jeirt-lite score bank.csv -o out.csv --threads N` runs), the default and
    the bare router in turn at each thread count: rows/s, default / bare, and each path's rate / its 1-thread rate;
  * text -> top-1 on one thread (`Router.route(texts, k=1)`): the default path, the bare path and the peer
    (benches/bench_static.py's model2vec pipeline over the router's own table and adapter): texts/s and
    default / peer.

Best and median rounds are printed with the core count and the load average. Nothing is asserted: on a machine
shared with other jobs read the ratios, not the rates. The peer needs `pip install model2vec==0.10.0` (the `bench`
extra); without it that row is skipped.

Usage: python benches/bench_default_path.py [--rows 100000] [--texts 2000] [--threads 1,2] [--rounds 3]
       [--out bench_results/default_path.json]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # NumPy's BLAS on one thread: the router's own threads are what is measured

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from bench_score_threads import write_bank  # noqa: E402
from bench_static import peer_pipeline, real_texts  # noqa: E402
from jeirt_lite import Router  # noqa: E402
from jeirt_lite.batch import ScoreOptions, score_file  # noqa: E402


def _summary(rates: list[float]) -> dict[str, float]:
    return {"best": max(rates), "median": statistics.median(rates)}


def score_rates(router_path: Path | None, rows: int, threads: list[int], rounds: int) -> dict[str, Any]:
    """rows/s of `score` for the default and the bare router at each thread count, rounds interleaved."""
    routers = {}
    for t in threads:
        default = Router.load(router_path, threads=t)
        if default.neighbours is None:
            raise SystemExit(f"{default.path}: this router has no neighbour votes, so it has no bare path to compare")
        routers[("default", t)], routers[("bare", t)] = default, default.with_neighbours(None)
    rates: dict[tuple[str, int], list[float]] = {key: [] for key in routers}
    with tempfile.TemporaryDirectory(prefix="bench-default-") as tmp:
        bank, out = Path(tmp) / "bank.csv", Path(tmp) / "scores.csv"
        write_bank(bank, rows)
        for _ in range(rounds):
            for (path, t), router in routers.items():
                summary = score_file(router, input_path=bank, output=out, options=ScoreOptions(k=1))
                rates[(path, t)].append(summary.rows / summary.seconds)
                print(f"  score, {path:7s} path, {t} threads: {rates[(path, t)][-1]:9,.0f} rows/s", flush=True)
    return {f"{path}@{t}": {**_summary(values), "rounds": values} for (path, t), values in rates.items()}


def route_rates(router_path: Path | None, count: int, rounds: int) -> dict[str, Any]:
    """texts/s of text -> top-1 on one thread: the default path, the bare path and the peer, rounds interleaved."""
    texts = real_texts(count)
    default = Router.load(router_path, threads=1)
    bare = default.with_neighbours(None)
    contestants: dict[str, Callable[[list[str]], Any]] = {
        "default": lambda t: default.route(t, k=1).indices[:, 0],
        "bare": lambda t: bare.route(t, k=1).indices[:, 0],
    }
    peer = peer_pipeline(default)
    if peer is not None:
        contestants["model2vec + NumPy"] = peer
    times: dict[str, list[float]] = {name: [] for name in contestants}
    for _ in range(rounds):
        for name, run in contestants.items():
            start = time.perf_counter()
            run(texts)
            times[name].append(time.perf_counter() - start)
    return {name: {**_summary([len(texts) / s for s in spent]), "texts": len(texts)} for name, spent in times.items()}


def report(scores: dict[str, Any], routes: dict[str, Any], threads: list[int]) -> None:
    base = threads[0]
    for t in threads:
        default, bare = scores[f"default@{t}"], scores[f"bare@{t}"]
        print(f"score, {t} threads: default {default['best']:9,.0f} rows/s (median {default['median']:9,.0f}), bare "
              f"{bare['best']:9,.0f} ({bare['median']:9,.0f}); default / bare {default['best'] / bare['best']:.2f}x "
              f"best, {default['median'] / bare['median']:.2f}x median")
        if t != base:
            one = scores[f"default@{base}"]
            print(f"  default path at {t} threads / at {base}: {default['best'] / one['best']:.2f}x best, "
                  f"{default['median'] / one['median']:.2f}x median")
    for name, rate in routes.items():
        print(f"text -> top-1, one thread, {name:18s} {rate['best']:9,.0f} texts/s (median {rate['median']:9,.0f})")
    if "model2vec + NumPy" in routes:
        peer, default = routes["model2vec + NumPy"], routes["default"]
        print(f"  default / peer: {default['best'] / peer['best']:.2f}x best, "
              f"{default['median'] / peer['median']:.2f}x median")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--router", type=Path, default=None, help="a router folder with votes (default: shipped)")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts for score")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None, help="also write the numbers as JSON")
    args = parser.parse_args(argv)
    threads = [int(t) for t in args.threads.split(",")]
    load_before = os.getloadavg()[0]
    scores = score_rates(args.router, args.rows, threads, args.rounds)
    routes = route_rates(args.router, args.texts, args.rounds)
    load_after = os.getloadavg()[0]
    print(f"{args.rows:,} rows and {args.texts:,} texts of MMLU-Pro, {args.rounds} interleaved rounds; "
          f"{os.cpu_count()} cores, load average {load_before:.1f} before, {load_after:.1f} after")
    report(scores, routes, threads)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        result = {"score": scores, "route": routes, "cores": os.cpu_count(), "load_average": [load_before, load_after]}
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
