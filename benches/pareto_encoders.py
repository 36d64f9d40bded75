"""Speed against accuracy: each encoder variant × max sequence length on the held-out test split of data/mmlu_pro.

For every (variant, max length) a router folder is run in its own subprocess (so its peak RSS is its own: VmHWM) that
loads it with `Router.load`, embeds every test question once (timed: questions/s over the whole test split, texts
in file order) and writes P(correct) for all LLMs; the parent scores the observed test cells (AUC, accuracy,
log-loss; python/jeirt_lite/_metrics.py) and measures the folder's size. The split is the project's:
`jeirt_lite_training.splits.make_split(load_dataset("data/mmlu_pro"), seed=0)`.

A router at another max length is the same folder with `encoder.max_seq_length` changed (same graph, same
weights; the adapter was trained at the length its manifest first said).

    python benches/pareto_encoders.py --routers DIR                       # DIR from scripts.build_variants
    python benches/pareto_encoders.py --routers DIR --lengths 64,128,256 --static-lengths 128,256,512 --threads 1
    python benches/pareto_encoders.py --routers DIR --max-questions 500     # a fixed subset of the test questions

Writes bench_results/pareto.json and prints a Markdown table. Asserts nothing about time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from jeirt_lite import EncodedQuestions

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def worker(router_dir: Path, texts_file: Path, out_file: Path, threads: int) -> None:
    """In a fresh process: load, embed all texts (timed), write P(correct) and the timing."""
    from jeirt_lite import Router

    texts = json.loads(texts_file.read_text(encoding="utf-8"))
    router = Router.load(router_dir, threads=threads)
    router.encode(texts[:8], features=False)  # warm-up: first-run allocations are not part of the steady rate
    start = time.perf_counter()
    vectors = router.encode(texts, features=False).vectors
    seconds = time.perf_counter() - start
    np.save(out_file, router.predict_proba(EncodedQuestions(vectors)))
    info = {"seconds": seconds, "llms": list(router.llms), "peak_rss_mb": peak_rss_mb()}
    out_file.with_suffix(".json").write_text(json.dumps(info))


def peak_rss_mb() -> float:
    """This process's peak RSS. VmHWM belongs to the process's own memory map, unlike getrusage's ru_maxrss,
    which on Linux keeps the parent's RSS from before exec (vfork) and would charge the benchmark's pandas to
    every worker."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_worker(router_dir: Path, texts_file: Path, out_file: Path, threads: int) -> dict[str, Any]:
    command = [
        sys.executable,
        __file__,
        "--worker",
        str(router_dir),
        str(texts_file),
        str(out_file),
        "--threads",
        str(threads),
    ]
    subprocess.run(command, cwd=REPO, check=True)
    info = json.loads(out_file.with_suffix(".json").read_text())
    info["proba"] = np.load(out_file)
    return info


def folder_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.iterdir() if f.is_file()) / 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--routers", type=Path, help="folder holding fp32/, int8/, static/")
    parser.add_argument("--lengths", default="64,128,256", help="max lengths for the transformer variants")
    parser.add_argument("--static-lengths", default="128,256,512")
    parser.add_argument("--variants", default="fp32,int8,static")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--data", type=Path, default=REPO / "data" / "mmlu_pro")
    parser.add_argument(
        "--max-questions",
        type=int,
        default=0,
        help="a seeded subset of the test questions (0: all), same for all",
    )
    parser.add_argument("--out", type=Path, default=REPO / "bench_results" / "pareto.json")
    parser.add_argument("--worker", nargs=3, type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(*args.worker, threads=args.threads)
        return 0
    if args.routers is None:
        parser.error("--routers is required")

    from jeirt_lite._metrics import all_metrics
    from jeirt_lite_training.data import load_dataset
    from jeirt_lite_training.splits import make_split

    from scripts.build_variants import with_max_length

    dataset = load_dataset(args.data)
    split = make_split(dataset, seed=0)
    test_questions = np.asarray(split.test)
    if 0 < args.max_questions < len(test_questions):
        # One fixed subset for every variant, so their metrics stay comparable (cheaper on a slow machine).
        subset = np.random.default_rng(0).choice(len(test_questions), args.max_questions, replace=False)
        test_questions = np.sort(test_questions[subset])
    test = dataset.responses.subset(np.isin(dataset.responses.question, test_questions))
    row_of_question = {int(q): i for i, q in enumerate(test_questions)}
    rows = np.array([row_of_question[int(q)] for q in test.question])
    lengths = {
        "fp32": [int(x) for x in args.lengths.split(",")],
        "int8": [int(x) for x in args.lengths.split(",")],
        "static": [int(x) for x in args.static_lengths.split(",")],
    }
    results = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        texts_file = tmp / "texts.json"
        texts_file.write_text(json.dumps([dataset.texts[i] for i in test_questions]), encoding="utf-8")
        for variant in [v.strip() for v in args.variants.split(",") if v.strip()]:
            source = args.routers / variant
            if not (source / "router.json").is_file():
                print(f"skipping {variant}: no router at {source}")
                continue
            for max_length in lengths[variant]:
                folder = with_max_length(source, tmp / f"{variant}-{max_length}", max_length)
                info = run_worker(folder, texts_file, tmp / f"{variant}-{max_length}.npy", args.threads)
                columns = [info["llms"].index(name) for name in dataset.llm_names]
                p = info["proba"][:, columns][rows, test.llm]
                metrics = all_metrics(test.correct, p)
                row = {
                    "variant": variant,
                    "max_length": max_length,
                    "test_auc": metrics["auc"],
                    "test_accuracy": metrics["accuracy"],
                    "test_log_loss": metrics["log_loss"],
                    "questions_per_s": len(test_questions) / info["seconds"],
                    "artifact_mb": folder_mb(folder),
                    "peak_rss_mb": info["peak_rss_mb"],
                }
                results.append(row)
                print(json.dumps(row), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "test_questions": len(test_questions),
                "test_cells": len(test),
                "threads": args.threads,
                "cores": os.cpu_count(),
                "load_average_at_end": os.getloadavg(),
                "rows": results,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"\n{len(test_questions)} test questions, {len(test)} cells, {args.threads} thread(s)\n")
    print(
        "| encoder | max length | test AUC | test accuracy | test log-loss | questions/s | artifact MB | peak RSS MB |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(
            f"| {r['variant']} | {r['max_length']} | {r['test_auc']:.3f} | {r['test_accuracy']:.3f} | "
            f"{r['test_log_loss']:.3f} | {r['questions_per_s']:.1f} | {r['artifact_mb']:.1f} | {r['peak_rss_mb']:.0f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
