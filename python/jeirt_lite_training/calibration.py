"""Probability calibration of a trained JE-IRT router: a temperature and a bias on the logit, fitted on HELD-OUT
predictions (the choose step's validation runs, jeirt_lite_training.choose: never cells the router learned from), stored in
the router's manifest and applied at run time inside the Rust kernels.

    P(correct) = sigmoid(scale · logit + bias)     (per LLM, or one pair shared by all: kind "global")

Fitting is an exact Newton solve of the held-out log-loss (2 parameters per LLM, a tiny ridge towards the
identity so an LLM with few or one-sided cells stays put). `python -m jeirt_lite_training fit` fits and stores it
(`--calibration`, global by default); the laboratory measures it on a router built with a test part
(`python -m experiments.calibration_eval`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

RIDGE = 1e-3  # in units of cells; keeps a one-sided LLM's fit finite
MAX_HALVINGS = 60  # of a Newton step that would raise the objective (2^-60: no step at all)


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
