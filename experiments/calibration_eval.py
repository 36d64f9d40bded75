"""ECE and reliability of a router's probabilities, raw and with its stored calibration, on the test questions it
never saw (a router built with a test part: `fit --holdout`, `scripts.build_default_router --holdout`).

    python -m experiments.calibration_eval --router ROUTER --data data/mmlu_pro

The test questions are drawn again from the data folder and the split the router's manifest records. With
neighbour votes the stored map was fitted on logit + weight · vote, so without it the votes are not weighed as
chosen: the raw row is then the geometry alone (no votes, no map). docs/research/calibration.md has the results.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from jeirt_lite import Router
from jeirt_lite._metrics import all_metrics, reliability_table
from jeirt_lite_training.data import load_dataset
from jeirt_lite_training.router_split import router_test_question_ids
from jeirt_lite_training.types import Responses

from .metrics_tables import reliability_markdown


def held_out_cells(router: Router, data_dir: Path) -> tuple[list[str], Responses]:
    """The texts and cells of the router's test split, questions numbered by their position in the texts."""
    ids, how = router_test_question_ids(router.manifest, data_dir)
    if not ids:
        raise SystemExit(f"no test questions to measure on: {how} (build the router with --holdout)")
    data = load_dataset(data_dir)
    if list(data.llm_names) != list(router.llms):
        raise SystemExit(f"{data_dir}'s LLMs are not the router's")
    rows = np.flatnonzero(np.isin(np.asarray(data.question_ids), ids))
    cells = data.responses.subset(np.isin(data.responses.question, rows))
    position = np.full(data.n_questions, -1, dtype=np.int64)
    position[rows] = np.arange(len(rows))
    return [data.texts[i] for i in rows], Responses(position[cells.question], cells.llm, cells.correct)


def raw_and_calibrated(router: Router, texts: list[str], cells: Responses) -> dict[str, np.ndarray]:
    """Each cell's probability, by the name of its row: the raw model first, then the router as written."""
    votes = router.neighbours is not None
    plain = router.with_neighbours(None) if votes else router
    kind = router.manifest["calibration"]["kind"]
    raw = "raw model, the geometry alone (no votes)" if votes else "raw model"
    written = f"{kind} temperature + bias (stored, fitted on held-out predictions)" + (
        ", with the neighbour votes" if votes else "")
    return {
        raw: plain.without_calibration().predict_proba(texts)[cells.question, cells.llm].astype(np.float64),
        written: router.predict_proba(texts)[cells.question, cells.llm].astype(np.float64),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="ECE and reliability of a router's probabilities, raw and with its stored calibration, on the "
        "test questions it never saw (a router built with --holdout)"
    )
    parser.add_argument("--router", type=Path, required=True, help="router folder trained with a test part")
    parser.add_argument("--data", type=Path, required=True, help="the data folder it was trained on")
    args = parser.parse_args(argv)
    router = Router.load(args.router, threads=1)
    if router.calibration is None:
        raise SystemExit(f"{args.router} stores no calibration")
    texts, cells = held_out_cells(router, args.data)
    rows = raw_and_calibrated(router, texts, cells)
    scale, bias = np.asarray(router.calibration.scale), np.asarray(router.calibration.bias)
    print(f"{router.manifest['calibration']['kind']}: scale {scale.min():.3f}..{scale.max():.3f}, "
          f"bias {bias.min():.3f}..{bias.max():.3f}")
    print(f"\ntest split, {len(texts)} questions, {len(cells)} cells\n")
    print("| probabilities | ECE | log-loss | Brier | AUC |\n|---|---:|---:|---:|---:|")
    for name, p in rows.items():
        m = all_metrics(cells.correct, p)
        print(f"| {name} | {m['ece']:.3f} | {m['log_loss']:.3f} | {m['brier']:.3f} | {m['auc']:.3f} |")
    for name, p in rows.items():
        print(f"\nreliability, {name}:\n")
        print(reliability_markdown(reliability_table(cells.correct, p)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
