"""One training loop for the torch baselines: minibatch BCE on observed cells, early stopping on validation loss.

Only validation cells are used for the stopping choice; the test part never enters here.

`FitSettings()` is the loop the published tables used until the baselines got the same care as `fit` (a constant
learning rate of 2e-3, no weight decay, stop after 4 flat epochs). Its other fields give them that care
(docs/research/baselines-same-care.md): a per-epoch learning-rate decay (`lr_decay`), `fit`'s drops at
validation plateaus (restore the best weights, divide the rate by 10: `lr_drops`, `lr_drop_patience`, as
jeirt_lite_training.fit does) and a moving average of the weights (`ema_epochs`, the library's
jeirt_lite_training.averaging, which is then what is validated, stopped on and returned). `SAME_CARE` is the
schedule grid the careful baselines choose from on validation loss.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import numpy as np
import torch
from jeirt_lite_training.averaging import WeightAverage, ema_decay
from jeirt_lite_training.types import Responses
from torch import nn

ConfigT = TypeVar("ConfigT")


@dataclass(frozen=True)
class FitSettings:
    lr: float = 2e-3
    weight_decay: float = 0.0
    batch_size: int = 2048
    max_epochs: int = 60
    patience: int = 4  # epochs without a better validation loss before stopping (after the last drop)
    seed: int = 0
    lr_decay: float = 1.0  # the learning rate is multiplied by this after every epoch
    lr_drops: int = 0  # plateaus of lr_drop_patience epochs that restore the best weights and divide the rate by 10
    lr_drop_patience: int = 2
    ema_epochs: float = 0.0  # time constant of the weight average in epochs; 0: the raw weights
    name: str = "constant lr"  # the schedule's label in a grid's choice


# The schedules the careful baselines choose from: the recipe of the kept-back MIRT that led the project (AdamW,
# weight decay 0.01, lr 1e-3 times 0.7 after every epoch, batch 512, patience 10), and what `fit` gets (its two
# drops after 2 flat epochs, patience 10 after them, and its half-epoch weight average:
# jeirt_lite_training.network.JeirtConfig's defaults). At most 30 epochs: with the decay the rate is 1e-6 by
# epoch 20, and the drops reach 1e-5 within a few epochs of the best.
_CAREFUL = FitSettings(lr=1e-3, weight_decay=0.01, batch_size=512, max_epochs=30, patience=10)
SAME_CARE: tuple[FitSettings, ...] = (
    replace(_CAREFUL, lr_decay=0.7, name="decay 0.7"),
    replace(_CAREFUL, lr_drops=2, lr_drop_patience=2, ema_epochs=0.5, name="drops + averaging"),
)


def with_seed(schedules: Sequence[FitSettings], seed: int) -> tuple[FitSettings, ...]:
    return tuple(replace(s, seed=seed) for s in schedules)


def cell_tensors(embeddings: np.ndarray, cells: Responses) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(question embedding per cell, LLM index per cell, label per cell) as tensors."""
    x = torch.from_numpy(np.ascontiguousarray(embeddings[cells.question], dtype=np.float32))
    return x, torch.from_numpy(cells.llm.astype(np.int64)), torch.from_numpy(cells.correct.astype(np.float32))


def _check(settings: FitSettings) -> None:
    if not (0 < settings.lr_decay <= 1):
        raise ValueError(f"lr_decay must be in (0, 1], got {settings.lr_decay}")
    if settings.lr_drops < 0 or settings.lr_drop_patience < 1 or settings.patience < 1:
        raise ValueError(f"lr_drops must be >= 0, lr_drop_patience and patience >= 1, got {settings}")
    if not settings.ema_epochs >= 0:
        raise ValueError(f"ema_epochs must be >= 0 (0: no weight averaging), got {settings.ema_epochs}")


def _val_loss(model: nn.Module, average: WeightAverage | None, x: torch.Tensor, m: torch.Tensor,
              y: torch.Tensor) -> float:
    if average is None:
        return evaluate_loss(model, x, m, y)
    with average.applied():
        return evaluate_loss(model, x, m, y)


def fit_cells(model: nn.Module, embeddings: np.ndarray, train: Responses, val: Responses,
              settings: FitSettings, history: list[dict[str, float]] | None = None) -> tuple[nn.Module, float, int]:
    """Train `model(x, llm) -> logits` and return it at its best validation loss, that loss and the epoch count.

    `model` must map a (batch, D) float tensor of question embeddings and a (batch,) long tensor of LLM indices to
    (batch,) logits. With weight averaging the returned model holds the averaged weights of its best epoch.
    `history`, when given, gets one {"epoch", "lr", "val_loss"} per epoch trained (lr: the rate of that epoch).
    """
    _check(settings)
    torch.manual_seed(settings.seed)
    generator = torch.Generator().manual_seed(settings.seed)
    x_tr, m_tr, y_tr = cell_tensors(embeddings, train)
    x_va, m_va, y_va = cell_tensors(embeddings, val)
    optimiser = torch.optim.AdamW(model.parameters(), lr=settings.lr, weight_decay=settings.weight_decay)
    steps = -(-len(y_tr) // settings.batch_size)
    average = WeightAverage(model, ema_decay(settings.ema_epochs, steps)) if settings.ema_epochs > 0 else None
    loss_fn = nn.BCEWithLogitsLoss()

    def snapshot() -> tuple[dict[str, Any], dict[str, Any] | None]:
        return copy.deepcopy(model.state_dict()), None if average is None else average.state()

    best_loss, best_state, best_epoch = float("inf"), snapshot(), 0
    lr, drops_left, last_drop = settings.lr, settings.lr_drops, 0
    for epoch in range(1, settings.max_epochs + 1):
        model.train()
        order = torch.randperm(len(y_tr), generator=generator)
        for start in range(0, len(order), settings.batch_size):
            batch = order[start:start + settings.batch_size]
            optimiser.zero_grad(set_to_none=True)
            loss = loss_fn(model(x_tr[batch], m_tr[batch]), y_tr[batch])
            loss.backward()
            optimiser.step()
            if average is not None:
                average.update()
        val_loss = _val_loss(model, average, x_va, m_va, y_va)
        if history is not None:
            history.append({"epoch": epoch, "lr": lr, "val_loss": val_loss})
        if val_loss < best_loss - 1e-5:
            best_loss, best_state, best_epoch = val_loss, snapshot(), epoch
        waited = epoch - max(best_epoch, last_drop)
        if drops_left > 0 and waited >= settings.lr_drop_patience:
            _restore(model, average, best_state)  # as fit does: refine the best weights at a tenth of the rate
            lr, drops_left, last_drop = lr * 0.1, drops_left - 1, epoch
        elif drops_left == 0 and waited >= settings.patience:
            break
        lr *= settings.lr_decay
        for group in optimiser.param_groups:
            group["lr"] = lr
    _restore(model, average, best_state)
    if average is not None:
        average.copy_into_model()
    model.eval()
    return model, best_loss, best_epoch


def _restore(model: nn.Module, average: WeightAverage | None,
             state: tuple[dict[str, Any], dict[str, Any] | None]) -> None:
    model.load_state_dict(state[0])
    if average is not None and state[1] is not None:
        average.load(state[1])


def fit_best_on_grid(
    grid: Sequence[ConfigT], build: Callable[[ConfigT], nn.Module], embeddings: np.ndarray, train: Responses,
    val: Responses, settings: FitSettings | Sequence[FitSettings],
) -> tuple[float, nn.Module | None, ConfigT | dict[str, Any], int]:
    """Fits `build(config)` for every grid setting and every schedule in `settings`; returns (validation loss,
    model, config, epochs) of the lowest validation loss. With several schedules the returned config says which
    (`{"schedule": name, **config}`)."""
    schedules = [settings] if isinstance(settings, FitSettings) else list(settings)
    best: tuple[float, nn.Module | None, ConfigT | dict[str, Any], int] = (np.inf, None, {}, 0)
    for schedule in schedules:
        for config in grid:
            model, loss, epochs = fit_cells(build(config), embeddings, train, val, schedule)
            if loss < best[0]:
                chosen = config if len(schedules) == 1 else {"schedule": schedule.name, **dict(config)}  # type: ignore[call-overload]
                best = (loss, model, chosen, epochs)
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
