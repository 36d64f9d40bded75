"""Leave one group out: how much worse is JE-IRT on a benchmark/subject it never saw, and does the held-out
questions' directional alignment with the training questions predict the drop?

For each group g (a benchmark of zeroeval_crux_gsm_math, a subject of mmlu_pro): the in-distribution model is
trained on the usual train split (all groups); the out-of-distribution model on the same split without g's
questions. Both are scored on g's TEST cells (only LLMs with training cells in both runs). Alignment of g's test
questions is computed with each model's own training-question directions (jeirt_lite._alignment), and the
share flagged out of distribution uses a threshold set on that model's validation questions (5th percentile).

    python -m experiments.ood_eval --json docs/research/analysis_ood.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from jeirt_lite import _alignment as alignment
from jeirt_lite._metrics import all_metrics
from jeirt_lite.analysis._stats import spearman
from jeirt_lite_training.model import JeirtPredictor
from jeirt_lite_training.prepared import Prepared, prepare
from jeirt_lite_training.types import Responses, Split

from scripts.shipped import PUBLISHED_SCHEDULE

# JE-IRT hyper-parameters for every run (short runs: max_epochs, patience); the published runs' schedule.
SETTINGS: dict[str, Any] = dict(PUBLISHED_SCHEDULE)


def _fit(prep: Prepared, keep_question: np.ndarray) -> JeirtPredictor:
    train = prep.train.subset(keep_question[prep.train.question])
    val = prep.val.subset(keep_question[prep.val.question])
    return JeirtPredictor(**SETTINGS).fit(prep.embeddings, train, val, prep.data.n_llms)


def subsample(prep: Prepared, fraction: float, seed: int = 0) -> Prepared:
    """Keep a seeded `fraction` of each split part's questions (and their cells): shorter runs, same design."""
    if fraction >= 1.0:
        return prep
    rng = np.random.default_rng(seed)
    parts = {}
    for part in ("train", "val", "test"):
        rows = getattr(prep.split, part)
        parts[part] = np.sort(rng.choice(rows, max(1, int(round(fraction * len(rows)))), replace=False))
    split = Split(**parts)
    return replace(prep, split=split, train=split.responses(prep.data, "train"),
                   val=split.responses(prep.data, "val"), test=split.responses(prep.data, "test"))


def _scores(predictor: JeirtPredictor, prep: Prepared, train_q: np.ndarray, val_q: np.ndarray,
            cells: Responses, test_q: np.ndarray) -> dict[str, float]:
    p = predictor.predict_proba(prep.embeddings, cells.question, cells.llm)
    metrics = all_metrics(cells.correct, p)
    reference, center = alignment.reference_directions(predictor.question_vectors(prep.embeddings[train_q]))
    threshold = alignment.validation_threshold(predictor.question_vectors(prep.embeddings[val_q]), reference,
                                               center=center)
    result = alignment.align(predictor.question_vectors(prep.embeddings[test_q]), reference, threshold,
                             center=center)
    return {"auc": metrics["auc"], "accuracy": metrics["accuracy"], "log_loss": metrics["log_loss"],
            "alignment": float(np.mean(result.scores)), "flagged_ood": float(np.mean(~result.in_distribution)),
            "threshold": threshold}


def leave_one_out(data_dir: Path, by: str, fraction: float, only: list[str] | None) -> list[dict[str, Any]]:
    prep = subsample(prepare(data_dir, progress=False), fraction)
    groups = np.asarray(getattr(prep.data, by)).astype(str)
    everyone = np.ones(prep.data.n_questions, dtype=bool)
    t0 = time.perf_counter()
    in_dist = _fit(prep, everyone)
    print(f"{data_dir}: in-distribution model {time.perf_counter() - t0:.0f}s", file=sys.stderr)
    rows = []
    for group in sorted(set(groups.tolist())):
        if only and group not in only:
            continue
        t0 = time.perf_counter()
        outside = groups != group
        ood = _fit(prep, outside)
        test_q = prep.split.test[groups[prep.split.test] == group]
        cells = prep.test.subset(np.isin(prep.test.question, test_q))
        trained_llms = np.unique(prep.train.llm[outside[prep.train.question]])
        cells = cells.subset(np.isin(cells.llm, trained_llms))
        train_all, val_all = prep.split.train, prep.split.val
        row = {"dataset": prep.data.name, "group": group, "test_questions": len(test_q),
               "test_cells": len(cells)}
        row["id"] = _scores(in_dist, prep, train_all, val_all, cells, test_q)
        row["ood"] = _scores(ood, prep, train_all[outside[train_all]], val_all[outside[val_all]], cells, test_q)
        row["auc_drop"] = row["id"]["auc"] - row["ood"]["auc"]
        row["accuracy_drop"] = row["id"]["accuracy"] - row["ood"]["accuracy"]
        row["seconds"] = round(time.perf_counter() - t0, 1)
        print(f"  {group}: AUC {row['id']['auc']:.3f} -> {row['ood']['auc']:.3f}, alignment "
              f"{row['id']['alignment']:.3f} / {row['ood']['alignment']:.3f}, {row['seconds']}s", file=sys.stderr)
        rows.append(row)
    return rows


def raw_alignment(rows: list[dict[str, Any]], fractions: dict[str, float], datasets: str) -> None:
    """Adds, to each row, the alignment of the group's test questions with the other groups' training questions
    in the raw encoder space (no training: the same split and subsample as the runs)."""
    for item in datasets.split(","):
        folder, by = item.split(":")
        prep = subsample(prepare(Path("data") / folder, progress=False), fractions.get(folder, 1.0))
        groups = np.asarray(getattr(prep.data, by)).astype(str)
        for row in rows:
            if row["dataset"] != prep.data.name:
                continue
            train_q = prep.split.train[groups[prep.split.train] != row["group"]]
            test_q = prep.split.test[groups[prep.split.test] == row["group"]]
            reference, center = alignment.reference_directions(prep.embeddings[train_q])
            row["raw_alignment"] = float(np.mean(alignment.alignment_scores(prep.embeddings[test_q], reference,
                                                                            center=center)))


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def rel(subset: list[dict[str, Any]]) -> dict[str, float]:
        align = np.array([r["ood"]["alignment"] for r in subset])
        flagged = np.array([r["ood"]["flagged_ood"] for r in subset])
        extra = {}
        if all("raw_alignment" in r for r in subset):
            raw = np.array([r["raw_alignment"] for r in subset])
            extra["spearman_raw_alignment_vs_auc_drop"] = spearman(raw, np.array([r["auc_drop"] for r in subset]))
            extra["spearman_raw_alignment_vs_accuracy_drop"] = spearman(
                raw, np.array([r["accuracy_drop"] for r in subset]))
        return {"groups": len(subset), **extra,
                "spearman_flagged_share_vs_auc_drop": spearman(flagged, np.array([r["auc_drop"] for r in subset])),
                "spearman_alignment_vs_auc_drop": spearman(align, np.array([r["auc_drop"] for r in subset])),
                "spearman_alignment_vs_accuracy_drop": spearman(align,
                                                                np.array([r["accuracy_drop"] for r in subset]))}
    out = {"all": rel(rows)}
    for name in sorted({r["dataset"] for r in rows}):
        out[name] = rel([r for r in rows if r["dataset"] == name])
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--max-epochs", type=int, default=8, help="short runs (early stopping still applies)")
    parser.add_argument("--patience", type=int, default=2)
    parser.add_argument("--fraction", default="zeroeval_crux_gsm_math:1.0,mmlu_pro:0.3",
                        help="share of each dataset's questions used (seeded, per split part)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--datasets", default="zeroeval_crux_gsm_math:benchmarks,mmlu_pro:subjects",
                        help="comma-separated folder:grouping under data/")
    parser.add_argument("--only", default="", help="comma-separated group names (default: all)")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--summarise", type=Path, default=None, help="only recompute the relation of a result JSON")
    parser.add_argument("--add-raw-alignment", type=Path, default=None,
                        help="add raw-encoder alignment to the rows of a result JSON (in place) and re-summarise")
    args = parser.parse_args(argv)
    if args.summarise is not None:
        print(json.dumps(summarise(json.loads(args.summarise.read_text())["rows"]), indent=2))
        return 0
    if args.add_raw_alignment is not None:
        result = json.loads(args.add_raw_alignment.read_text())
        raw_alignment(result["rows"], result["fractions"], args.datasets)
        result["relation"] = summarise(result["rows"])
        args.add_raw_alignment.write_text(json.dumps(result, indent=2, default=float) + "\n", encoding="utf-8")
        print(json.dumps(result["relation"], indent=2))
        return 0
    torch.set_num_threads(args.threads)
    SETTINGS.update(max_epochs=args.max_epochs, patience=args.patience)
    fractions = {k: float(v) for k, v in (item.split(":") for item in args.fraction.split(","))}
    rows: list[dict[str, Any]] = []
    for item in args.datasets.split(","):
        folder, by = item.split(":")
        rows += leave_one_out(Path("data") / folder, by, fractions.get(folder, 1.0),
                              [g for g in args.only.split(",") if g] or None)
    result = {"settings": dict(SETTINGS), "fractions": fractions, "rows": rows, "relation": summarise(rows)}
    text = json.dumps(result, indent=2, default=float)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n", encoding="utf-8")
    print(json.dumps(result["relation"], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
