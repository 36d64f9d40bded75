"""Baseline 2: for each LLM, the mean label of the k most similar training questions that this LLM answered.

Cosine similarity on the frozen-encoder embeddings; the estimate is smoothed toward the LLM's training accuracy:
p = (sum of the k labels + alpha * p_llm) / (k_found + alpha). k and alpha are chosen on validation log-loss.
Only training questions are neighbours (validation is for the choice, test is never seen).
"""

from __future__ import annotations

import numpy as np

from training.baselines.llm_accuracy import smoothed_llm_accuracy
from training.metrics import log_loss
from training.types import Responses

K_GRID = (5, 10, 20, 40, 80, 160)
ALPHA_GRID = (0.5, 2.0, 8.0)


def _unit_rows(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


class KnnPerLlm:
    name = "knn"

    def __init__(self, k_grid: tuple[int, ...] = K_GRID, alpha_grid: tuple[float, ...] = ALPHA_GRID,
                 chunk: int = 256) -> None:
        self.k_grid, self.alpha_grid, self.chunk = k_grid, alpha_grid, chunk
        self.k, self.alpha = k_grid[0], alpha_grid[0]

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
        sums, counts = self._neighbour_stats(embeddings, val_q, self.k_grid)  # (len(k), n_q, L)
        best = (np.inf, self.k, self.alpha)
        for i, k in enumerate(self.k_grid):
            for alpha in self.alpha_grid:
                p = (sums[i] + alpha * self.p_llm) / (counts[i] + alpha)
                score = log_loss(val.correct, p[inverse, val.llm])
                if score < best[0]:
                    best = (score, k, alpha)
        self.val_log_loss, self.k, self.alpha = best
        return self

    def _neighbour_stats(self, embeddings: np.ndarray, questions: np.ndarray,
                         ks: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """For each k: (sum of labels, count) over the first k neighbours each LLM answered, per question x LLM."""
        n_llms = self.observed.shape[1]
        sums = np.zeros((len(ks), len(questions), n_llms), dtype=np.float32)
        counts = np.zeros_like(sums)
        for start in range(0, len(questions), self.chunk):
            q = questions[start:start + self.chunk]
            sim = _unit_rows(embeddings[q]) @ self.keys.T
            top = np.argpartition(-sim, self.n_candidates - 1, axis=1)[:, :self.n_candidates]
            top = np.take_along_axis(top, np.argsort(-np.take_along_axis(sim, top, axis=1), axis=1), axis=1)
            seen = self.observed[top]  # (chunk, candidates, L)
            rank = np.cumsum(seen, axis=1)
            hits = self.labels[top]
            for i, k in enumerate(ks):
                take = seen & (rank <= k)
                sums[i, start:start + len(q)] = (hits * take).sum(axis=1)
                counts[i, start:start + len(q)] = take.sum(axis=1)
        return sums, counts

    def predict_proba(self, embeddings: np.ndarray, question: np.ndarray, llm: np.ndarray) -> np.ndarray:
        uq, inverse = np.unique(question, return_inverse=True)
        sums, counts = self._neighbour_stats(embeddings, uq, (self.k,))
        p = (sums[0] + self.alpha * self.p_llm) / (counts[0] + self.alpha)
        return p[inverse, llm].astype(np.float32)
