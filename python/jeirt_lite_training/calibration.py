"""Probability calibration of a trained JE-IRT router: a temperature and a bias on the logit, fitted on HELD-OUT
predictions (the choose step's validation runs, jeirt_lite_training.choose: never cells the router learned from), stored in
the router's manifest and applied at run time inside the Rust kernels.

    P(correct) = sigmoid(scale · logit + bias)     (per LLM, or one pair shared by all: kind "global")

Fitting is an exact Newton solve of the held-out log-loss (2 parameters per LLM, a tiny ridge towards the
identity so an LLM with few or one-sided cells stays put). `python -m jeirt_lite_training fit` fits and stores it
(`--calibration`, global by default); measure it on a router built with a test part:

    python -m jeirt_lite_training.calibration --router ROUTER --data data/mmlu_pro   # ECE raw / calibrated, test split
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
MAX_HALVINGS = 60  # of a Newton step that would raise the objective (2^-60: no step at all)


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

    All groups are solved at once (2 × 2 Newton systems built with bincount); no loop over cells or groups. A
    Newton step that would raise a group's objective is halved until it does not: from the identity, logits far
    from 0 (a router logit plus neighbour votes) put the start where the sigmoid is flat, and full steps there
    diverge.
    """
    z, y, g = np.asarray(logits, np.float64), np.asarray(correct, np.float64), np.asarray(groups, np.int64)
    a, b = np.ones(n_groups), np.zeros(n_groups)

    def objective(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        s = a[g] * z + b[g]
        return np.bincount(g, np.logaddexp(0.0, s) - y * s, n_groups) + 0.5 * RIDGE * ((a - 1.0) ** 2 + b**2)

    current = objective(a, b)
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
        step = np.ones(n_groups)
        for _ in range(MAX_HALVINGS):
            trial = objective(a - step * da, b - step * db)
            worse = trial > current
            if not worse.any():
                break
            step = np.where(worse, step / 2, step)
        a, b, current = a - step * da, b - step * db, trial
        if max(np.abs(step * da).max(), np.abs(step * db).max()) < 1e-10:
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


def store_calibration(
    router_path: Path | str,
    calibration: dict[str, Any] | None,
    costs: dict[str, float] | None = None,
    *,
    neighbours: Any = None,
) -> Path:
    """Write `calibration` (fit_calibration's field), `costs` and `neighbours` (jeirt_lite._neighbours'
    NeighbourVotes), those given, into the router folder at `router_path` (rewritten in place)."""
    from ._runtime import Router

    router = Router.load(router_path, threads=1)
    if calibration is not None:
        router = router.with_calibration(calibration["scale"], calibration["bias"], kind=calibration["kind"])
    if costs is not None:
        router = router.with_costs(costs)
    if neighbours is not None:
        router = router.with_neighbours(neighbours)
    return Path(router.save(router_path, overwrite=True))  # a static router keeps its fast-path file


def _test_cells(router: Any, data_dir: Path) -> tuple[list[str], Responses]:
    """The texts and cells of the router's test split, drawn again from what its manifest records."""
    from .data import load_dataset
    from .router_split import router_test_question_ids

    ids, how = router_test_question_ids(router.manifest, data_dir)
    if not ids:
        raise SystemExit(f"no test questions to measure on: {how} (build the router with --holdout)")
    data = load_dataset(data_dir)
    if list(data.llm_names) != list(router.llms):
        raise SystemExit(f"{data_dir}'s LLMs are not the router's")
    rows = np.flatnonzero(np.isin(np.asarray(data.question_ids), ids))
    cells = data.responses.subset(np.isin(data.responses.question, rows))
    position = np.full(data.n_questions, -1, dtype=np.int64)
    position[rows] = np.arange(len(rows))
    texts = [data.texts[i] for i in rows]
    return texts, Responses(position[cells.question], cells.llm, cells.correct)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="ECE and reliability of a router's probabilities, raw and with its stored calibration, on the "
        "test questions it never saw (a router built with --holdout)"
    )
    parser.add_argument("--router", type=Path, required=True, help="router folder trained with a test part")
    parser.add_argument("--data", type=Path, required=True, help="the data folder it was trained on")
    args = parser.parse_args(argv)
    from ._runtime import Router

    router = Router.load(args.router, threads=1)
    if router.calibration is None:
        raise SystemExit(f"{args.router} stores no calibration")
    texts, cells = _test_cells(router, args.data)
    calibrated = router.predict_proba(texts)[cells.question, cells.llm].astype(np.float64)
    # With neighbour votes the map was fitted on logit + weight * vote: without it the votes are not weighed as
    # chosen, so the raw row is the geometry alone.
    votes = router.neighbours is not None
    plain = router.with_neighbours(None) if votes else router
    raw = plain.without_calibration().predict_proba(texts)[cells.question, cells.llm].astype(np.float64)
    kind = router.manifest["calibration"]["kind"]
    scale = np.asarray(router.calibration.scale)
    print(f"{kind}: scale {scale.min():.3f}..{scale.max():.3f}, bias {np.min(router.calibration.bias):.3f}.."
          f"{np.max(router.calibration.bias):.3f}")
    print(f"\ntest split, {len(texts)} questions, {len(cells)} cells\n")
    print("| probabilities | ECE | log-loss | Brier | AUC |\n|---|---:|---:|---:|---:|")
    rows = [
        ("raw model, the geometry alone (no votes)" if votes else "raw model", raw),
        (f"{kind} temperature + bias (stored, fitted on held-out predictions)"
         + (", with the neighbour votes" if votes else ""), calibrated),
    ]
    for name, p in rows:
        m = all_metrics(cells.correct, p)
        print(f"| {name} | {m['ece']:.3f} | {m['log_loss']:.3f} | {m['brier']:.3f} | {m['auc']:.3f} |")
    for name, p in rows:
        print(f"\nreliability, {name}:\n")
        print(reliability_table(cells.correct, p).to_markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main())
