"""Ridge-penalised logistic regression with a fixed offset on the logit, the fit behind add_llm's feature correction
(_correction_grid.py): exact by Newton's method, and approximate over many strengths at once for cross-validation."""

from __future__ import annotations

from typing import Optional

import numpy as np


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def ridge_logistic(
    design: np.ndarray, y: np.ndarray, offset: np.ndarray, strength: float, start: Optional[np.ndarray] = None
) -> np.ndarray:
    """argmin Σ log-loss(y, σ(Xw + offset)) + ½ strength ‖w‖², by Newton's method (strictly convex)."""
    p = design.shape[1]
    w = np.zeros(p) if start is None else start.copy()
    for _ in range(50):
        prob = sigmoid(design @ w + offset)
        gradient = design.T @ (prob - y) + strength * w
        if np.max(np.abs(gradient)) < 1e-6:
            break
        hessian = (design * (prob * (1.0 - prob))[:, None]).T @ design + strength * np.eye(p)
        w = w - np.linalg.solve(hessian, gradient)
    return w


def ridge_path(
    design: np.ndarray, y: np.ndarray, offset: np.ndarray, strengths: list[float], iterations: int = 30
) -> dict[float, np.ndarray]:
    """Approximate ridge-logistic weights for many strengths at the cost of one eigendecomposition: Newton steps
    with the Hessian frozen at the offset-only fit (w = 0). Used only to choose the strength by cross-validation;
    the chosen strength is then fitted exactly by `ridge_logistic`."""
    prob0 = sigmoid(offset)
    values, basis = np.linalg.eigh((design * (prob0 * (1.0 - prob0))[:, None]).T @ design)
    out: dict[float, np.ndarray] = {}
    w = np.zeros(design.shape[1])
    for strength in sorted(strengths, reverse=True):  # strong to weak: each path point warm-starts the next
        for _ in range(iterations):
            gradient = design.T @ (sigmoid(design @ w + offset) - y) + strength * w
            step = basis @ ((basis.T @ gradient) / (np.maximum(values, 0.0) + strength))
            w = w - step
            if np.max(np.abs(step)) < 1e-5:
                break
        out[strength] = w.copy()
    return out
