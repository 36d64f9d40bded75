"""Fit every method on the same split and report held-out test metrics (overall, per subject, per benchmark).

    python -m experiments.compare --data data/mmlu_pro --out bench_results/compare
    python -m experiments.compare --data data/mmlu_pro --seeds 0,1,2,3,4 ...     # the same on five splits

Every method sees the same train/validation cells (validation only for its own choices) and is scored on the same
test cells. One split's test part holds a few hundred to a few thousand questions, so differences in the third
decimal of AUC are within its noise; `--seeds` repeats the whole comparison on independent splits (each seed draws
the split and seeds the training) and summarises mean, spread and per-split wins. Writes `<out>/<dataset>.json`
(everything, including the tuned settings and the 2PL diagnostic of the first split) and `<out>/<dataset>.md`
(tables: the summary over splits, then the first split in detail), and prints the Markdown.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from jeirt_lite._metrics import ECE_BINS, all_metrics, reliability_table
from jeirt_lite_training.data import load_dataset
from jeirt_lite_training.splits import make_split
from jeirt_lite_training.types import Dataset, Predictor, Responses, Split

from .compare_fit import FIT_NAME, FitHeldOutRun, FitRun, FitVoteSpaceRun, FitWithoutVotesRun, fit_folds
from .compare_report import reuse_rows, seeds_markdown, splits_of, summarise_seeds, to_markdown, write_report
from .metrics_tables import metrics_by_group, reliability_rows
from .routing_eval import cost_proxies
from .routing_metrics import router_metrics

METHODS = ("llm_accuracy", "knn", "embedllm_mf", "mirt_text", "logreg", "embedllm_mf_same_care",
           "mirt_text_same_care", "jeirt_fit", "jeirt", "jeirt_fit_static", "jeirt_fit_no_votes",
           "jeirt_fit_static_no_votes", "embedllm_mf_same_care_refit", "mirt_text_same_care_refit",
           "jeirt_fit_static_short_votes", "jeirt_fit_static_feature_votes", "mirt_text_same_care_refit_auto_folds",
           "mirt_text_issue_recipe")
# embedllm_mf and mirt_text train at the constant rate the published tables used until the baselines got the same
# care as fit; the *_same_care rows choose their schedule (decay, drops, averaging) and model on validation loss
# (experiments/baselines/torch_fit.py, docs/research/baselines-same-care.md); the *_same_care_refit rows make the
# same choice, then refit it on training + validation cells for the chosen run's learning-rate path, as fit does.
# jeirt_fit_static (fit --encoder static, the shipped router's recipe) fine-tunes a token table: slow, so asked for.
# The *_no_votes rows are the same fit runs' routers without their neighbour votes (compare_fit.FitWithoutVotesRun),
# the *_short_votes and *_feature_votes rows with one search space's votes (compare_fit.FitVoteSpaceRun).
# The *_refit rows repeat their *_same_care row's choice (the whole grid again): asked for, not by default;
# mirt_text_same_care_refit_auto_folds makes it on the folds `fit --folds auto` takes (compare_fit.fit_folds).
# mirt_text_issue_recipe is issue #30's kept-back MIRT as the issue gives it, on its own (asked for).
DEFAULT_METHODS = tuple(m for m in METHODS if not m.startswith("jeirt_fit_static") and "_refit" not in m
                        and m != "mirt_text_issue_recipe")
TEST_FRACTION = 0.2  # each split's test part (make_split's default), also `fit`'s --holdout in the fit rows


def subset_questions(data: Dataset, keep: np.ndarray) -> Dataset:
    """The dataset restricted to the question indices `keep` (renumbered in that order); for quick runs."""
    keep = np.asarray(keep, dtype=np.int64)
    new_index = np.full(data.n_questions, -1, dtype=np.int64)
    new_index[keep] = np.arange(len(keep))
    r = data.responses
    mask = new_index[r.question] >= 0
    responses = Responses(new_index[r.question[mask]], r.llm[mask], r.correct[mask])
    return Dataset(data.name, [data.question_ids[i] for i in keep], [data.texts[i] for i in keep],
                   np.asarray(data.benchmarks)[keep], np.asarray(data.subjects)[keep], data.llm_names, responses)


def tuned_settings(predictor: Predictor) -> dict[str, Any]:
    """Whatever a method chose on validation (best effort; for the record only)."""
    out: dict[str, Any] = {}
    for attr in ("strength", "k", "alpha", "tau", "config", "epochs", "val_log_loss", "best_epoch", "best_val_loss",
                 "candidates", "selection", "calibration", "refit_path", "folds"):
        value = getattr(predictor, attr, None)
        if value is None:
            continue
        if hasattr(value, "to_dict"):
            value = value.to_dict()
        if isinstance(value, (np.floating, np.integer)):
            value = value.item()
        out[attr] = value
    return out


def evaluate(data: Dataset, cells: Responses, p: np.ndarray) -> dict[str, Any]:
    y = cells.correct
    result: dict[str, Any] = {
        "overall": all_metrics(y, p),
        "by_subject": metrics_by_group(y, p, np.asarray(data.subjects)[cells.question]),
        "reliability": reliability_rows(reliability_table(y, p)),
    }
    benchmarks = np.asarray(data.benchmarks)
    if len(np.unique(benchmarks)) > 1 and not np.array_equal(benchmarks, np.asarray(data.subjects)):
        result["by_benchmark"] = metrics_by_group(y, p, np.asarray(data.benchmarks)[cells.question])
    return result


def run_comparison(data: Dataset, split: Split, embeddings: np.ndarray, predictors: Sequence[Predictor],
                   log: Any = print, costs: np.ndarray | None = None,
                   checkpoint: Path | None = None) -> dict[str, Any]:
    """Fit each predictor on the split's train/val cells, score it on the test cells. Works for any Predictor."""
    if embeddings.shape[0] != data.n_questions:
        raise ValueError(f"embeddings have {embeddings.shape[0]} rows for {data.n_questions} questions")
    train, val, test = (split.responses(data, part) for part in ("train", "val", "test"))
    results: dict[str, Any] = {}
    for predictor in predictors:
        log(f"fitting {predictor.name} ...")
        start = time.perf_counter()
        predictor.fit(embeddings, train, val, data.n_llms)
        fit_seconds = time.perf_counter() - start
        p = np.asarray(predictor.predict_proba(embeddings, test.question, test.llm), dtype=np.float64)
        if p.shape != (len(test),):
            raise ValueError(f"{predictor.name}: predict_proba returned shape {p.shape}, expected ({len(test)},)")
        p_val = np.asarray(predictor.predict_proba(embeddings, val.question, val.llm), dtype=np.float64)
        results[predictor.name] = {
            "fit_seconds": fit_seconds,
            "tuned": tuned_settings(predictor),
            "val": all_metrics(val.correct, p_val),
            "test": evaluate(data, test, p),
        }
        extra = router_metrics(test.question, test.llm, test.correct, p, costs)
        overall = results[predictor.name]["test"]["overall"]
        overall.update({k: v for k, v in extra.items() if k != "routing"})
        if "routing" in extra:
            overall["aiq"] = extra["routing"]["aiq"]
            overall["routed_llms_max"] = extra["routing"]["distinct_llms_max"]  # kept per split by --seeds/--merge
            results[predictor.name]["test"]["routing"] = extra["routing"]
        o = results[predictor.name]["test"]["overall"]
        log(f"  {predictor.name}: test AUC {o['auc']:.3f}  log-loss {o['log_loss']:.3f}  ({fit_seconds:.0f} s)")
        if checkpoint is not None:  # what is done so far survives a run that is cut short
            checkpoint.write_text(json.dumps(results, indent=1, default=float))
    return {
        "dataset": data.name,
        "n_llms": data.n_llms,
        "n_questions": data.n_questions,
        "split": {"train": len(split.train), "val": len(split.val), "test": len(split.test),
                  "train_cells": len(train), "val_cells": len(val), "test_cells": len(test)},
        "ece_bins": ECE_BINS,
        "methods": results,
    }


def make_predictors(methods: Sequence[str], seed: int = 0, jeirt_hyper: dict[str, Any] | None = None, *,
                    data: Dataset | None = None, threads: int = 1, log: Any = lambda _: None,
                    fit_args: Sequence[str] = ()) -> list[Predictor]:
    """The methods' predictors for split `seed`. The fit rows (jeirt_fit, jeirt_fit_static) run `python -m jeirt_lite_training
    fit` on `data` (experiments.compare_fit), with `fit_args` after their own options (the rows' names carry them);
    with jeirt_fit asked for and no `jeirt_hyper`, the tuned row (jeirt) is fit's own held-out run of the chosen
    setting instead of a second choice."""
    from .baselines import EmbedLlmMF, KnnPerLlm, LlmAccuracy, TextMirt
    from .baselines.embedllm import same_care_mf, same_care_mf_refit
    from .baselines.logreg import LogisticPerLlm
    from .baselines.mirt import issue_recipe_mirt, same_care_mirt, same_care_mirt_refit
    from .baselines.torch_fit import FitSettings
    from .tuned_jeirt import TunedJeirt

    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise SystemExit(f"unknown method {unknown[0]!r}; known: {', '.join(METHODS)}")
    fit_runs: dict[str, FitRun] = {}
    for method, extra in (("jeirt_fit", ()), ("jeirt_fit_static", ("--encoder", "static"))):
        if {method, *(f"{method}_{rows}_votes" for rows in ("no", "short", "feature"))} & set(methods):
            if data is None:
                raise ValueError(f"{method} runs fit on the dataset: pass data")
            fit_runs[method] = FitRun(data, seed, test_fraction=TEST_FRACTION, threads=threads,
                                      extra=(*extra, *fit_args), log=log)
    made: list[Predictor] = []
    for method in methods:
        if method == "llm_accuracy":
            made.append(LlmAccuracy())
        elif method == "knn":
            made.append(KnnPerLlm())
        elif method == "embedllm_mf":
            made.append(EmbedLlmMF(settings=FitSettings(seed=seed)))
        elif method == "mirt_text":
            made.append(TextMirt(settings=FitSettings(seed=seed)))
        elif method == "logreg":
            made.append(LogisticPerLlm())
        elif method == "embedllm_mf_same_care":
            made.append(same_care_mf(seed))
        elif method == "mirt_text_same_care":
            made.append(same_care_mirt(seed))
        elif method == "embedllm_mf_same_care_refit":
            made.append(same_care_mf_refit(seed))
        elif method == "mirt_text_issue_recipe":
            made.append(issue_recipe_mirt(seed))
        elif method == "mirt_text_same_care_refit":
            made.append(same_care_mirt_refit(seed))
        elif method == "mirt_text_same_care_refit_auto_folds":  # chosen on the folds fit --folds auto takes
            if data is None:
                raise ValueError(f"{method} makes fit's folds of the dataset: pass data")
            made.append(same_care_mirt_refit(seed, fit_folds(data, seed, TEST_FRACTION)))
        elif method == "jeirt":
            made.append(FitHeldOutRun(fit_runs["jeirt_fit"]) if "jeirt_fit" in fit_runs and not jeirt_hyper
                        else TunedJeirt(seed=seed, **(jeirt_hyper or {})))
        elif method.endswith("_no_votes"):
            made.append(FitWithoutVotesRun(fit_runs[method.removesuffix("_no_votes")]))
        elif method.endswith(("_short_votes", "_feature_votes")):
            base, space, _ = method.rsplit("_", 2)
            made.append(FitVoteSpaceRun(fit_runs[base], "short" if space == "short" else "features"))
        else:
            made.append(fit_runs[method])
    return made


def get_embeddings(data: Dataset, args: argparse.Namespace, split: Split | None = None) -> np.ndarray:
    """The frozen embeddings every method gets. The static encoder's token frequencies come from the split's
    training and validation texts, so it is distilled once per split (the distilled table, as the published rows
    of this mode; `fit --encoder static` builds its own)."""
    if args.encoder == "static":
        from jeirt_lite_training.static_router import static_embeddings

        assert split is not None
        return static_embeddings(data, np.concatenate([split.train, split.val]), fit_sentences=False)[1]
    if args.random_embeddings:
        rng = np.random.default_rng(args.seed)
        return rng.standard_normal((data.n_questions, args.random_embeddings)).astype(np.float32)
    from jeirt_lite_training.embeddings import embed_dataset

    kwargs: dict[str, Any] = {}
    if args.encoder:
        kwargs["encoder"] = args.encoder
    return np.asarray(embed_dataset(data, **kwargs), dtype=np.float32)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Compare JE-IRT and the baselines on one split.")
    parser.add_argument("--data", type=Path, help="data folder or table (see jeirt_lite_training.data); required unless --merge")
    parser.add_argument("--embeddings-cache", type=Path, help="embedding cache folder (sets JEIRT_CACHE)")
    parser.add_argument("--encoder", default=None, help="frozen encoder name (default: the project's)")
    parser.add_argument("--methods", default=",".join(DEFAULT_METHODS), help=f"comma list from {','.join(METHODS)}")
    parser.add_argument("--seed", type=int, default=0, help="split and training seed")
    parser.add_argument("--seeds", default=None,
                        help="comma list of seeds: repeat everything on each split and summarise (overrides --seed)")
    parser.add_argument("--out", type=Path, default=Path("bench_results/compare"))
    parser.add_argument("--max-questions", type=int, default=0, help="random subset of questions (quick runs)")
    parser.add_argument("--random-embeddings", type=int, default=0, help="D: random embeddings (plumbing tests)")
    parser.add_argument("--no-2pl", action="store_true", help="skip the plain 2PL diagnostic")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--fit-args", default="", metavar="OPTIONS",
                        help='options of `fit` for the fit rows, as one string, e.g. "--folds 5"; the rows are named '
                        'with them ("JE-IRT fit --folds 5")')
    parser.add_argument("--jeirt-hyper", help='extra JE-IRT settings as JSON, e.g. \'{"llm_lr_scale": 30}\'')
    parser.add_argument("--checkpoint", type=Path, help="rewrite the results so far to this JSON after each method")
    parser.add_argument("--reference", default=FIT_NAME, help="the method the summary compares the others with")
    parser.add_argument("--merge", type=Path, nargs="+",
                        help="only summarise these result JSONs (one split each, e.g. run in parallel) into --out")
    parser.add_argument("--reuse", type=Path, metavar="JSON", action="append", default=[],
                        help="with --merge: an earlier summarised result whose --reuse-methods rows fill in the "
                        "splits that did not run them (the same split seeds; marked as reused); may be repeated, "
                        "each with its own --reuse-methods, in the same order")
    parser.add_argument("--reuse-methods", action="append", default=[],
                        help="comma list of method names for the --reuse of the same position")
    args = parser.parse_args(argv)
    if args.merge:
        runs = [json.loads(path.read_text()) for path in args.merge]
        per_seed = {seed: split for run in runs for seed, split in splits_of(run).items()}
        if len(args.reuse) != len(args.reuse_methods):
            parser.error(f"{len(args.reuse)} --reuse but {len(args.reuse_methods)} --reuse-methods: give one each")
        for path, names in zip(args.reuse, args.reuse_methods):
            reuse_rows(per_seed, json.loads(path.read_text()), [m for m in names.split(",") if m], str(path))
        first = runs[0]
        first["settings"]["seeds"] = sorted(per_seed)
        return write_report(first, per_seed, args.out, args.reference)
    if args.data is None:
        parser.error("--data is required (unless --merge)")
    if args.embeddings_cache:
        os.environ["JEIRT_CACHE"] = str(args.embeddings_cache)

    import torch

    torch.set_num_threads(args.threads)
    data = load_dataset(args.data)
    if args.max_questions and args.max_questions < data.n_questions:
        keep = np.sort(np.random.default_rng(args.seed).choice(data.n_questions, args.max_questions, replace=False))
        data = subset_questions(data, keep)
    seeds = [int(x) for x in args.seeds.split(",")] if args.seeds else [args.seed]
    embeddings = None if args.encoder == "static" else get_embeddings(data, args)
    jeirt_hyper = json.loads(args.jeirt_hyper) if args.jeirt_hyper else None
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    per_seed: dict[int, dict[str, Any]] = {}
    priced = cost_proxies(data.llm_names)
    costs = np.array([priced.get(name, np.nan) for name in data.llm_names], dtype=np.float64)
    def log(line: str) -> None:
        print(line, file=sys.stderr)

    for seed in seeds:
        log(f"split seed {seed}:")
        split = make_split(data, seed=seed, test_fraction=TEST_FRACTION)
        predictors = make_predictors(methods, seed, jeirt_hyper, data=data, threads=args.threads, log=log,
                                     fit_args=shlex.split(args.fit_args))
        per_seed[seed] = run_comparison(data, split, get_embeddings(data, args, split) if embeddings is None
                                        else embeddings, predictors, log=log, costs=costs, checkpoint=args.checkpoint)
    result = per_seed[seeds[0]]  # the first split, in full detail
    result["settings"] = {"seed": seeds[0], "seeds": seeds, "max_questions": args.max_questions,
                          "embeddings": f"random {args.random_embeddings}-d" if args.random_embeddings
                          else (args.encoder or "default encoder"),
                          "torch_threads": args.threads, "python": platform.python_version(),
                          "cpu_count": os.cpu_count()}
    if not args.no_2pl:
        from .baselines.irt2pl import two_pl_diagnostic

        print("fitting the plain 2PL diagnostic ...", file=sys.stderr)
        result["diagnostic_2pl"] = two_pl_diagnostic(data, make_split(data, seed=seeds[0]).responses(data, "train"))
    return write_report(result, per_seed, args.out, args.reference)


__all__ = ["METHODS", "main", "make_predictors", "reuse_rows", "run_comparison", "seeds_markdown", "subset_questions",
           "summarise_seeds", "to_markdown", "write_report"]

if __name__ == "__main__":
    sys.exit(main())
