"""Onboarding from answers given more than once: what holding out each question's answers together changes.

    python -m experiments.onboarding_repeats --data data/zeroeval_crux_gsm_math \
        --out docs/results/onboarding_repeats_zeroeval.json

An LLM sampled several times per question gives `add_llm` each question more than once. With folds drawn over
answers, a fold is scored on questions its fit read, so the cross-validation that weighs the feature correction
(and the AUC it reports) sees the fit's memory rather than its reach. The shipped router onboards every LLM of
`--data` from a random `--fraction` of its questions, each answer given `--repeats` times with its one label (a
greedy LLM asked again), under three folds: the answers once each (the reference), the repeated answers with each
question's answers held out together (add_llm's folds), and the repeated answers with folds over answers (the folds
before). Each is scored on the LLM's other questions (AUC per LLM, then the mean over LLMs and `--seeds`), beside
the cross-validated AUC the fit reports. Runtime package only (no torch).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
from jeirt_lite import EncodedQuestions, Router
from jeirt_lite._metrics import roc_auc
from jeirt_lite._onboard_router import with_new_llm
from jeirt_lite._onboarding import DEFAULT_L2
from jeirt_lite.analysis.data import read_response_folder

FOLDS = ("once", "grouped", "over answers")


def onboard(router: Router, encoded: EncodedQuestions, rows: np.ndarray, labels: np.ndarray, repeats: int,
            folds: str) -> Router:
    """The router with one new LLM fitted from the answers at `rows` (each `repeats` times unless `folds` is
    "once"); "over answers" gives every answer a fold key of its own."""
    times = 1 if folds == "once" else repeats
    picked = np.repeat(rows, times)
    vectors, features = encoded.vectors[picked], encoded.features[picked]
    groups = np.arange(picked.size) if folds == "over answers" else picked
    alignment = router.alignment(EncodedQuestions(vectors)) if router.has_alignment else None
    return with_new_llm(router, "new", vectors, labels[picked], features=features, l2=DEFAULT_L2, cost=None,
                        alignment=alignment, groups=groups)


def run(router: Router, data_dir: Path, fraction: float, repeats: int, seeds: list[int]) -> dict[str, Any]:
    data = read_response_folder(data_dir)
    encoded = router.encode(list(data.texts), features=True)
    rows_out: list[dict[str, Any]] = []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        for j, name in enumerate(data.llm_names):
            cells = np.flatnonzero(data.llm == j)
            questions, labels = data.question[cells], np.full(data.n_questions, -1.0)
            labels[questions] = data.correct[cells]
            order = rng.permutation(questions)
            cut = int(round(fraction * order.size))
            fit_rows, test_rows = order[:cut], order[cut:]
            if min(labels[fit_rows].sum(), (1 - labels[fit_rows]).sum()) < 5 or len(np.unique(labels[test_rows])) < 2:
                continue
            row: dict[str, Any] = {"llm": name, "seed": seed, "answers": int(fit_rows.size)}
            test = EncodedQuestions(encoded.vectors[test_rows], encoded.features[test_rows])
            for folds in FOLDS:
                grown = onboard(router, encoded, fit_rows, labels, repeats, folds)
                p = grown.predict_proba(test)[:, -1]
                record = grown.manifest["onboarded"][-1]
                row[folds] = {"test_auc": roc_auc(labels[test_rows], p), "cv_auc": record["cv_auc"],
                              "correction": record["correction"]}
            rows_out.append(row)
            print(name, seed, {f: round(row[f]["test_auc"], 4) for f in FOLDS}, file=sys.stderr)
    means = {f: {k: float(np.mean([r[f][k] for r in rows_out])) for k in ("test_auc", "cv_auc")} for f in FOLDS}
    return {"data": str(data_dir), "fraction": fraction, "repeats": repeats, "seeds": seeds, "draws": len(rows_out),
            "mean": means, "rows": rows_out}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--router", type=Path, default=None, help="default: the shipped router")
    parser.add_argument("--fraction", type=float, default=0.1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    router = Router.load(args.router, threads=1)
    result = run(router, args.data, args.fraction, args.repeats, [int(s) for s in args.seeds.split(",")])
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(result["mean"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
