"""Baseline 2: for each LLM, the mean label of the k most similar training questions that this LLM answered.

Cosine similarity on the frozen-encoder embeddings; the estimate is smoothed toward the LLM's training accuracy:
p = (sum of w_j * label_j + alpha * p_llm) / (sum of w_j + alpha) over the k neighbours, with w_j = 1 (plain mean)
or w_j = exp((sim_j - sim_max) / tau) (closer neighbours count more). k, alpha and tau are chosen on validation
log-loss.
Only training questions are neighbours (validation is for the choice, test is never seen).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from jeirt_lite._neighbours import NOT_ASKED, neighbour_sums, smoothed, unit_rows

from ..metrics import log_loss
from ..types import Responses
from .llm_accuracy import smoothed_llm_accuracy

K_GRID = (10, 20, 40, 80, 160, 320)
ALPHA_GRID = (0.5, 2.0, 8.0)
TAU_GRID = (None, 0.2, 0.1, 0.05)  # None: unweighted mean
PRIOR_STRENGTH = 1.0  # the smoothing of each LLM's training accuracy, the prior its votes lean to


def answers_table(cells: Responses, questions: np.ndarray, n_llms: int) -> np.ndarray:
    """(len(questions), n_llms) int8: 1 right, 0 wrong, NOT_ASKED where the LLM did not answer the question.
    `questions` sorted and holding every question of `cells`."""
    table = np.full((len(questions), n_llms), NOT_ASKED, dtype=np.int8)
    table[np.searchsorted(questions, cells.question), cells.llm] = cells.correct.astype(np.int8)
    return table


Setting = tuple[int, float, "float | None"]  # (k, alpha, tau)


def _part_sums(features: np.ndarray, part: tuple[Responses, Responses], n_llms: int, ks: Sequence[int],
               tau: float | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(sums, counts) for every k on the part's validation questions, from its training questions; the LLM prior
    (smoothed training accuracy); each validation cell's row among those questions."""
    train, val = part
    train_q = np.unique(train.question)
    val_q, rows = np.unique(val.question, return_inverse=True)
    sums, counts = neighbour_sums(unit_rows(features[train_q]), answers_table(train, train_q, n_llms),
                                  unit_rows(features[val_q]), ks, tau)
    return sums, counts, smoothed_llm_accuracy(train, n_llms, PRIOR_STRENGTH).astype(np.float32), rows


def tune_votes(embeddings: Sequence[np.ndarray], parts: Sequence[tuple[Responses, Responses]], n_llms: int,
               k_grid: Sequence[int] = K_GRID, alpha_grid: Sequence[float] = ALPHA_GRID,
               tau_grid: Sequence[float | None] = TAU_GRID) -> tuple[float, Setting, np.ndarray]:
    """The (k, alpha, tau) of the grids whose votes have the lowest validation log-loss over all (train, validation)
    parts, that loss, and those votes' P on every validation cell (the parts' cells in order); embeddings[j]: the
    features part j reads. Neighbour sums for every k at once, then every alpha."""
    y = np.concatenate([val.correct for _, val in parts])
    best: tuple[float, Setting, np.ndarray] = (np.inf, (k_grid[0], alpha_grid[0], tau_grid[0]), np.empty(0))
    for tau in tau_grid:
        stats = [_part_sums(features, part, n_llms, k_grid, tau) for features, part in zip(embeddings, parts)]
        for i, k in enumerate(k_grid):
            for alpha in alpha_grid:
                p = np.concatenate([smoothed(s[i], c[i], prior, alpha)[rows, val.llm]
                                    for (s, c, prior, rows), (_, val) in zip(stats, parts)])
                loss = log_loss(y, p)
                if loss < best[0]:
                    best = (loss, (k, alpha, tau), p)
    return best


class KnnPerLlm:
    name = "knn"

    def __init__(self, k_grid: tuple[int, ...] = K_GRID, alpha_grid: tuple[float, ...] = ALPHA_GRID,
                 tau_grid: tuple[float | None, ...] = TAU_GRID) -> None:
        self.k_grid, self.alpha_grid, self.tau_grid = k_grid, alpha_grid, tau_grid
        self.k, self.alpha, self.tau = k_grid[0], alpha_grid[0], tau_grid[0]

    def fit(self, embeddings: np.ndarray, train: Responses, val: Responses, n_llms: int) -> KnnPerLlm:
        self.train_questions = np.unique(train.question)
        self.keys = unit_rows(embeddings[self.train_questions])
        self.answers = answers_table(train, self.train_questions, n_llms)
        self.p_llm = smoothed_llm_accuracy(train, n_llms, PRIOR_STRENGTH).astype(np.float32)
        self.val_log_loss, (self.k, self.alpha, self.tau), _ = tune_votes(
            [embeddings], [(train, val)], n_llms, self.k_grid, self.alpha_grid, self.tau_grid)
        return self

    def predict_proba(self, embeddings: np.ndarray, question: np.ndarray, llm: np.ndarray) -> np.ndarray:
        uq, inverse = np.unique(question, return_inverse=True)
        sums, counts = neighbour_sums(self.keys, self.answers, unit_rows(embeddings[uq]), (self.k,), self.tau)
        p = smoothed(sums[0], counts[0], self.p_llm, self.alpha)
        return p[inverse, llm].astype(np.float32)
