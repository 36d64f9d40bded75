"""Probability calibration of a trained JE-IRT router: a temperature and a bias on the logit, fitted on the
VALIDATION split, stored in the router's manifest and applied at run time inside the Rust kernels.

    P(correct) = sigmoid(scale · logit + bias)     (per LLM, or one pair shared by all: kind "global")

Fitting is an exact Newton solve of the validation log-loss (2 parameters per LLM, a tiny ridge towards the
identity so an LLM with few or one-sided validation cells stays put). Measure it with

    python -m training.calibration          # ECE before/after on the test split

and store it in a router written by training (e.g. from build_default_router.py):

    from .calibration import calibrate_router
    calibrate_router(router_path, prep, predictor)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

from .metrics import all_metrics, reliability_table
from .types import Responses

RIDGE = 1e-3  # in units of cells; keeps a one-sided LLM's fit finite


def cell_logits(question_vectors: np.ndarray, llm_vectors: np.ndarray, cells: Responses) -> np.ndarray:
    """The JE-IRT logit q·m/‖q‖ − ‖q‖ of each cell, float64 (0 for a zero question, as the kernels do)."""
    q = question_vectors[cells.question].astype(np.float64)
    m = llm_vectors[cells.llm].astype(np.float64)
    norm = np.linalg.norm(q, axis=1)
    dot = np.einsum("ij,ij->i", q, m)
    return np.where(norm > 0, dot / np.where(norm > 0, norm, 1.0) - norm, 0.0)


def fit_temperature_bias(
    logits: np.ndarray, correct: np.ndarray, groups: np.ndarray, n_groups: int, iterations: int = 50
) -> tuple[np.ndarray, np.ndarray]:
    """Per group g: (a_g, b_g) minimising Σ log-loss(sigmoid(a_g z + b_g), y) + ½·RIDGE·((a_g−1)² + b_g²).

    All groups are solved at once (2 × 2 Newton systems built with bincount); no loop over cells or groups.
    """
    z, y, g = np.asarray(logits, np.float64), np.asarray(correct, np.float64), np.asarray(groups, np.int64)
    a, b = np.ones(n_groups), np.zeros(n_groups)
    for _ in range(iterations):
        p = 0.5 * (1.0 + np.tanh(0.5 * (a[g] * z + b[g])))
        r, w = p - y, p * (1.0 - p)
        ga = np.bincount(g, r * z, n_groups) + RIDGE * (a - 1.0)
        gb = np.bincount(g, r, n_groups) + RIDGE * b
        haa = np.bincount(g, w * z * z, n_groups) + RIDGE
        hab = np.bincount(g, w * z, n_groups)
        hbb = np.bincount(g, w, n_groups) + RIDGE
        det = haa * hbb - hab * hab
        da, db = (hbb * ga - hab * gb) / det, (haa * gb - hab * ga) / det
        a, b = a - da, b - db
        if max(np.abs(da).max(), np.abs(db).max()) < 1e-10:
            break
    # A scale <= 0 would invert the ranking: such a fit means the logit carries no signal for that LLM.
    return np.maximum(a, 1e-3), b


def fit_calibration(
    logits: np.ndarray, correct: np.ndarray, llm: np.ndarray, n_llms: int, kind: str = "per_llm"
) -> dict[str, Any]:
    """The manifest field {"kind", "scale": [K], "bias": [K]} fitted on the given (validation) cells."""
    if kind == "per_llm":
        a, b = fit_temperature_bias(logits, correct, llm, n_llms)
    elif kind == "global":
        a1, b1 = fit_temperature_bias(logits, correct, np.zeros(len(logits), np.int64), 1)
        a, b = np.repeat(a1, n_llms), np.repeat(b1, n_llms)
    else:
        raise ValueError(f"kind must be 'per_llm' or 'global', got {kind!r}")
    return {"kind": kind, "scale": [float(x) for x in a], "bias": [float(x) for x in b]}


def apply_calibration(logits: np.ndarray, llm: np.ndarray, calibration: dict[str, Any]) -> np.ndarray:
    scale, bias = np.asarray(calibration["scale"]), np.asarray(calibration["bias"])
    return 1.0 / (1.0 + np.exp(-(scale[llm] * logits + bias[llm])))


def calibrate_router(
    router_path: Path | str,
    prep: Any,
    predictor: Any,
    kind: str = "global",
    costs: dict[str, float] | None = None,
) -> dict[str, Any]:
    """Fit the calibration on `prep.val` with the trained `predictor` and store it (and `costs`, if given) in the
    router folder at `router_path` (rewritten in place). Returns the calibration manifest field.

    "global" is the default: on mmlu_pro it halves the test ECE like "per_llm" does, and keeps the AUC.
    """
    from jeirt_lite import Router

    vectors = predictor.question_vectors(prep.embeddings)
    calibration = fit_calibration(
        cell_logits(vectors, predictor.llm_vectors, prep.val),
        prep.val.correct,
        prep.val.llm,
        prep.data.n_llms,
        kind,
    )
    router = Router.load(router_path).with_calibration(calibration["scale"], calibration["bias"], kind=kind)
    if costs is not None:
        router = router.with_costs(costs)
    router.save(router_path, overwrite=True)
    return calibration


def main(argv: list[str] | None = None) -> int:
    from .onboarding_runs import DEFAULT_DATA, REPO_ROOT
    from .pipeline import prepare

    parser = argparse.ArgumentParser(description="ECE and reliability before/after calibration (test split)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--runs", type=Path, default=REPO_ROOT / ".scratch" / "runs")
    args = parser.parse_args(argv)
    prep = prepare(args.data, split_seed=0, progress=False)
    run = np.load(args.runs / "joint.npz")
    qv, mv = run["question_vectors"], run["llm_vectors"]
    val_z, test_z = cell_logits(qv, mv, prep.val), cell_logits(qv, mv, prep.test)
    raw = 1.0 / (1.0 + np.exp(-test_z))
    rows = [("raw model", raw)]
    for kind in ("global", "per_llm"):
        cal = fit_calibration(val_z, prep.val.correct, prep.val.llm, prep.data.n_llms, kind)
        rows.append(
            (
                f"{kind} temperature + bias (fitted on validation)",
                apply_calibration(test_z, prep.test.llm, cal),
            )
        )
        if kind == "global":
            print(f"global: scale {cal['scale'][0]:.3f}, bias {cal['bias'][0]:.3f}")
        else:
            s = np.asarray(cal["scale"])
            print(
                f"per-LLM scale range {s.min():.3f}..{s.max():.3f}, bias range "
                f"{min(cal['bias']):.3f}..{max(cal['bias']):.3f}"
            )
    print(f"\ntest split, {len(prep.test)} cells\n")
    print("| probabilities | ECE | log-loss | Brier | AUC |\n|---|---:|---:|---:|---:|")
    for name, p in rows:
        m = all_metrics(prep.test.correct, p)
        print(f"| {name} | {m['ece']:.3f} | {m['log_loss']:.3f} | {m['brier']:.3f} | {m['auc']:.3f} |")
    for name, p in (rows[0], rows[-1]):
        print(f"\nreliability, {name}:\n")
        print(reliability_table(prep.test.correct, p).to_markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main())
