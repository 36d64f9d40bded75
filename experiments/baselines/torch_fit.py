"""One training loop for the torch baselines: minibatch BCE on observed cells, early stopping on validation loss.

Only validation cells are used for the stopping choice; the test part never enters here.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import torch
from jeirt_lite_training.types import Responses
from torch import nn

ConfigT = TypeVar("ConfigT")


@dataclass(frozen=True)
class FitSettings:
    lr: float = 2e-3
    weight_decay: float = 0.0
    batch_size: int = 2048
    max_epochs: int = 60
    patience: int = 4  # epochs without a better validation loss before stopping
    seed: int = 0


def cell_tensors(embeddings: np.ndarray, cells: Responses) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(question embedding per cell, LLM index per cell, label per cell) as tensors."""
    x = torch.from_numpy(np.ascontiguousarray(embeddings[cells.question], dtype=np.float32))
    return x, torch.from_numpy(cells.llm.astype(np.int64)), torch.from_numpy(cells.correct.astype(np.float32))


def fit_cells(model: nn.Module, embeddings: np.ndarray, train: Responses, val: Responses,
              settings: FitSettings) -> tuple[nn.Module, float, int]:
    """Train `model(x, llm) -> logits` and return it at its best validation loss, that loss and the epoch count.

    `model` must map a (batch, D) float tensor of question embeddings and a (batch,) long tensor of LLM indices to
    (batch,) logits.
    """
    torch.manual_seed(settings.seed)
    generator = torch.Generator().manual_seed(settings.seed)
    x_tr, m_tr, y_tr = cell_tensors(embeddings, train)
    x_va, m_va, y_va = cell_tensors(embeddings, val)
    optimiser = torch.optim.AdamW(model.parameters(), lr=settings.lr, weight_decay=settings.weight_decay)
    loss_fn = nn.BCEWithLogitsLoss()
    best_loss, best_state, best_epoch, since_best = float("inf"), copy.deepcopy(model.state_dict()), 0, 0
    for epoch in range(1, settings.max_epochs + 1):
        model.train()
        order = torch.randperm(len(y_tr), generator=generator)
        for start in range(0, len(order), settings.batch_size):
            batch = order[start:start + settings.batch_size]
            optimiser.zero_grad(set_to_none=True)
            loss = loss_fn(model(x_tr[batch], m_tr[batch]), y_tr[batch])
            loss.backward()
            optimiser.step()
        val_loss = evaluate_loss(model, x_va, m_va, y_va)
        if val_loss < best_loss - 1e-5:
            best_loss, best_state, best_epoch, since_best = val_loss, copy.deepcopy(model.state_dict()), epoch, 0
        else:
            since_best += 1
            if since_best >= settings.patience:
                break
    model.load_state_dict(best_state)
    model.eval()
    return model, best_loss, best_epoch


def fit_best_on_grid(
    grid: Sequence[ConfigT], build: Callable[[ConfigT], nn.Module], embeddings: np.ndarray, train: Responses,
    val: Responses, settings: FitSettings,
) -> tuple[float, nn.Module | None, ConfigT | dict[str, Any], int]:
    """Fits `build(config)` for every grid setting; returns (validation loss, model, config, epochs) of the best."""
    best: tuple[float, nn.Module | None, ConfigT | dict[str, Any], int] = (np.inf, None, {}, 0)
    for config in grid:
        model, loss, epochs = fit_cells(build(config), embeddings, train, val, settings)
        if loss < best[0]:
            best = (loss, model, config, epochs)
    return best


@torch.no_grad()
def evaluate_loss(model: nn.Module, x: torch.Tensor, llm: torch.Tensor, y: torch.Tensor) -> float:
    model.eval()
    total = 0.0
    for start in range(0, len(y), 65536):
        logits = model(x[start:start + 65536], llm[start:start + 65536])
        total += float(nn.functional.binary_cross_entropy_with_logits(logits, y[start:start + 65536],
                                                                      reduction="sum"))
    return total / max(len(y), 1)


@torch.no_grad()
def predict_cells(model: nn.Module, embeddings: np.ndarray, question: np.ndarray, llm: np.ndarray) -> np.ndarray:
    model.eval()
    out = np.empty(len(question), dtype=np.float32)
    for start in range(0, len(question), 65536):
        q, m = question[start:start + 65536], llm[start:start + 65536]
        x = torch.from_numpy(np.ascontiguousarray(embeddings[q], dtype=np.float32))
        out[start:start + 65536] = torch.sigmoid(model(x, torch.from_numpy(m.astype(np.int64)))).numpy()
    return out
