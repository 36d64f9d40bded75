"""Baseline 3: EmbedLLM-style matrix factorisation (Zhuang et al., 2024).

Each LLM has a learned vector e_m; the question embedding is projected linearly to the same width; a linear
classifier reads their element-wise product: logit = w . (e_m * (W q + c)) + b0. Trained with BCE, early-stopped
on validation loss; the width and dropout are chosen on validation loss.

`EmbedLlmMF()` trains at the constant rate of torch_fit.FitSettings() (the published tables until the baselines got
`fit`'s care); `same_care_mf()` chooses the width, the dropout and the schedule (torch_fit.SAME_CARE: AdamW with
weight decay, per-epoch decay, fit's drops, weight averaging) together on validation loss.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from jeirt_lite_training.types import Responses
from torch import nn

from .torch_fit import SAME_CARE, FitSettings, choose_on_grid, predict_cells, with_seed

GRID = ({"dim": 32, "dropout": 0.0}, {"dim": 128, "dropout": 0.0}, {"dim": 128, "dropout": 0.3})
# GRID and wider: on zeroeval GRID's top width (128) won on four of five splits.
SAME_CARE_GRID = (*GRID, {"dim": 256, "dropout": 0.0}, {"dim": 256, "dropout": 0.3})


class _MF(nn.Module):
    def __init__(self, in_dim: int, n_llms: int, dim: int, dropout: float) -> None:
        super().__init__()
        self.llm = nn.Embedding(n_llms, dim)
        nn.init.normal_(self.llm.weight, std=0.1)
        self.project = nn.Linear(in_dim, dim)
        self.dropout = nn.Dropout(dropout)
        self.classify = nn.Linear(dim, 1)

    def forward(self, x: torch.Tensor, llm: torch.Tensor) -> torch.Tensor:
        return self.classify(self.dropout(self.llm(llm) * self.project(x))).squeeze(-1)


class EmbedLlmMF:
    name = "embedllm_mf"

    def __init__(self, grid: tuple[dict[str, float], ...] = GRID,
                 settings: FitSettings | Sequence[FitSettings] | None = None, name: str = "embedllm_mf",
                 refit: bool = False) -> None:
        self.grid, self.settings, self.name, self.refit = grid, settings or FitSettings(), name, refit

    def fit(self, embeddings: np.ndarray, train: Responses, val: Responses, n_llms: int) -> EmbedLlmMF:
        def build(config: dict[str, float]) -> nn.Module:
            return _MF(embeddings.shape[1], n_llms, int(config["dim"]), float(config["dropout"]))

        choice = choose_on_grid(self.grid, build, embeddings, train, val, self.settings, self.refit)
        self.val_log_loss, self.model, self.config, self.epochs = (choice.val_loss, choice.model, choice.config,
                                                                   choice.epochs)
        # For the record (compare's tuned settings): the rates the refit replayed on training + validation.
        self.refit_path = choice.path if choice.refitted else None
        return self

    def predict_proba(self, embeddings: np.ndarray, question: np.ndarray, llm: np.ndarray) -> np.ndarray:
        assert self.model is not None, "fit first"
        return predict_cells(self.model, embeddings, question, llm)


def same_care_mf(seed: int = 0) -> EmbedLlmMF:
    """Matrix factorisation trained with the same care as `fit`: width, dropout and schedule chosen on validation."""
    return EmbedLlmMF(SAME_CARE_GRID, with_seed(SAME_CARE, seed), name="embedllm_mf_same_care")


def same_care_mf_refit(seed: int = 0) -> EmbedLlmMF:
    """`same_care_mf` refitted as `fit` is: the same choice on validation, then the chosen setting trained afresh on
    training + validation cells for the learning-rate path that led to its best weights."""
    return EmbedLlmMF(SAME_CARE_GRID, with_seed(SAME_CARE, seed), name="embedllm_mf_same_care_refit", refit=True)
