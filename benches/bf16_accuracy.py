"""How far ``probabilities(..., precision="bfloat16")`` is from float32 on real questions with the shipped router.

For each public dataset (MMLU-Pro and zeroeval) it embeds every question with the shipped router and compares the
bfloat16 probabilities with the float32 kernel's, with and without the router's calibration: the largest absolute
difference, the share of entries more than 1e-3 apart, and the share of questions whose most likely LLM is the
same. The issue's bound is 1e-3 and 99.9%. The kernels' speed is ``bench_kernels.py``'s.

Usage: python benches/bf16_accuracy.py [--limit N] [--threads 2]
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path
from typing import Any

import numpy as np
from jeirt_lite import Router, kernels

DATA = Path(__file__).resolve().parents[1] / "data"
DATASETS = ("mmlu_pro", "zeroeval_crux_gsm_math")


def question_texts(folder: str, limit: int | None) -> list[str]:
    csv.field_size_limit(1 << 30)
    with open(DATA / folder / "questions.csv", newline="", encoding="utf-8") as handle:
        texts = [row["text"] for row in csv.DictReader(handle)]
    return texts[:limit] if limit else texts


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=None, help="first N questions of each dataset (default all)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    if not kernels.bf16_supported():
        print("this CPU has no AVX-512 BF16: precision='bfloat16' is the float32 kernel here")
    router = Router.load(threads=args.threads)
    m, cal = router.llm_vectors, router.calibration
    rows = []
    for folder in DATASETS:
        q = router.encode(question_texts(folder, args.limit), features=False).vectors
        for calibrated in (True, False):
            extra: dict[str, Any] = {"scale": cal.scale, "bias": cal.bias} if calibrated and cal else {}
            exact = kernels.probabilities(q, m, threads=args.threads, **extra)
            bf16 = kernels.probabilities(q, m, threads=args.threads, precision="bfloat16", **extra)
            diff = np.abs(bf16 - exact)
            row = {
                "data": folder,
                "questions": len(q),
                "llms": len(m),
                "calibrated": calibrated,
                "max_abs_diff": float(diff.max()),
                "share_over_1e-3": float(np.mean(diff > 1e-3)),
                "same_top1": float(np.mean(bf16.argmax(axis=1) == exact.argmax(axis=1))),
            }
            rows.append(row)
            print(
                f"{folder:24s} {len(q):6d} questions x {len(m)} LLMs, calibrated {calibrated!s:5s}: max |diff| "
                f"{row['max_abs_diff']:.2e}, over 1e-3 {row['share_over_1e-3']:.1e}, same top-1 {row['same_top1']:.4%}",
                flush=True,
            )
    return rows


if __name__ == "__main__":
    main()
