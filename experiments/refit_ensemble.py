"""Would `fit`'s router gain from averaging several refits that differ only in their seed?

    python -m experiments.refit_ensemble --data DIR --seeds 0,1,2,3,4 --members 4 --out FILE.json

On each comparison split (the test part of `experiments.compare --seed S`, the same questions as
`fit --holdout 0.2 --split-seed S --seed S`), `fit` runs as it does (its choice, folds, refit, neighbour votes and
calibration: member 0 is the comparison's `JE-IRT fit` row); then the chosen setting is refitted on the same cells for
the same schedule with seeds S + 1000·k, k = 1 .. members − 1. The ensemble of the first k refits averages their
geometry logits, then adds member 0's neighbour votes and calibration (fitted on single runs' held-out predictions,
as a build of the ensemble would refit them on several). Such an average is one JE-IRT geometry of width k·d
(docs/research/encoders.md, "Ensembles of routers"), and on a transformer router its extra adapters cost next to
nothing beside the encoder: this measures whether it would pay. `--fit-args` passes options to fit (e.g. "--folds 1");
with `--encoder static` the extra refits read member 0's fine-tuned table, frozen.

Writes one JSON: per split the test metrics of each member and of the ensembles of 2 .. members, fit's choice and
the seconds spent; and the paired differences (ensemble − member 0) over the splits.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

# Each metric, and whether higher is better.
METRICS = {"auc": True, "log_loss": False, "accuracy": True, "ece": False}


def seed_refits(result: Any, cells: Any, n_llms: int, members: int, seed: int) -> list[Any]:
    """`members` − 1 more refits of `result`'s chosen setting and schedule on `cells`, seeds seed + 1000·k."""
    from jeirt_lite_training.choose import refit

    selection = result.selection
    reseeded = [replace(selection, hyper={**selection.hyper, "seed": seed + 1000 * k}) for k in range(1, members)]
    return [refit(result.embeddings, cells, n_llms, s) for s in reseeded]


def ensemble_logits(result: Any, extra: Sequence[Any], question: np.ndarray, llm: np.ndarray) -> list[np.ndarray]:
    """Per k = 1 .. 1 + len(extra): the router's logit (before calibration) with its geometry replaced by the mean
    of its own and the first k − 1 extra refits' geometry logits; the neighbour votes added unchanged."""
    votes = result.logits(question, llm) - result.logits(question, llm, votes=False)
    geometry = [result.logits(question, llm, votes=False)]
    geometry += [p.predict_logits(result.embeddings, question, llm) for p in extra]
    return [np.mean(geometry[:k], axis=0) + votes for k in range(1, len(geometry) + 1)]


def run_split(data: Any, split_seed: int, members: int, threads: int, fit_args: Sequence[str],
              test_fraction: float = 0.2) -> dict[str, Any]:
    from jeirt_lite._metrics import all_metrics
    from jeirt_lite_training.pipeline import cells_of
    from jeirt_lite_training.splits import make_split

    from .compare_fit import FitRun, _calibrated

    split = make_split(data, seed=split_seed, test_fraction=test_fraction)
    run = FitRun(data, split_seed, test_fraction=test_fraction, threads=threads, extra=fit_args)
    t0 = time.perf_counter()
    run.fit(None, split.responses(data, "train"), split.responses(data, "val"), data.n_llms)
    t1 = time.perf_counter()
    pool = np.sort(np.concatenate([split.train, split.val]))
    extra = seed_refits(run.result, cells_of(data, pool), data.n_llms, members, split_seed)
    t2 = time.perf_counter()
    test = run.prep.test
    rows = []
    for z in ensemble_logits(run.result, extra, test.question, test.llm):
        m = all_metrics(test.correct, _calibrated(z, test.llm, run.calibration))
        rows.append({key: float(m[key]) for key in METRICS})
    return {"split_seed": split_seed, "chosen": run.selection["chosen"], "folds": run.selection["folds"],
            "schedule_epochs": len(run.result.selection.schedule), "fit_seconds": t1 - t0, "refit_seconds": t2 - t1,
            "member": rows[0], "ensembles": {str(k): rows[k - 1] for k in range(2, members + 1)}}


def paired(splits: list[dict[str, Any]], members: int) -> dict[str, Any]:
    """Ensemble of k minus member 0 over the splits: mean, sd and how many splits the ensemble is better on."""
    out: dict[str, Any] = {}
    for k in range(2, members + 1):
        out[str(k)] = {}
        for key, higher_better in METRICS.items():
            d = np.array([s["ensembles"][str(k)][key] - s["member"][key] for s in splits])
            better = int((d > 0).sum() if higher_better else (d < 0).sum())
            out[str(k)][key] = {"mean": float(d.mean()), "sd": float(d.std(ddof=1)) if len(d) > 1 else 0.0,
                                "better": better, "splits": len(d)}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.refit_ensemble", description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="data folder")
    ap.add_argument("--seeds", default="0,1,2,3,4", help="comparison split seeds")
    ap.add_argument("--members", type=int, default=4, help="refits in the largest ensemble (at least 2)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--fit-args", default="", help="options passed to fit, one string")
    ap.add_argument("--out", type=Path, required=True, help="JSON file to write")
    args = ap.parse_args(argv)
    if args.members < 2:
        ap.error(f"--members must be at least 2, got {args.members}")
    import torch
    from jeirt_lite_training.data import load_dataset

    torch.set_num_threads(args.threads)
    data = load_dataset(args.data)
    splits = []
    for seed in (int(s) for s in args.seeds.split(",")):
        splits.append(run_split(data, seed, args.members, args.threads, shlex.split(args.fit_args)))
        print(json.dumps({"split_seed": seed, "member": splits[-1]["member"],
                          "ensemble": splits[-1]["ensembles"][str(args.members)]}), flush=True)
    args.out.write_text(json.dumps({"data": Path(args.data).name, "members": args.members, "fit_args": args.fit_args,
                                    "splits": splits, "paired": paired(splits, args.members)}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
