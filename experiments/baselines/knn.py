"""Baseline 2: for each LLM, the mean label of the k most similar training questions that this LLM answered.

Cosine similarity on the frozen-encoder embeddings; the estimate is smoothed toward the LLM's training accuracy:
p = (sum of w_j * label_j + alpha * p_llm) / (sum of w_j + alpha) over the k neighbours, with w_j = 1 (plain mean)
or w_j = exp((sim_j - sim_max) / tau) (closer neighbours count more). k, alpha and tau are chosen on validation
log-loss.
Only training questions are neighbours (validation is for the choice, test is never seen). The search and its
tuning are the product's own (jeirt_lite_training.votes), so the baseline and fit's votes choose the same way.
"""

from __future__ import annotations

import numpy as np
from jeirt_lite._neighbours import neighbour_sums, smoothed, unit_rows
from jeirt_lite_training.types import Responses
from jeirt_lite_training.votes import (
    ALPHA_GRID,
    K_GRID,
    PRIOR_STRENGTH,
    TAU_GRID,
    answers_table,
    smoothed_llm_accuracy,
    tune_votes,
)


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
        tuning = tune_votes([embeddings], [(train, val)], n_llms, self.k_grid, self.alpha_grid, self.tau_grid)
        self.val_log_loss, (self.k, self.alpha, self.tau) = tuning.loss, tuning.setting
        return self

    def predict_proba(self, embeddings: np.ndarray, question: np.ndarray, llm: np.ndarray) -> np.ndarray:
        uq, inverse = np.unique(question, return_inverse=True)
        sums, counts = neighbour_sums(self.keys, self.answers, unit_rows(embeddings[uq]), (self.k,), self.tau)
        p = smoothed(sums[0], counts[0], self.p_llm, self.alpha)
        return p[inverse, llm].astype(np.float32)
