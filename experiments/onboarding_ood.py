"""Onboarding new LLMs on questions unlike the router's (out of domain) and like them (in domain), measured.

    python -m experiments.onboarding_ood --data data/zeroeval_crux_gsm_math --out docs/results/onboarding_ood_to_zeroeval.json
    python -m experiments.onboarding_ood --data data/mmlu_pro --train-on data/zeroeval_crux_gsm_math \
        --out docs/results/onboarding_ood_to_mmlu_pro.json
    python -m experiments.onboarding_ood --data data/mmlu_pro --held-out --out docs/results/onboarding_in_domain.json
    python -m experiments.onboarding_ood --encoder minilm --data data/zeroeval_crux_gsm_math --train-on data/mmlu_pro \
        --out docs/results/onboarding_ood_minilm_to_zeroeval.json

Out of domain (the first two): a router's question side, either the shipped router (trained on MMLU-Pro) or
JE-IRT trained on `--train-on` (split seed 0, the published fixed setting PUBLISHED_HYPER, over the shipped encoder's
features), onboards every LLM of `--data` from a random `--fraction` of its answers to `--data`'s questions and is
scored on its other answers (AUC per LLM, then the mean; `--seeds` draws). In domain (`--held-out`): JE-IRT trained
on `--data` without its held-out LLMs (experiments.onboarding_runs.held_out_llms, split seed 0) onboards them from a
fraction of their TRAINING answers and is scored on their TEST answers, at every fraction of docs/research/onboarding.md.
Every method of experiments.onboarding_methods gets the same answers. `--encoder` picks the features the correction
and the baselines read (and JE-IRT is trained over): the router's encoder (static, the default) or the MiniLM
transformer's embeddings (minilm, which needs `--train-on` or `--held-out`). `--baseline-features minilm` has the
baselines read the MiniLM transformer's embeddings whatever the correction reads (the kept-back comparison's
baseline features), `--in-distribution-only` draws only from the questions the router counts as in distribution
(where add_llm's rule for the router's own kind applies), and `--logistic-care` how carefully the logistic
regression is fitted
(experiments.onboarding_methods.LOGISTIC_CARES); the defaults give the published rows. Each row records the setting
each baseline's cross-validation chose (`chosen`). Needs the train extra (torch) for the runs.

    python -m experiments.onboarding_ood --data data/zeroeval_crux_gsm_math --baseline-features minilm \
        --logistic-care same --out docs/results/onboarding_ood_to_zeroeval_minilm_baselines.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from jeirt_lite import EncodedQuestions, Router
from jeirt_lite._metrics import log_loss, roc_auc
from jeirt_lite_training.data import load_dataset
from jeirt_lite_training.splits import make_split
from jeirt_lite_training.types import Dataset, Responses

from .onboarding_methods import (
    LOGISTIC_CARES,
    METHODS,
    alignment_flags,
    cache_dir,
    embed_with_router,
    fit_baseline,
    fit_method,
    learned_flags,
    minilm_features,
)
from .onboarding_tables import paired

IN_DOMAIN_FRACTIONS = (0.01, 0.05, 0.10, 0.25, 1.0)
BASELINES = ("logistic", "knn")
BASELINE_FEATURES = ("encoder", "minilm")


@dataclass(frozen=True)
class Baselines:
    """What the baselines read: `features` per question of the data (None: the features the correction reads) and
    the logistic regression's `care` (experiments.onboarding_methods.LOGISTIC_CARES)."""

    features: np.ndarray | None = None
    care: str = "published"


def train_question_side(data: Dataset, features: np.ndarray, dropped: list[int]) -> tuple[Any, list[int]]:
    """JE-IRT (the published fixed setting, PUBLISHED_HYPER; split seed 0) on `data` without the LLMs `dropped`."""
    import torch
    from jeirt_lite_training.model import JeirtPredictor

    from scripts.shipped import PUBLISHED_HYPER

    torch.set_num_threads(1)
    split = make_split(data, seed=0)
    kept = [k for k in range(data.n_llms) if k not in dropped]
    remap = np.full(data.n_llms, -1, dtype=np.int64)
    remap[kept] = np.arange(len(kept))

    def part(name: str) -> Responses:
        cells = split.responses(data, name)
        keep = ~np.isin(cells.llm, dropped)
        return Responses(cells.question[keep], remap[cells.llm[keep]], cells.correct[keep])

    predictor = JeirtPredictor(**PUBLISHED_HYPER).fit(features, part("train"), part("val"), len(kept))
    return predictor, kept


def _cells(cells: Responses, llm: int) -> tuple[np.ndarray, np.ndarray]:
    mask = cells.llm == llm
    return cells.question[mask], cells.correct[mask].astype(np.float64)


def evaluate_draw(
    q: np.ndarray, f: np.ndarray, prior: np.ndarray, given: np.ndarray, y_given: np.ndarray, scored: np.ndarray,
    y_scored: np.ndarray, seed: int, flags: np.ndarray | None = None, learned: np.ndarray | None = None,
    baselines: Baselines = Baselines(),
) -> dict[str, dict[str, Any]]:
    """Every method fitted on the `given` questions' answers, scored on the `scored` questions; `flags`: the
    router's in-distribution flag per question, `learned`: whether the router learned from it (add_llm reads the
    given questions' of both), None when unknown; `baselines`: what the baselines read and how carefully."""
    out: dict[str, dict[str, Any]] = {}
    g = f if baselines.features is None else baselines.features
    for method in METHODS:
        t0 = time.perf_counter()
        chosen = None
        if method in BASELINES:
            scorer, chosen = fit_baseline(method, g[given], y_given, seed, baselines.care)
            features = g
        else:
            given_flags = None if flags is None else flags[given]
            given_learned = None if learned is None else learned[given]
            scorer = fit_method(method, q[given], f[given], y_given, prior, seed, given_flags, given_learned)
            features = f
        seconds = time.perf_counter() - t0
        p = np.clip(scorer(q[scored], features[scored]), 1e-7, 1 - 1e-7)
        out[method] = {"auc": roc_auc(y_scored, p), "log_loss": log_loss(y_scored, p), "seconds": seconds}
        if chosen is not None:
            out[method]["chosen"] = chosen
    return out


def out_of_domain(  # type: ignore[no-untyped-def]
    data: Dataset, q: np.ndarray, f: np.ndarray, prior: np.ndarray, fraction: float, seeds: list[int],
    flags: np.ndarray | None = None, learned: np.ndarray | None = None, baselines: Baselines = Baselines(),
    flagged_only: bool = False,
):
    """`flagged_only`: draw from the questions the router's alignment counts as in distribution only."""
    if flagged_only and flags is None:
        raise ValueError("drawing from the in-distribution questions needs the router's flags")
    rows = []
    r = data.responses
    for llm in range(data.n_llms):
        questions, y = _cells(r, llm)
        if flagged_only:
            questions, y = questions[flags[questions]], y[flags[questions]]
        for seed in seeds:
            order = np.random.default_rng(seed).permutation(len(y))
            n = max(2, round(fraction * len(y)))
            given, scored = order[:n], order[n:]
            if len(set(y[given])) < 2 or len(set(y[scored])) < 2:
                continue
            result = evaluate_draw(
                q, f, prior, questions[given], y[given], questions[scored], y[scored], seed, flags, learned, baselines
            )
            rows.append({"llm": data.llm_names[llm], "seed": seed, "answers": int(n), **result})
    return rows


def in_domain(  # type: ignore[no-untyped-def]
    data: Dataset, q: np.ndarray, f: np.ndarray, prior: np.ndarray, held: list[int], seeds: list[int],
    flags: np.ndarray | None = None, learned: np.ndarray | None = None, baselines: Baselines = Baselines(),
):
    split = make_split(data, seed=0)
    train, test = split.responses(data, "train"), split.responses(data, "test")
    rows = []
    for llm in held:
        tq, ty = _cells(train, llm)
        sq, sy = _cells(test, llm)
        for fraction in IN_DOMAIN_FRACTIONS:
            for seed in seeds[:1] if fraction == 1.0 else seeds:
                n = max(2, round(fraction * len(ty)))
                pick = np.random.default_rng(seed).choice(len(ty), n, replace=False)
                result = evaluate_draw(q, f, prior, tq[pick], ty[pick], sq, sy, seed, flags, learned, baselines)
                rows.append({"llm": data.llm_names[llm], "fraction": fraction, "seed": seed, "answers": n, **result})
    return rows


def summary(rows: list[dict[str, Any]], key: str | None = None) -> dict[str, Any]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault("all" if key is None else f"{row[key]:g}", []).append(row)
    out: dict[str, dict[str, Any]] = {}
    for name, group in groups.items():
        out[name] = {
            method: {
                stat: float(np.mean([row[method][stat] for row in group])) for stat in ("auc", "log_loss", "seconds")
            }
            for method in METHODS
        }
        out[name]["draws"] = len(group)
        out[name]["add_llm_auc_above_logistic"] = int(sum(r["add_llm"]["auc"] > r["logistic"]["auc"] for r in group))
        out[name]["add_llm_equal_to_vector"] = int(sum(r["add_llm"]["auc"] == r["vector"]["auc"] for r in group))
        for baseline in BASELINES:
            out[name][f"add_llm_minus_{baseline}"] = paired(group, "add_llm", baseline)
            out[name][f"{baseline}_chosen"] = chosen_counts(group, baseline)
    return out


def chosen_counts(rows: list[dict[str, Any]], method: str) -> dict[str, int]:
    """How many draws chose each setting (an average's most weighted fit); empty for rows without the record."""
    counts = Counter(
        " ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in row[method]["chosen"].items()
                 if k != "fits")
        for row in rows if "chosen" in row[method]
    )
    return dict(counts.most_common())


ENCODERS = ("static", "minilm")


QuestionSide = tuple[np.ndarray, np.ndarray, np.ndarray, list[int], dict[str, Any], np.ndarray, np.ndarray | None]


def question_side(
    router: Router | None, data: Dataset, train_on: Path | None, held_out: bool, encoder: str = "static"
) -> QuestionSide:
    """(question vectors, encoder features, prior mean LLM vector, held-out LLMs, description, in-distribution
    flags, learned flags) for `data`'s questions. `encoder` "static": the router's encoder features, and the router's own question
    side unless JE-IRT is trained on `train_on` (or on `data` without held-out LLMs) over them; "minilm": the MiniLM
    transformer's embeddings, over which JE-IRT is always trained (a router's question side does not read them).
    The flags are the router's alignment (jeirt_lite_training.reference's, as an exported router would carry, for a trained
    question side: reference from its training questions, threshold from its validation questions); the learned
    flags say which of `data`'s questions the question side was trained on (the router's training_questions.npy, or
    the training part of a trained question side; None for a router without the record)."""
    if encoder == "static":
        if router is None:
            raise SystemExit("--encoder static reads the router's encoder: give a router")
        q, f = embed_with_router(router, data.texts)
        encoder_key = router.manifest["files"]["encoder"]["sha256"][:16]
    elif encoder == "minilm":
        q, f, encoder_key = None, minilm_features(data.texts), "minilm"
    else:
        raise SystemExit(f"unknown encoder {encoder!r}; choose from {', '.join(ENCODERS)}")
    setup: dict[str, Any] = {"data": data.name, "encoder": encoder, "feature_dim": int(f.shape[1])}
    dropped: list[int] = []
    if train_on is None and not held_out:
        if q is None or router is None:
            raise SystemExit("--encoder minilm has no router question side: give --train-on or --held-out")
        if not router.has_alignment:
            raise SystemExit(f"{router.path}: the router carries no alignment reference, which add_llm reads")
        flags = router.alignment(EncodedQuestions(q)).in_distribution
        learned = router.learned_from(data.texts)
        setup["in_distribution_share"] = float(np.mean(flags))
        setup["learned_share"] = None if learned is None else float(np.mean(learned))
        return q, f, router.llm_vectors.mean(axis=0), dropped, setup, flags, learned
    other = load_dataset(train_on) if train_on is not None else data
    if held_out:
        from jeirt_lite_training.prepared import Prepared

        from .onboarding_runs import held_out_llms

        split = make_split(data, seed=0)
        parts = [split.responses(data, name) for name in ("train", "val", "test")]
        dropped = held_out_llms(Prepared(data, split, 0, *parts, f, encoder, 0))
    setup.update(trained_on=other.name, held_out=[data.llm_names[k] for k in dropped])
    learned = learned_flags([other.texts[i] for i in make_split(other, seed=0).train], data.texts)
    setup["learned_share"] = float(np.mean(learned))
    key = f"{encoder_key}-{other.name}-on-{data.name}-{'-'.join(map(str, dropped))}"
    cached = cache_dir() / f"question-side-{key}.npz"
    if cached.is_file():  # the same training run (seeded) as before: reuse its question vectors
        with np.load(cached) as run:
            if "flags" in run:  # older caches lack the flags: train again
                setup["in_distribution_share"] = float(np.mean(run["flags"]))
                return run["q"], f, run["prior"], dropped, setup, run["flags"], learned
    t0 = time.perf_counter()
    other_f = f if other is data else (
        embed_with_router(router, other.texts)[1] if encoder == "static" and router is not None
        else minilm_features(other.texts)
    )
    predictor, _ = train_question_side(other, other_f, dropped)
    setup["training_seconds"] = round(time.perf_counter() - t0, 1)
    q, prior = predictor.question_vectors(f), predictor.llm_vectors.mean(axis=0)
    split = make_split(other, seed=0)
    other_q = q if other is data else predictor.question_vectors(other_f)
    flags = alignment_flags(other_q[split.train], other_q[split.val], q)
    setup["in_distribution_share"] = float(np.mean(flags))
    np.savez(cached, q=q, prior=prior, flags=flags)
    return q, f, prior, dropped, setup, flags, learned


def baselines_for(kind: str, care: str, data: Dataset) -> tuple[Baselines, dict[str, Any]]:
    """The baselines' features and care for `--baseline-features kind --logistic-care care`, and the setup's record."""
    if care not in LOGISTIC_CARES:
        raise SystemExit(f"unknown logistic care {care!r}; choose from {', '.join(LOGISTIC_CARES)}")
    if kind == "encoder":
        return Baselines(None, care), {"baseline_features": kind, "logistic_care": care}
    if kind == "minilm":
        g = minilm_features(data.texts)
        return Baselines(g, care), {"baseline_features": kind, "baseline_feature_dim": int(g.shape[1]),
                                    "logistic_care": care}
    raise SystemExit(f"unknown baseline features {kind!r}; choose from {', '.join(BASELINE_FEATURES)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="the new LLMs and their questions")
    parser.add_argument("--router", type=Path, default=None, help="router folder (default: the shipped one)")
    parser.add_argument(
        "--encoder", choices=ENCODERS, default="static",
        help="features: the router's encoder (static) or the MiniLM transformer's embeddings (minilm)",
    )
    parser.add_argument(
        "--baseline-features", choices=BASELINE_FEATURES, default="encoder",
        help="what the logistic regression and KNN read: the correction's features (encoder) or the MiniLM "
        "transformer's embeddings (minilm)",
    )
    parser.add_argument(
        "--logistic-care", choices=LOGISTIC_CARES, default="published",
        help="the logistic regression's grid and selection (experiments.onboarding_methods.LOGISTIC_CARES)",
    )
    parser.add_argument("--train-on", type=Path, default=None, help="train the question side on this data instead")
    parser.add_argument("--held-out", action="store_true", help="in domain: hold LLMs of --data out of training")
    parser.add_argument("--fraction", type=float, default=0.10)
    parser.add_argument("--in-distribution-only", action="store_true",
                        help="out of domain: draw from the questions the router counts as in distribution only")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.in_distribution_only and args.held_out:
        parser.error("--in-distribution-only is for the out-of-domain runs, not --held-out")
    seeds = [int(s) for s in args.seeds.split(",")]
    data = load_dataset(args.data)
    router = Router.load(args.router, threads=1) if args.encoder == "static" else None
    q, f, prior, dropped, setup, flags, learned = question_side(
        router, data, args.train_on, args.held_out, args.encoder
    )
    baselines, baseline_setup = baselines_for(args.baseline_features, args.logistic_care, data)
    setup.update(seeds=seeds, **baseline_setup)
    if router is not None:
        setup["router"] = str(args.router or "shipped")
    if args.held_out:
        rows = in_domain(data, q, f, prior, dropped, seeds, flags, learned, baselines)
        result = {"setup": setup, "summary": summary(rows, "fraction"), "rows": rows}
    else:
        setup.update(fraction=args.fraction, in_distribution_only=args.in_distribution_only)
        rows = out_of_domain(data, q, f, prior, args.fraction, seeds, flags, learned, baselines,
                             args.in_distribution_only)
        result = {"setup": setup, "summary": summary(rows), "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({"setup": setup, "summary": result["summary"]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
