"""How close the Rust neighbour-vote search is to the NumPy search on real questions, with the shipped router.

For each public dataset (every MMLU-Pro and zeroeval question; MMLU-Pro's are the router's own stored questions,
zeroeval's are new to it) it encodes the questions with the shipped router and compares, against the NumPy
search of `_neighbours.neighbour_sums` (the reference, what training uses):

  * recall (routers with full-width keys, whose search has a coarse pass): the share of each question's true 2k
    nearest stored questions (by the NumPy float32 similarity) that
    the coarse pass keeps in its shortlist (computed here in NumPy with the same principal directions and
    shortlist size), and the share of questions whose whole true 2k are kept;
  * the search's CPU time per question (one thread): NumPy, the Rust coarse pass and the Rust exact path;
  * the router's final probabilities (calibration included) with the Rust votes, coarse pass and exact path,
    against the same with the NumPy votes: the largest absolute difference, the share of questions whose
    probabilities agree within 1e-6, and the share whose most likely LLM is the same.

The Rust exact path differs from NumPy only where two stored questions are within float32 rounding of each other
at an LLM's k-th neighbour. Usage: python benches/votes_accuracy.py [--limit N] [--candidates 768] [--dims 128]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import time  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
from bf16_accuracy import DATASETS, question_texts  # noqa: E402
from jeirt_lite import Router, kernels  # noqa: E402
from jeirt_lite._neighbours import (  # noqa: E402
    CANDIDATES_PER_K,
    COARSE_CANDIDATES,
    COARSE_DIMS,
    NeighbourVotes,
    coarse_projection,
    unit_rows,
)


def recall(votes: NeighbourVotes, features: np.ndarray, dims: int, candidates: int) -> tuple[float, float]:
    """(mean share of the true 2k kept, share of questions with all of them kept), in blocks of 512 queries."""
    keys = votes._unit_keys()
    projection = coarse_projection(keys, dims)
    coarse_keys = keys @ projection
    window = CANDIDATES_PER_K * votes.k
    shares = []
    for start in range(0, len(features), 512):
        q = unit_rows(features[start:start + 512])
        true = np.argpartition(-(q @ keys.T), window - 1, axis=1)[:, :window]
        kept = np.argpartition(-((q @ projection) @ coarse_keys.T), candidates - 1, axis=1)[:, :candidates]
        shares.extend(np.isin(t, k).mean() for t, k in zip(true, kept))
    return float(np.mean(shares)), float(np.mean(np.asarray(shares) == 1.0))


def final_probabilities(router: Router, vectors: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    cal = router.calibration
    assert cal is not None
    return kernels.probabilities(vectors, router.llm_vectors, threads=1, scale=cal.scale, bias=cal.bias,
                                 offsets=offsets)


def compare(router: Router, folder: str, limit: int | None, dims: int, candidates: int) -> dict[str, Any]:
    votes = router.neighbours
    assert votes is not None
    vectors, features = router.encode(question_texts(folder, limit))
    assert features is not None
    votes.kernel_table()  # built once per router (at first use), not timed
    started = time.process_time()
    sums, counts = votes.reference_sums(features)
    row: dict[str, Any] = {"data": folder, "questions": len(vectors),
                           "numpy_us_per_question": 1e6 * (time.process_time() - started) / len(vectors)}
    reference = final_probabilities(router, vectors, votes.offsets_from_sums((sums, counts), router.llms,
                                                                               len(vectors)))
    if not votes.short_space:  # a short space has no coarse pass: its first pass scores every component
        row["recall_of_true_2k"], row["share_all_2k_kept"] = recall(votes, features, dims, candidates)
    for name, exact in (("as run", False), ("exact", True)):
        started = time.process_time()
        found = votes.sums(features, exact=exact)
        spent = 1e6 * (time.process_time() - started) / len(vectors)
        got = final_probabilities(router, vectors, votes.offsets_from_sums(found, router.llms, len(vectors)))
        diff = np.abs(got - reference)
        row[name] = {"us_per_question": spent, "max_abs_diff": float(diff.max()),
                     "rows_within_1e-6": float(np.mean(diff.max(axis=1) <= 1e-6)),
                     "same_top1": float(np.mean(got.argmax(axis=1) == reference.argmax(axis=1)))}
    return row


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=None, help="first N questions of each dataset (default all)")
    parser.add_argument("--dims", type=int, default=COARSE_DIMS, help="principal directions (for the recall)")
    parser.add_argument("--candidates", type=int, default=COARSE_CANDIDATES, help="shortlist size (for the recall)")
    args = parser.parse_args(argv)
    router = Router.load(threads=1)
    rows = []
    for folder in DATASETS:
        row = compare(router, folder, args.limit, args.dims, args.candidates)
        rows.append(row)
        kept = ("short space, every key scored" if "recall_of_true_2k" not in row else
                f"true 2k kept {row['recall_of_true_2k']:.5f} (all kept for {row['share_all_2k_kept']:.2%})")
        print(f"{folder:24s} {row['questions']:6d} questions: {kept}; NumPy search "
              f"{row['numpy_us_per_question']:.0f} CPU-us per question", flush=True)
        for name in ("as run", "exact"):
            r = row[name]
            print(f"  Rust {name:6s} ({r['us_per_question']:.0f} CPU-us per question) vs NumPy: max |p diff| "
                  f"{r['max_abs_diff']:.2e}, rows within 1e-6 "
                  f"{r['rows_within_1e-6']:.2%}, same top-1 {r['same_top1']:.3%}", flush=True)
    return rows


if __name__ == "__main__":
    main()
