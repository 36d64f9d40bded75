"""Adaptive question picks (experiments.suggest_questions) on real data: the same label budgets picked adaptively or
at random, then add_llm.

    python -m experiments.onboarding_suggest_eval --data data/zeroeval_crux_gsm_math --out docs/results/suggest_zeroeval_unlike.json
    python -m experiments.onboarding_suggest_eval --data data/mmlu_pro --train-on data/zeroeval_crux_gsm_math \
        --out docs/results/suggest_mmlu_pro_unlike.json
    python -m experiments.onboarding_suggest_eval --data data/mmlu_pro --held-out --out docs/results/suggest_mmlu_pro_like.json
    python -m experiments.onboarding_suggest_eval --data data/zeroeval_crux_gsm_math --held-out \
        --out docs/results/suggest_zeroeval_like.json

The question sides are those of experiments.onboarding_ood (unlike the router's questions: the shipped router, or
JE-IRT trained on the other dataset; like them: JE-IRT trained on the same dataset without the held-out LLMs).
For each new LLM its answered questions are split at random (seed 0): a pool the labels are bought from (the
held-out LLMs' training questions, in the like-setting) and the questions it is scored on (the rest; their test
questions). Each budget is bought at random (`--seeds` draws) or in 4 rounds of `suggest_indices` (answers revealed
between rounds); the LLM is then added both ways (`vector`: its vector alone; `add_llm`: with the feature
correction) and scored: mean AUC and log-loss.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
from jeirt_lite import Router
from jeirt_lite._metrics import log_loss, roc_auc
from jeirt_lite_training.data import load_dataset
from jeirt_lite_training.splits import make_split

from .onboarding_methods import fit_method
from .onboarding_ood import question_side
from .suggest_questions import suggest_indices

BUDGETS = (20, 50, 100, 200)
ROUNDS = 4
FITS = ("vector", "add_llm")


def adaptive_picks(pool_q: np.ndarray, y: np.ndarray, budget: int, prior: np.ndarray) -> np.ndarray:
    known: dict[int, int] = {}
    for size in np.diff(np.linspace(0, budget, ROUNDS + 1).round().astype(int)):
        for i in suggest_indices(pool_q, int(size), prior_mean=prior, known=known):
            known[int(i)] = int(y[i])
    return np.array(sorted(known), dtype=np.int64)


def _score(q: np.ndarray, f: np.ndarray, prior: np.ndarray, given: np.ndarray, yg: np.ndarray, scored: np.ndarray,
           ys: np.ndarray, flags: np.ndarray, learned: np.ndarray | None) -> dict[str, dict[str, float]]:
    out = {}
    for method in FITS:
        scorer = fit_method(method, q[given], f[given], yg, prior, 0, flags[given],
                            None if learned is None else learned[given])
        p = np.clip(scorer(q[scored], f[scored]), 1e-7, 1 - 1e-7)
        out[method] = {"auc": roc_auc(ys, p), "log_loss": log_loss(ys, p)}
    return out


def pools(data: Any, held_out: bool, dropped: list[int]) -> list[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """(llm, pool questions, pool answers, scored questions, scored answers) per new LLM."""
    out = []
    if held_out:
        split = make_split(data, seed=0)
        train, test = split.responses(data, "train"), split.responses(data, "test")
        for llm in dropped:
            a, b = train.llm == llm, test.llm == llm
            out.append((llm, train.question[a], train.correct[a], test.question[b], test.correct[b]))
        return out
    r = data.responses
    for llm in range(data.n_llms):
        rows = np.flatnonzero(r.llm == llm)
        order = np.random.default_rng(0).permutation(len(rows))
        half = len(rows) // 2
        pool, scored = rows[order[:half]], rows[order[half:]]
        out.append((llm, r.question[pool], r.correct[pool], r.question[scored], r.correct[scored]))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--train-on", type=Path, default=None)
    parser.add_argument("--held-out", action="store_true")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    data = load_dataset(args.data)
    router = Router.load(threads=1)
    q, f, prior, dropped, setup, flags, learned = question_side(router, data, args.train_on, args.held_out)
    rows = []
    for llm, pool, y_pool, scored, y_scored in pools(data, args.held_out, dropped):
        y_pool, y_scored = y_pool.astype(np.float64), y_scored.astype(np.float64)
        for budget in BUDGETS:
            if budget > len(pool) // 2:
                continue
            chosen = adaptive_picks(q[pool], y_pool, budget, prior)
            row: dict[str, Any] = {"llm": data.llm_names[llm], "budget": budget}
            row["adaptive"] = _score(q, f, prior, pool[chosen], y_pool[chosen], scored, y_scored, flags, learned)
            draws = [np.random.default_rng(s).choice(len(pool), budget, replace=False) for s in seeds]
            randoms = [_score(q, f, prior, pool[d], y_pool[d], scored, y_scored, flags, learned) for d in draws]
            row["random"] = {m: {k: float(np.mean([r[m][k] for r in randoms])) for k in ("auc", "log_loss")}
                             for m in FITS}
            rows.append(row)
    table: dict[str, Any] = {}
    for budget in BUDGETS:
        group = [r for r in rows if r["budget"] == budget]
        if group:
            table[str(budget)] = {
                f"{pick} {m} {k}": float(np.mean([r[pick][m][k] for r in group]))
                for pick in ("random", "adaptive") for m in FITS for k in ("auc", "log_loss")
            } | {"llms": len(group)}
    setup.update(seeds=seeds, budgets=list(BUDGETS), rounds=ROUNDS)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"setup": setup, "summary": table, "rows": rows}, indent=1) + "\n")
    print(json.dumps({"setup": setup, "summary": table}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
