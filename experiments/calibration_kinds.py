"""The calibration kinds compared on the shipped recipe's own held-out and test predictions, over several splits.

    python -m experiments.calibration_kinds --splits 0 1 2 3 4 --threads 1 --out .scratch/calibration_kinds

For each split seed, the shipped recipe (`scripts.build_default_router`'s preset, `--holdout 0.2`; any other option
is fit's and overrides the preset) is trained as `fit` trains it, without writing a router; the held-out logits its
calibration is fitted on and the test part's logits (geometry plus neighbour votes, before any calibration) are
kept in OUT/split{S}.npz. Then every kind is fitted on the held-out logits alone and scored on the test part, and
the paired differences against `global` (the default) are printed over the splits. The runs are the expensive
part; `--reuse` scores saved .npz files again.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Callable

import numpy as np
from jeirt_lite._metrics import all_metrics
from jeirt_lite_training.calibration import RIDGE, fit_calibration

Fit = Callable[[np.ndarray, np.ndarray, np.ndarray, int], tuple[np.ndarray, np.ndarray]]


def _library(kind: str) -> Fit:
    """The training library's own fit of `kind` ('global' or 'per_llm'), as (scale, bias) per LLM."""
    def fit(z: np.ndarray, y: np.ndarray, llm: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        fitted = fit_calibration(z, y, llm, k, kind)
        return np.asarray(fitted["scale"]), np.asarray(fitted["bias"])
    return fit


def _identity(z: np.ndarray, y: np.ndarray, llm: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    return np.ones(k), np.zeros(k)


def _global_scale_per_llm_bias(z: np.ndarray, y: np.ndarray, llm: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The global map, then an offset per LLM on top of it (Newton steps on the offsets alone, the same ridge)."""
    a, b = _library("global")(z, y, llm, k)
    shifted = a[0] * z + b[0]
    offset = np.zeros(k)
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(shifted + offset[llm])))
        step = (np.bincount(llm, p - y, k) + RIDGE * offset) / (np.bincount(llm, p * (1 - p), k) + RIDGE)
        offset -= step
        if np.abs(step).max() < 1e-10:
            break
    return a, b + offset


KINDS: dict[str, Fit] = {
    "none": _identity,
    "global": _library("global"),
    "per_llm": _library("per_llm"),
    "global scale, per-LLM bias": _global_scale_per_llm_bias,
}


def run_split(seed: int, threads: int, fit_argv: list[str]) -> dict[str, np.ndarray]:
    """The shipped recipe (with fit's options `fit_argv`) on split `seed` with a test part kept out: its held-out
    and test logits and labels."""
    from jeirt_lite_training import pipeline
    from jeirt_lite_training.__main__ import _set_threads, fit_options, fit_parser, prepare_from_options

    from scripts.build_default_router import PRESET

    args = fit_parser("calibration_kinds", description="", epilog="", preset=PRESET).parse_args(
        ["--holdout", "0.2", *fit_argv, "--split-seed", str(seed), "--threads", str(threads)])
    _set_threads(args)
    kept: dict[str, np.ndarray] = {}
    original_heldout, original_apply = pipeline.heldout_calibration, pipeline.apply_calibration

    def heldout(selection: Any, logits: np.ndarray, n_llms: int, kind: Any) -> Any:
        kept.update(heldout_logit=np.asarray(logits, np.float64), heldout_correct=selection.heldout.correct,
                    heldout_llm=selection.heldout.llm)
        return original_heldout(selection, logits, n_llms, kind)

    def apply(logits: np.ndarray, llm: np.ndarray, fitted: Any) -> np.ndarray:
        kept.update(test_logit=np.asarray(logits, np.float64), test_llm=llm)
        return original_apply(logits, llm, fitted)

    pipeline.heldout_calibration, pipeline.apply_calibration = heldout, apply
    try:
        prep = prepare_from_options(args)
        pipeline.choose_refit_and_export(prep, None, **fit_options(args))
    finally:
        pipeline.heldout_calibration, pipeline.apply_calibration = original_heldout, original_apply
    kept["test_correct"] = prep.test.correct
    return kept


def score(saved: dict[str, np.ndarray]) -> dict[str, dict[str, float]]:
    """Each kind fitted on the held-out logits and scored on the test part: {kind: all_metrics}."""
    k = int(max(saved["heldout_llm"].max(), saved["test_llm"].max())) + 1
    rows = {}
    for name, fit in KINDS.items():
        a, b = fit(saved["heldout_logit"], saved["heldout_correct"].astype(np.float64), saved["heldout_llm"], k)
        z = a[saved["test_llm"]] * saved["test_logit"] + b[saved["test_llm"]]
        rows[name] = all_metrics(saved["test_correct"], 1.0 / (1.0 + np.exp(-z)))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.calibration_kinds", description=__doc__,
                                     epilog="example:\n  python -m experiments.calibration_kinds --splits 0 1 --out "
                                     "~/.cache/calibration_kinds --data data/zeroeval_crux_gsm_math",
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--splits", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, required=True, help="folder of the per-split .npz files")
    parser.add_argument("--reuse", action="store_true", help="score the saved .npz files; train nothing")
    args, fit_argv = parser.parse_known_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    per_split = {}
    for seed in args.splits:
        path = args.out / f"split{seed}.npz"
        if not args.reuse:
            arrays: dict[str, Any] = run_split(seed, args.threads, fit_argv)
            np.savez(path, **arrays)
        with np.load(path) as f:
            per_split[seed] = score(dict(f))
        print(f"split {seed}: " + json.dumps({n: {m: round(r[m], 5) for m in ("auc", "accuracy", "log_loss")}
                                              for n, r in per_split[seed].items()}), flush=True)
    print("mean over the splits (paired difference from global ± its standard error):")
    for name in KINDS:
        print(f"{name:28s} " + "  ".join(_paired(per_split, name, m) for m in ("auc", "accuracy", "log_loss", "ece")))
    return 0


def _paired(per_split: dict[int, dict[str, dict[str, float]]], name: str, metric: str) -> str:
    values = np.array([rows[name][metric] for rows in per_split.values()])
    diffs = values - np.array([rows["global"][metric] for rows in per_split.values()])
    error = diffs.std(ddof=1) / np.sqrt(len(diffs)) if len(diffs) > 1 else 0.0
    return f"{metric} {values.mean():.4f} ({diffs.mean():+.4f} ± {error:.4f})"


if __name__ == "__main__":
    raise SystemExit(main())
