"""Does the Rust vote search change a router's accuracy on questions it never saw? Test AUC, log-loss and accuracy of
a router built with a test part kept out (`python -m scripts.build_default_router --holdout 0.2 --out DIR`), its
probabilities taken with the votes of the Rust search as the router runs it (coarse pass), of its exact path, of the
NumPy search (the reference, what `fit` chose the votes with) and without votes (the same calibration).

Needs the `train` extra (the router's test split is drawn again by jeirt_lite_training.router_split).
Usage: python benches/votes_holdout.py DIR [--data data/mmlu_pro]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import csv  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from jeirt_lite import Router, kernels  # noqa: E402
from jeirt_lite._metrics import log_loss, roc_auc  # noqa: E402
from jeirt_lite_training.router_split import router_test_question_ids  # noqa: E402


def _rows(path: Path) -> list[dict[str, str]]:
    csv.field_size_limit(1 << 30)
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_cells(router: Router, data: Path) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """(test texts, row of each answered cell, LLM column of it, 0/1 answer) for the router's test split."""
    ids, how = router_test_question_ids(router.manifest.to_json(), data)
    if ids is None:
        raise SystemExit(f"{router.path}: {how}")
    print(how)
    texts = {row["question_id"]: row["text"] for row in _rows(data / "questions.csv")}
    column = {}
    for row in _rows(data / "models.csv"):
        name = next((v for k, v in row.items() if k != "model_id" and v in router.llms), None)
        if name is not None:
            column[row["model_id"]] = router.llm_index(name)
    place = {str(q): i for i, q in enumerate(ids)}
    cells = [(place[r["question_id"]], column[r["model_id"]], int(r["correct"]))
             for r in _rows(data / "responses.csv") if r["question_id"] in place and r["model_id"] in column]
    rows, cols, answers = (np.array(v) for v in zip(*cells))
    return [texts[str(q)] for q in ids], rows, cols, answers


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("router", type=Path)
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[1] / "data" / "mmlu_pro")
    args = parser.parse_args(argv)
    router = Router.load(args.router, threads=1)
    votes, cal = router.neighbours, router.calibration
    if votes is None or cal is None:
        raise SystemExit(f"{router.path}: needs neighbour votes and a calibration")
    texts, rows, cols, answers = test_cells(router, args.data)
    vectors, features = router.encode(texts)
    assert features is not None
    n = len(texts)
    reference = votes.reference_sums(features)
    variants = {
        "Rust search (as the router runs it)": votes.offsets(features, router.llms, n),
        "Rust exact path": votes.offsets_from_sums(votes.sums(features, exact=True), router.llms, n),
        "NumPy search (reference)": votes.offsets_from_sums(reference, router.llms, n),
        "no votes": np.zeros((n, len(router.llms)), np.float32),
    }
    print(f"{n} test questions, {len(answers)} answered cells")
    for name, offsets in variants.items():
        p = kernels.probabilities(vectors, router.llm_vectors, threads=1, scale=cal.scale, bias=cal.bias,
                                  offsets=offsets)[rows, cols].astype(np.float64)
        print(f"  {name:36s} AUC {roc_auc(answers, p):.6f}  log-loss {log_loss(answers, p):.6f}  "
              f"accuracy {np.mean((p > 0.5) == answers):.6f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
