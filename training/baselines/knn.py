"""Baseline 2: for each LLM, the mean label of the k most similar training questions that this LLM answered.

Cosine similarity on the frozen-encoder embeddings; the estimate is smoothed toward the LLM's training accuracy:
p = (sum of w_j * label_j + alpha * p_llm) / (sum of w_j + alpha) over the k neighbours, with w_j = 1 (plain mean)
or w_j = exp((sim_j - sim_max) / tau) (closer neighbours count more). k, alpha and tau are chosen on validation
log-loss.
Only training questions are neighbours (validation is for the choice, test is never seen).
"""

from __future__ import annotations

import numpy as np
from jeirt_lite._neighbours import NOT_ASKED, neighbour_sums, smoothed, unit_rows

from ..metrics import log_loss
from ..types import Responses
from .llm_accuracy import smoothed_llm_accuracy

K_GRID = (10, 20, 40, 80, 160, 320)
ALPHA_GRID = (0.5, 2.0, 8.0)
TAU_GRID = (None, 0.2, 0.1, 0.05)  # None: unweighted mean


def answers_table(cells: Responses, questions: np.ndarray, n_llms: int) -> np.ndarray:
    """(len(questions), n_llms) int8: 1 right, 0 wrong, NOT_ASKED where the LLM did not answer the question.
    `questions` sorted and holding every question of `cells`."""
    table = np.full((len(questions), n_llms), NOT_ASKED, dtype=np.int8)
    table[np.searchsorted(questions, cells.question), cells.llm] = cells.correct.astype(np.int8)
    return table


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
        self.p_llm = smoothed_llm_accuracy(train, n_llms, strength=1.0).astype(np.float32)
        # Tune: neighbour sums for every k at once on the validation questions, then every alpha.
        val_q, inverse = np.unique(val.question, return_inverse=True)
        best: tuple[float, int, float, float | None] = (np.inf, self.k, self.alpha, self.tau)
        for tau in self.tau_grid:
            sums, counts = neighbour_sums(self.keys, self.answers, unit_rows(embeddings[val_q]), self.k_grid, tau)
            for i, k in enumerate(self.k_grid):
                for alpha in self.alpha_grid:
                    p = smoothed(sums[i], counts[i], self.p_llm, alpha)
                    score = log_loss(val.correct, p[inverse, val.llm])
                    if score < best[0]:
                        best = (score, k, alpha, tau)
        self.val_log_loss, self.k, self.alpha, self.tau = best
        return self

    def predict_proba(self, embeddings: np.ndarray, question: np.ndarray, llm: np.ndarray) -> np.ndarray:
        uq, inverse = np.unique(question, return_inverse=True)
        sums, counts = neighbour_sums(self.keys, self.answers, unit_rows(embeddings[uq]), (self.k,), self.tau)
        p = smoothed(sums[0], counts[0], self.p_llm, self.alpha)
        return p[inverse, llm].astype(np.float32)
