"""Baseline 1, the floor: each LLM's (smoothed) accuracy on the training cells, whatever the question."""

from __future__ import annotations

import numpy as np
from jeirt_lite._metrics import log_loss
from jeirt_lite_training.types import Responses
from jeirt_lite_training.votes import smoothed_llm_accuracy

SMOOTHING_GRID = (0.0, 1.0, 10.0, 100.0)


class LlmAccuracy:
    """P(correct) = the LLM's smoothed training accuracy; the smoothing strength is chosen on validation."""

    name = "llm_accuracy"

    def __init__(self, grid: tuple[float, ...] = SMOOTHING_GRID) -> None:
        self.grid = grid
        self.strength = grid[0]
        self.p_llm = np.zeros(0)

    def fit(self, embeddings: np.ndarray, train: Responses, val: Responses, n_llms: int) -> LlmAccuracy:
        scores = [log_loss(val.correct, smoothed_llm_accuracy(train, n_llms, s)[val.llm]) for s in self.grid]
        self.strength = self.grid[int(np.argmin(scores))]
        self.p_llm = smoothed_llm_accuracy(train, n_llms, self.strength)
        return self

    def predict_proba(self, embeddings: np.ndarray, question: np.ndarray, llm: np.ndarray) -> np.ndarray:
        return self.p_llm[llm].astype(np.float32)
