"""Baseline 2: for each LLM, the mean label of the k most similar training questions that this LLM answered.

Cosine similarity on the frozen-encoder embeddings; the estimate is smoothed toward the LLM's training accuracy:
p = (sum of w_j * label_j + alpha * p_llm) / (sum of w_j + alpha) over the k neighbours, with w_j = 1 (plain mean)
or w_j = exp((sim_j - sim_max) / tau) (closer neighbours count more). k, alpha and tau are chosen on validation
log-loss.
Only training questions are neighbours (validation is for the choice, test is never seen).
"""

from __future__ import annotations

import numpy as np

from ..metrics import log_loss
from ..types import Responses
from .llm_accuracy import smoothed_llm_accuracy

K_GRID = (10, 20, 40, 80, 160, 320)
ALPHA_GRID = (0.5, 2.0, 8.0)
TAU_GRID = (None, 0.2, 0.1, 0.05)  # None: unweighted mean


def _unit_rows(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


class KnnPerLlm:
    name = "knn"

    def __init__(self, k_grid: tuple[int, ...] = K_GRID, alpha_grid: tuple[float, ...] = ALPHA_GRID,
                 tau_grid: tuple[float | None, ...] = TAU_GRID, chunk: int = 256) -> None:
        self.k_grid, self.alpha_grid, self.tau_grid, self.chunk = k_grid, alpha_grid, tau_grid, chunk
        self.k, self.alpha, self.tau = k_grid[0], alpha_grid[0], tau_grid[0]

    def fit(self, embeddings: np.ndarray, train: Responses, val: Responses, n_llms: int) -> KnnPerLlm:
        self.train_questions = np.unique(train.question)
        self.keys = _unit_rows(embeddings[self.train_questions])
        row = np.searchsorted(self.train_questions, train.question)
        self.observed = np.zeros((len(self.train_questions), n_llms), dtype=bool)
        self.labels = np.zeros((len(self.train_questions), n_llms), dtype=np.float32)
        self.observed[row, train.llm] = True
        self.labels[row, train.llm] = train.correct
        self.p_llm = smoothed_llm_accuracy(train, n_llms, strength=1.0).astype(np.float32)
        # Tune: neighbour sums for every k at once on the validation questions, then every alpha.
        self.n_candidates = min(len(self.train_questions), 2 * max(self.k_grid))
        val_q, inverse = np.unique(val.question, return_inverse=True)
        best: tuple[float, int, float, float | None] = (np.inf, self.k, self.alpha, self.tau)
        for tau in self.tau_grid:
            sums, counts = self._neighbour_stats(embeddings, val_q, self.k_grid, tau)  # (len(k), n_q, L)
            for i, k in enumerate(self.k_grid):
                for alpha in self.alpha_grid:
                    p = (sums[i] + alpha * self.p_llm) / (counts[i] + alpha)
                    score = log_loss(val.correct, p[inverse, val.llm])
                    if score < best[0]:
                        best = (score, k, alpha, tau)
        self.val_log_loss, self.k, self.alpha, self.tau = best
        return self

    def _neighbour_stats(self, embeddings: np.ndarray, questions: np.ndarray, ks: tuple[int, ...],
                         tau: float | None) -> tuple[np.ndarray, np.ndarray]:
        """For each k: (weighted sum of labels, sum of weights) over the first k neighbours each LLM answered."""
        n_llms = self.observed.shape[1]
        sums = np.zeros((len(ks), len(questions), n_llms), dtype=np.float32)
        counts = np.zeros_like(sums)
        for start in range(0, len(questions), self.chunk):
            q = questions[start:start + self.chunk]
            sim = _unit_rows(embeddings[q]) @ self.keys.T
            top = np.argpartition(-sim, self.n_candidates - 1, axis=1)[:, :self.n_candidates]
            top = np.take_along_axis(top, np.argsort(-np.take_along_axis(sim, top, axis=1), axis=1), axis=1)
            top_sim = np.take_along_axis(sim, top, axis=1)
            weight = (np.ones_like(top_sim) if tau is None
                      else np.exp((top_sim - top_sim[:, :1]) / tau))[:, :, None]  # (chunk, candidates, 1)
            seen = self.observed[top]  # (chunk, candidates, L)
            rank = np.cumsum(seen, axis=1)
            hits = self.labels[top]
            for i, k in enumerate(ks):
                take = (seen & (rank <= k)) * weight
                sums[i, start:start + len(q)] = (hits * take).sum(axis=1)
                counts[i, start:start + len(q)] = take.sum(axis=1)
        return sums, counts

    def predict_proba(self, embeddings: np.ndarray, question: np.ndarray, llm: np.ndarray) -> np.ndarray:
        uq, inverse = np.unique(question, return_inverse=True)
        sums, counts = self._neighbour_stats(embeddings, uq, (self.k,), self.tau)
        p = (sums[0] + self.alpha * self.p_llm) / (counts[0] + self.alpha)
        return p[inverse, llm].astype(np.float32)
