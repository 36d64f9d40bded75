"""The neighbour-vote search tuned on held-out parts: one loop that `fit`'s votes (neighbour_blend) and the KNN
baseline of the experiments both use, so the product and its comparison choose k, α and τ the same way.

For each LLM, the vote is the mean label of the k most similar training questions that this LLM answered (cosine on
the encoder's features, or in a short space of them), smoothed toward the LLM's training accuracy:
p = (Σ_j w_j·label_j + α·p_llm) / (Σ_j w_j + α) over the k neighbours, with w_j = 1 (plain mean) or
w_j = exp((sim_j − sim_max)/τ) (closer neighbours count more). k, α, τ and the space are chosen on validation
log-loss.

A short space is the top d principal directions of the centred unit features (`principal_space`), computed from
each part's training questions only. Centring matters: the features of a bag-of-tokens encoder share one large
common direction, which dominates the raw cosine.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, Optional

import numpy as np

from ._runtime import NOT_ASKED, log_loss, neighbour_sums, short_rows, smoothed, unit_rows
from .types import Responses

K_GRID = (10, 20, 40, 80, 160, 320)
ALPHA_GRID = (0.5, 2.0, 8.0)
TAU_GRID = (None, 0.2, 0.1, 0.05)  # None: unweighted mean
PRIOR_STRENGTH = 1.0  # the smoothing of each LLM's training accuracy, the prior its votes lean to

Setting = tuple[int, float, Optional[float]]  # (k, alpha, tau)
FULL_SPACE = (None,)  # the features themselves, no short space


class VoteTuning(NamedTuple):
    """What `tune_votes` chose: its validation log-loss, (k, alpha, tau), the votes' P on every validation cell,
    and the short space's width (None: the full features)."""

    loss: float
    setting: Setting
    p: np.ndarray
    dims: Optional[int]


def principal_space(features: np.ndarray, dims: int) -> tuple[np.ndarray, np.ndarray]:
    """(centre (p,), projection (p, dims)), float32: the mean of the unit feature rows and their top `dims`
    principal directions about it, each direction's largest component made positive (the same rows give the same
    space on any machine's eigensolver)."""
    x = unit_rows(features).astype(np.float64)
    centre = x.mean(axis=0)
    values, vectors = np.linalg.eigh((x - centre).T @ (x - centre))
    top = vectors[:, np.argsort(-values, kind="stable")[:dims]]
    signs = np.where(top[np.abs(top).argmax(axis=0), np.arange(top.shape[1])] < 0, -1.0, 1.0)
    return centre.astype(np.float32), np.ascontiguousarray(top * signs, dtype=np.float32)


def smoothed_llm_accuracy(train: Responses, n_llms: int, strength: float) -> np.ndarray:
    """(k_m + strength * global rate) / (n_m + strength): an LLM with few cells leans to the global rate."""
    n = np.bincount(train.llm, minlength=n_llms).astype(np.float64)
    k = np.bincount(train.llm, weights=train.correct, minlength=n_llms)
    prior = float(train.correct.mean()) if len(train) else 0.5
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(n + strength > 0, (k + strength * prior) / (n + strength), prior)
    return np.clip(p, 1e-4, 1 - 1e-4)


def answers_table(cells: Responses, questions: np.ndarray, n_llms: int) -> np.ndarray:
    """(len(questions), n_llms) int8: 1 right, 0 wrong, NOT_ASKED where the LLM did not answer the question.
    `questions` sorted and holding every question of `cells`."""
    table = np.full((len(questions), n_llms), NOT_ASKED, dtype=np.int8)
    table[np.searchsorted(questions, cells.question), cells.llm] = cells.correct.astype(np.int8)
    return table


def _part_rows(features: np.ndarray, train_q: np.ndarray, val_q: np.ndarray,
               dims: Optional[int]) -> tuple[np.ndarray, np.ndarray]:
    """Unit rows of the part's training and validation questions: the features, or the short space of `dims`
    principal directions of the training questions' features."""
    if dims is None:
        return unit_rows(features[train_q]), unit_rows(features[val_q])
    centre, projection = principal_space(features[train_q], dims)
    return short_rows(features[train_q], centre, projection), short_rows(features[val_q], centre, projection)


def _part_sums(features: np.ndarray, part: tuple[Responses, Responses], n_llms: int, ks: Sequence[int],
               tau: Optional[float], dims: Optional[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(sums, counts) for every k on the part's validation questions, from its training questions; the LLM prior
    (smoothed training accuracy); each validation cell's row among those questions."""
    train, val = part
    train_q = np.unique(train.question)
    val_q, rows = np.unique(val.question, return_inverse=True)
    keys, queries = _part_rows(features, train_q, val_q, dims)
    sums, counts = neighbour_sums(keys, answers_table(train, train_q, n_llms), queries, ks, tau)
    return sums, counts, smoothed_llm_accuracy(train, n_llms, PRIOR_STRENGTH).astype(np.float32), rows


def tune_votes(embeddings: Sequence[np.ndarray], parts: Sequence[tuple[Responses, Responses]], n_llms: int,
               k_grid: Sequence[int] = K_GRID, alpha_grid: Sequence[float] = ALPHA_GRID,
               tau_grid: Sequence[Optional[float]] = TAU_GRID,
               spaces: Sequence[Optional[int]] = FULL_SPACE) -> VoteTuning:
    """The (k, alpha, tau) and space (a short space's width, or None: the features) of the grids whose votes have
    the lowest validation log-loss over all (train, validation) parts, that loss, and those votes' P on every
    validation cell (the parts' cells in order); embeddings[j]: the features part j reads. Neighbour sums for
    every k at once, then every alpha. A space as wide as the features is the features themselves."""
    y = np.concatenate([val.correct for _, val in parts])
    width = min(int(features.shape[1]) for features in embeddings)
    widths = list(dict.fromkeys(None if d is None or d >= width else int(d) for d in spaces))
    best = VoteTuning(np.inf, (k_grid[0], alpha_grid[0], tau_grid[0]), np.empty(0), widths[0])
    for dims in widths:
        for tau in tau_grid:
            stats = [_part_sums(features, part, n_llms, k_grid, tau, dims)
                     for features, part in zip(embeddings, parts)]
            for i, k in enumerate(k_grid):
                for alpha in alpha_grid:
                    p = np.concatenate([smoothed(s[i], c[i], prior, alpha)[rows, val.llm]
                                        for (s, c, prior, rows), (_, val) in zip(stats, parts)])
                    loss = log_loss(y, p)
                    if loss < best.loss:
                        best = VoteTuning(loss, (k, alpha, tau), p, dims)
    return best
