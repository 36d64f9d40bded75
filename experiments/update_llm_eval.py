"""Adapting an LLM the router already holds to a user's questions from a few labelled answers, measured.

    python -m experiments.update_llm_eval --data data/zeroeval_crux_gsm_math --seeds 0-9 \
        --json docs/results/update_llm_zeroeval.json

For each LLM the shipped router and `--data` share (matched as in experiments/shared_llms_eval.py), draws a random
`--fraction` of its answers to `--data`'s questions, adapts the LLM from them, and scores its other answers: AUC,
log-loss, and the forecast's error per group of questions (`--data`'s benchmark column: |mean P(correct) − accuracy
found| over the scored answers of each group, then the mean over the groups). The methods, on the same draws:

* `shipped`: the router unchanged;
* `update`: `Router.update_llm`, a feature correction fitted on top of the LLM's current full logit z (its vector,
  neighbour votes and calibration kept): logit = s̄·z + f·w + b, weighted over add_llm's grid of router scales s and
  ridge strengths by each fit's cross-validated evidence, the grid holding "no change" (s = 1, no correction) as
  add_llm's holds the vector alone (jeirt_lite._update_llm), stored as the LLM's calibration and correction;
* `add_llm_current_prior`: add_llm's fit (vector and correction, `fit_onboarding`) with its prior centred on the
  LLM's current vector (votes and calibration dropped, as add_llm's new LLMs have none);
* `add_llm_new`: add_llm as if the LLM were new (prior: the mean of the router's LLM vectors);
* `logistic`: a per-LLM logistic regression on the router's features, fitted with the same care as add_llm's
  correction (experiments.onboarding_methods, care `same`).

`update` is paired with each other method draw by draw (mean ± standard error over LLM × seed).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from jeirt_lite import EncodedQuestions
from jeirt_lite._correction_grid import base_logits
from jeirt_lite._metrics import log_loss, roc_auc
from jeirt_lite._ridge import sigmoid

from experiments.onboarding_methods import fit_baseline, fit_method
from experiments.onboarding_tables import paired
from experiments.shared_llms_eval import shared_llms

METHODS = ("shipped", "update", "add_llm_current_prior", "add_llm_new", "logistic")
STATS = ("auc", "log_loss", "forecast_mae")


def current_logits(router: Any, q: np.ndarray, f: np.ndarray) -> np.ndarray:
    """(N, K) every LLM's full logit as the router scores it: calibration of (vector logit + votes + corrections)."""
    logits = np.stack([base_logits(q.astype(np.float64), m.astype(np.float64)) for m in router.llm_vectors], axis=1)
    offsets = router._offsets(q, f)
    if offsets is not None:
        logits = logits + offsets
    cal = router.calibration
    return logits if cal is None else logits * cal.scale.astype(np.float64) + cal.bias.astype(np.float64)


def forecast_mae(p: np.ndarray, y: np.ndarray, groups: np.ndarray) -> float:
    """The mean over the groups of |mean P(correct) − accuracy found| on the answers of each."""
    return float(np.mean([abs(p[groups == g].mean() - y[groups == g].mean()) for g in np.unique(groups)]))


def scored(p: np.ndarray, y: np.ndarray, groups: np.ndarray) -> dict[str, float]:
    p = np.clip(p, 1e-7, 1 - 1e-7)
    return {"auc": roc_auc(y, p), "log_loss": log_loss(y, p), "forecast_mae": forecast_mae(p, y, groups)}


def evaluate_draw(
    router: Any, name: str, z: np.ndarray, q: np.ndarray, f: np.ndarray, y: np.ndarray, groups: np.ndarray,
    given: np.ndarray, prior: np.ndarray, seed: int, flags: np.ndarray | None, learned: np.ndarray | None,
) -> dict[str, dict[str, float]]:
    """Every method fitted on the answers `given` (a bool mask over the LLM `name`'s answers) and scored on the
    others; `z`, `q`, `f`, `flags`, `learned`: its current logit and its answered questions' vectors, features,
    in-distribution and learned flags, one row per answer. `update` is `Router.update_llm` itself, scored by the
    updated router."""
    rest = ~given
    j = router.llms.index(name)
    updated = router.update_llm(name, EncodedQuestions(q[given], f[given]), y[given],
                                learned=None if learned is None else learned[given])
    p = {"shipped": sigmoid(z[rest]), "update": updated.predict_proba(EncodedQuestions(q[rest], f[rest]))[:, j]}
    vector = router.llm_vectors[j].astype(np.float64)
    sub = {name: None if v is None else v[given] for name, v in (("flags", flags), ("learned", learned))}
    for name, centre in (("add_llm_current_prior", vector), ("add_llm_new", prior)):
        scorer = fit_method("add_llm", q[given], f[given], y[given], centre, seed, sub["flags"], sub["learned"])
        p[name] = scorer(q[rest], f[rest])
    p["logistic"] = fit_baseline("logistic", f[given], y[given], seed, "same")[0](q[rest], f[rest])
    return {name: scored(values, y[rest], groups[rest]) for name, values in p.items()}


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Each method's mean scores, and `update` minus each other method draw by draw."""
    out: dict[str, Any] = {"draws": len(rows)}
    for method in METHODS:
        out[method] = {stat: float(np.mean([row[method][stat] for row in rows])) for stat in STATS}
    for method in METHODS[2:] + ("shipped",):
        out[f"update_minus_{method}"] = paired(rows, "update", method, STATS)
    return out


def evaluate(router: Any, data: Any, fraction: float, seeds: Sequence[int]) -> dict[str, Any]:
    from experiments.onboarding_methods import embed_with_router

    pairs = shared_llms(router.llms, data.llm_names)
    if not pairs:
        raise ValueError("the router and the data share no LLM")
    q, f = embed_with_router(router, list(data.texts))
    z_all = current_logits(router, q, f)
    flags = router.alignment(EncodedQuestions(q)).in_distribution if router.has_alignment else None
    learned = router.learned_from(list(data.texts))
    benchmarks = np.asarray(data.benchmarks).astype(str)
    prior = router.llm_vectors.mean(axis=0).astype(np.float64)
    cells, rows = data.responses, []
    for name, data_name in pairs.items():
        j = router.llms.index(name)
        mine = cells.llm == data.llm_names.index(data_name)
        questions, y = cells.question[mine], cells.correct[mine].astype(np.float64)
        for seed in seeds:
            order = np.random.default_rng(seed).permutation(len(y))
            given = np.zeros(len(y), dtype=bool)
            given[order[: max(2, round(fraction * len(y)))]] = True
            result = evaluate_draw(
                router, name, z_all[questions, j], q[questions], f[questions], y, benchmarks[questions], given,
                prior, seed,
                None if flags is None else flags[questions], None if learned is None else learned[questions],
            )
            rows.append({"llm": name, "seed": seed, "answers": int(given.sum()), **result})
    return {"summary": summary(rows), "rows": rows}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.update_llm_eval", description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="data folder with the shared LLMs' answers to other questions")
    ap.add_argument("--router", default="shipped", help="'shipped' or a router folder")
    ap.add_argument("--fraction", type=float, default=0.10, help="share of each LLM's answers given to adapt it")
    ap.add_argument("--seeds", default="0-9", help="draws: 'a-b' or a comma list")
    ap.add_argument("--json", type=Path, default=None, help="write the results here")
    args = ap.parse_args(argv)
    from jeirt_lite import Router
    from jeirt_lite_training.data import load_dataset

    first, _, last = args.seeds.partition("-")
    seeds = list(range(int(first), int(last) + 1)) if last else [int(s) for s in args.seeds.split(",")]
    router = Router.load(None if args.router == "shipped" else args.router, threads=1)
    data = load_dataset(args.data)
    result = evaluate(router, data, args.fraction, seeds)
    print(json.dumps(result["summary"], indent=1))
    if args.json is not None:
        router_name = args.router if args.router == "shipped" else Path(args.router).name  # no machine's path
        setup = {"data": Path(args.data).name, "router": router_name, "fraction": args.fraction, "seeds": seeds}
        args.json.write_text(json.dumps({"setup": setup, **result}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
