"""Onboarding new LLMs on questions like the router's that it never learned from, measured.

    python -m experiments.onboarding_like --seeds 3,4,5 --out docs/results/onboarding_like_kept_apart.json
    python -m experiments.onboarding_like --seeds 0,1,2 --out docs/results/onboarding_like.json

The regime between the two of experiments.onboarding_ood: there the new LLM's answers are either on another
dataset's questions (out of domain) or on the router's own training questions (in domain, where add_llm fits the
vector alone). Here they are on questions of the router's kind that it did not learn from, as a new benchmark of the
same subjects would be. data/mmlu_pro's 32 LLMs are dealt into `--groups` groups by training accuracy (each group
spans strong to weak); for each group JE-IRT (the published fixed setting, PUBLISHED_HYPER) over the MiniLM
transformer's embeddings is trained on split 0's training part without that group's LLMs. Each of them is then
onboarded from a random `--fractions` share of its answers to split 0's test questions and scored on its other test
answers. Compared on the same draws: add_llm as it ships, the ways of weighing its fits of
experiments.onboarding_weighting (`simplest`, `average`, `hybrid`, the averages with more prior on the vector
alone), the vector alone, and the per-LLM logistic regression on the same embeddings with the same care (single
best and evidence-weighted; the issue's baseline).
Needs the train extra (torch) for the question sides, trained once and cached.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np
from jeirt_lite._correction_grid import VECTOR_ALONE, like_the_routers_share
from jeirt_lite._metrics import log_loss, roc_auc
from jeirt_lite._ridge import sigmoid
from jeirt_lite_training.data import load_dataset
from jeirt_lite_training.splits import make_split
from jeirt_lite_training.types import Dataset

from .onboarding_methods import alignment_flags, cache_dir, fit_baseline, fit_method, minilm_features
from .onboarding_ood import _cells, train_question_side
from .onboarding_tables import paired, write_result
from .onboarding_weighting import _seeds, grid_draw, rule_weights

RULES = ("simplest", "average", "hybrid", "average_half_alone", "average_alone_0.9", "average_alone_0.99")
# add_llm (METHODS) is the product's own fit: since 2026-12-04 the `add_llm` rule of experiments.onboarding_weighting.
METHODS = ("vector", "add_llm", *RULES, "logistic", "logistic_average")


def llm_groups(data: Dataset, count: int) -> list[list[int]]:
    """The LLMs dealt into `count` groups in order of split 0's training accuracy: each group spans strong to weak."""
    train = make_split(data, seed=0).responses(data, "train")
    hits = np.bincount(train.llm, weights=train.correct, minlength=data.n_llms)
    accuracy = hits / np.maximum(np.bincount(train.llm, minlength=data.n_llms), 1)
    order = np.argsort(-accuracy, kind="stable")
    return [sorted(int(k) for k in order[g::count]) for g in range(count)]


def group_question_side(data: Dataset, f: np.ndarray, dropped: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(question vectors, prior mean LLM vector, in-distribution flags) of JE-IRT trained without `dropped`, cached."""
    path = cache_dir() / f"like-{data.name}-minilm-{'-'.join(map(str, dropped))}.npz"
    if path.is_file():
        with np.load(path) as run:
            return run["q"], run["prior"], run["flags"]
    predictor, _ = train_question_side(data, f, dropped)
    q, prior = predictor.question_vectors(f), predictor.llm_vectors.mean(axis=0)
    split = make_split(data, seed=0)
    flags = alignment_flags(q[split.train], q[split.val], q)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, q=q, prior=prior, flags=flags)
    return q, prior, flags


def _scores(y: np.ndarray, p: np.ndarray) -> dict[str, float]:
    p = np.clip(p, 1e-7, 1 - 1e-7)
    return {"auc": roc_auc(y, p), "log_loss": log_loss(y, p)}


def evaluate(q: np.ndarray, f: np.ndarray, prior: np.ndarray, flags: np.ndarray, given: np.ndarray, y: np.ndarray,
             scored: np.ndarray, y2: np.ndarray, seed: int) -> dict[str, Any]:
    """Every method fitted on the `given` questions' answers `y`, scored on the `scored` questions' `y2`."""
    held_out, test = grid_draw(q[given], f[given], y, prior, q[scored], f[scored], seed)
    like = bool(np.mean(flags[given]) >= like_the_routers_share(len(y)))
    row: dict[str, Any] = {"like_router": like, "in_distribution": float(np.mean(flags[given])),
                           "vector": _scores(y2, sigmoid(test[VECTOR_ALONE]))}
    for rule in RULES:
        weights = rule_weights(rule, y, held_out, like)
        row[rule] = _scores(y2, sigmoid(sum(w * test[c] for c, w in weights.items())))  # type: ignore[arg-type]
    unseen = np.zeros(len(given), dtype=bool)
    scorer = fit_method("add_llm", q[given], f[given], y, prior, seed, flags[given], unseen)
    row["add_llm"] = _scores(y2, scorer(q[scored], f[scored]))
    for name, care in (("logistic", "same"), ("logistic_average", "same_average")):
        baseline, chosen = fit_baseline("logistic", f[given], y, seed, care)
        row[name] = _scores(y2, baseline(q[scored], f[scored]))
        row[name]["chosen"] = {k: v for k, v in chosen.items() if k != "fits"}
    return row


def draws(data: Dataset, groups: int, fractions: list[float], seeds: list[int]) -> list[dict[str, Any]]:
    f = minilm_features(data.texts).astype(np.float64)
    test = make_split(data, seed=0).responses(data, "test")
    rows = []
    for dropped in llm_groups(data, groups):
        q, prior, flags = group_question_side(data, f, dropped)
        for llm in dropped:
            questions, y = _cells(test, llm)
            for fraction in fractions:
                n = max(2, round(fraction * len(y)))
                for seed in seeds:
                    order = np.random.default_rng(seed).permutation(len(y))
                    given, scored = order[:n], order[n:]
                    if len(set(y[given])) < 2 or len(set(y[scored])) < 2:
                        continue
                    row = evaluate(q, f, prior, flags, questions[given], y[given], questions[scored], y[scored], seed)
                    rows.append({"llm": data.llm_names[llm], "fraction": fraction, "seed": seed, "answers": n, **row})
            print(f"{data.llm_names[llm]}: {len(rows)} draws", file=sys.stderr, flush=True)
    return rows


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for fraction in sorted({row["fraction"] for row in rows}):
        group = [row for row in rows if row["fraction"] == fraction]
        out[f"{fraction:g}"] = {
            "draws": len(group),
            "like_router": int(sum(row["like_router"] for row in group)),
            "in_distribution": float(np.mean([row["in_distribution"] for row in group])),
            **{m: {s: float(np.mean([row[m][s] for row in group])) for s in ("auc", "log_loss")} for m in METHODS},
            **{f"{m}_minus_logistic": paired(group, m, "logistic") for m in METHODS if m != "logistic"},
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path("data/mmlu_pro"))
    parser.add_argument("--groups", type=int, default=4, help="LLM groups, each held out of one question side")
    parser.add_argument("--fractions", default="0.1", help="shares of an LLM's test answers given, e.g. 0.05,0.1,0.25")
    parser.add_argument("--seeds", required=True, help="draw seeds: 0,1,2 or 3-5")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    data = load_dataset(args.data)
    fractions = [float(x) for x in args.fractions.split(",")]
    rows = draws(data, args.groups, fractions, _seeds(args.seeds))
    result = {"setup": {"data": data.name, "groups": args.groups, "fractions": fractions, "seeds": args.seeds},
              "summary": summary(rows), "rows": rows}
    write_result(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
