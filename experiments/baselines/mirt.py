"""Baseline 4: multidimensional IRT whose item parameters are predicted from the question text.

logit = a_q . theta_m - b_q, with (a_q, b_q) = MLP(question embedding) and theta_m a learned table per LLM.
Unlike plain IRT it can score unseen questions, because the item parameters come from the text. Early-stopped on
validation loss; the latent dimension is chosen on validation loss.
"""

from __future__ import annotations

import numpy as np
import torch
from jeirt_lite_training.types import Responses
from torch import nn

from .torch_fit import FitSettings, fit_best_on_grid, predict_cells

GRID = ({"dim": 2}, {"dim": 8}, {"dim": 32})
HIDDEN = 256
DROPOUT = 0.1


class _TextMirt(nn.Module):
    def __init__(self, in_dim: int, n_llms: int, dim: int) -> None:
        super().__init__()
        self.theta = nn.Embedding(n_llms, dim)
        nn.init.normal_(self.theta.weight, std=0.5)
        self.items = nn.Sequential(nn.Linear(in_dim, HIDDEN), nn.GELU(), nn.Dropout(DROPOUT), nn.Linear(HIDDEN, dim + 1))
        self.dim = dim

    def forward(self, x: torch.Tensor, llm: torch.Tensor) -> torch.Tensor:
        params = self.items(x)
        a, b = params[:, : self.dim], params[:, self.dim]
        return (a * self.theta(llm)).sum(-1) - b


class TextMirt:
    name = "mirt_text"

    def __init__(self, grid: tuple[dict[str, int], ...] = GRID, settings: FitSettings | None = None) -> None:
        self.grid, self.settings = grid, settings or FitSettings()

    def fit(self, embeddings: np.ndarray, train: Responses, val: Responses, n_llms: int) -> TextMirt:
        def build(config: dict[str, int]) -> nn.Module:
            return _TextMirt(embeddings.shape[1], n_llms, int(config["dim"]))

        self.val_log_loss, self.model, self.config, self.epochs = fit_best_on_grid(
            self.grid, build, embeddings, train, val, self.settings
        )
        return self

    def predict_proba(self, embeddings: np.ndarray, question: np.ndarray, llm: np.ndarray) -> np.ndarray:
        assert self.model is not None, "fit first"
        return predict_cells(self.model, embeddings, question, llm)
