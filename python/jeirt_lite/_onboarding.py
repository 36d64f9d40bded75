"""Fitting one new LLM's vector from a few of its answers, with the question side frozen.

With question vectors q fixed, logit = u·m − ‖q‖ where u = q/‖q‖: a logistic regression in m with a known
offset. Its negative log-likelihood plus a Gaussian prior ½λ‖m − m₀‖² is strictly convex, so Newton's method
(with a backtracking line search) finds the exact optimum in a handful of d × d solves: milliseconds on a CPU.
The prior mean m₀ is the mean of the router's existing LLM vectors: with very few answers the new LLM starts as
"a typical LLM" and moves away as its answers say.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Optional

import numpy as np

from ._errors import JeirtError
from ._limits import check_finite_rows, finite_float

DEFAULT_L2 = 1.0  # prior strength, in units of "questions' worth" of curvature; see fit_llm_vector
MIN_LABELS = 2


def check_labels(correct: object, n: int) -> np.ndarray:
    """Answers as float64 0/1; bool, int 0/1 and float 0.0/1.0 are accepted, from a sequence, array or iterator."""
    labels = np.asarray(list(correct) if isinstance(correct, Iterator) else correct)
    if labels.ndim != 1:
        raise JeirtError(f"correct must be 1-D (one label per question), got shape {labels.shape}")
    if labels.shape[0] != n:
        raise JeirtError(f"got {n} questions but {labels.shape[0]} labels")
    if labels.dtype == bool:
        return labels.astype(np.float64)
    if not np.issubdtype(labels.dtype, np.number):
        raise JeirtError(f"labels must be 0/1 or true/false, got dtype {labels.dtype}")
    bad = np.flatnonzero((labels != 0) & (labels != 1))
    if bad.size:
        raise JeirtError(f"label {int(bad[0])} is {labels[bad[0]].item()!r}; labels must be 0 or 1")
    return labels.astype(np.float64)


def fit_llm_vector(
    questions: np.ndarray,
    correct: np.ndarray,
    *,
    prior_mean: Optional[np.ndarray] = None,
    l2: float = DEFAULT_L2,
    max_iter: int = 100,
    tol: float = 1e-8,
) -> np.ndarray:
    """The maximum-a-posteriori LLM vector m for answers `correct` to questions with vectors `questions`.

    Args:
        questions: (n, d) question vectors (the router's embeddings of the questions the LLM answered).
        correct: (n,) 0/1 answers.
        prior_mean: (d,) centre of the Gaussian prior; zeros when None.
        l2: prior precision λ (> 0): the penalty is ½λ‖m − m₀‖². Keeps the problem well posed when the answers
            are few or all alike (all correct would otherwise push ‖m‖ to infinity).
        max_iter, tol: Newton iterations and the stopping tolerance on the gradient's max-norm.

    Returns:
        (d,) float32 vector.
    """
    q = np.asarray(questions, dtype=np.float64)
    if q.ndim != 2:
        raise JeirtError(f"question vectors must be 2-D (n, d), got shape {q.shape}")
    n, d = q.shape
    y = check_labels(correct, n)
    if n < MIN_LABELS:
        raise JeirtError(f"need at least {MIN_LABELS} answers to fit an LLM, got {n}")
    check_finite_rows(q, "question")
    if finite_float(l2, "l2") <= 0:
        raise JeirtError(f"l2 must be a positive number, got {l2!r}")
    m0 = np.zeros(d) if prior_mean is None else np.asarray(prior_mean, dtype=np.float64).reshape(d)

    norms = np.linalg.norm(q, axis=1)
    # A zero question vector has no direction: the kernels give it logit 0, so here it contributes nothing.
    directions = np.divide(q, norms[:, None], out=np.zeros_like(q), where=norms[:, None] > 0)
    offsets = -norms

    def objective(m: np.ndarray) -> float:
        z = directions @ m + offsets
        # log(1 + e^z) - y z, computed stably
        return float(np.sum(np.logaddexp(0.0, z) - y * z) + 0.5 * l2 * np.sum((m - m0) ** 2))

    m = m0.copy()
    value = objective(m)
    for _ in range(max_iter):
        z = directions @ m + offsets
        p = 0.5 * (1.0 + np.tanh(0.5 * z))  # a sigmoid that never overflows
        gradient = directions.T @ (p - y) + l2 * (m - m0)
        if np.max(np.abs(gradient)) < tol:
            break
        weights = p * (1.0 - p)
        hessian = (directions * weights[:, None]).T @ directions + l2 * np.eye(d)
        step = np.linalg.solve(hessian, gradient)
        scale = 1.0
        while True:  # backtracking keeps every step a descent step, so Newton cannot overshoot
            candidate = m - scale * step
            candidate_value = objective(candidate)
            if candidate_value <= value - 1e-4 * scale * float(gradient @ step) or scale < 1e-10:
                break
            scale *= 0.5
        m, value = candidate, candidate_value
    return m.astype(np.float32)
