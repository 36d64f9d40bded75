"""One training loop for the torch baselines: minibatch BCE on observed cells, early stopping on validation loss.

Only validation cells are used for the stopping choice; the test part never enters here.

`FitSettings()` is the loop the published tables used until the baselines got the same care as `fit` (a constant
learning rate of 2e-3, no weight decay, stop after 4 flat epochs). Its other fields give them that care
(docs/research/baselines-same-care.md): a per-epoch learning-rate decay (`lr_decay`), `fit`'s drops at
validation plateaus (restore the best weights, divide the rate by 10: `lr_drops`, `lr_drop_patience`, as
jeirt_lite_training.fit does) and a moving average of the weights (`ema_epochs`, the library's
jeirt_lite_training.averaging, which is then what is validated, stopped on and returned). `SAME_CARE` is the
schedule grid the careful baselines choose from on validation loss.

Refit (`fit_best_on_grid(..., refit=True)`), as `fit` does (jeirt_lite_training.choose.refit): the setting and
schedule are chosen on validation exactly as without it, then a fresh model of the chosen setting is trained on
training + validation cells for the learning-rate path that led to the chosen run's best weights (`fit_cells`'s
`path`; epochs undone by a drop's restore are not on it), with no validation and no early stopping
(`train_on_path`).

Folds (`choose_on_grid(..., folds=...)`), as `fit --folds K` (what `--folds auto` takes on small sets): every setting
and schedule trained on each fold, chosen on the validation loss over all folds' cells, refitted for the median path.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, TypeVar

import numpy as np
import torch
from jeirt_lite_training.averaging import WeightAverage, ema_decay
from jeirt_lite_training.choose import median_schedule, parts_loss
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


def _train_epoch(model: nn.Module, optimiser: torch.optim.Optimizer, cells: tuple[torch.Tensor, ...],
                 batch_size: int, generator: torch.Generator, average: WeightAverage | None) -> None:
    """One shuffled pass over the cells (shared by the early-stopped run and its refit: the same steps)."""
    x, m, y = cells
    model.train()
    loss_fn = nn.BCEWithLogitsLoss()
    order = torch.randperm(len(y), generator=generator)
    for start in range(0, len(order), batch_size):
        batch = order[start:start + batch_size]
        optimiser.zero_grad(set_to_none=True)
        loss = loss_fn(model(x[batch], m[batch]), y[batch])
        loss.backward()
        optimiser.step()
        if average is not None:
            average.update()


def _averager(model: nn.Module, settings: FitSettings, n_cells: int) -> WeightAverage | None:
    steps = -(-n_cells // settings.batch_size)
    return WeightAverage(model, ema_decay(settings.ema_epochs, steps)) if settings.ema_epochs > 0 else None


def fit_cells(model: nn.Module, embeddings: np.ndarray, train: Responses, val: Responses,
              settings: FitSettings, history: list[dict[str, float]] | None = None,
              path: list[float] | None = None) -> tuple[nn.Module, float, int]:
    """Train `model(x, llm) -> logits` and return it at its best validation loss, that loss and the epoch count.

    `model` must map a (batch, D) float tensor of question embeddings and a (batch,) long tensor of LLM indices to
    (batch,) logits. With weight averaging the returned model holds the averaged weights of its best epoch.
    `history`, when given, gets one {"epoch", "lr", "val_loss"} per epoch trained (lr: the rate of that epoch).
    `path`, when given, gets the rates of the epochs that led to the returned weights, in order (what
    `train_on_path` replays): a drop restores the best weights, so the epochs it undid are not on it.
    """
    _check(settings)
    torch.manual_seed(settings.seed)
    generator = torch.Generator().manual_seed(settings.seed)
    train_cells = cell_tensors(embeddings, train)
    x_va, m_va, y_va = cell_tensors(embeddings, val)
    optimiser = torch.optim.AdamW(model.parameters(), lr=settings.lr, weight_decay=settings.weight_decay)
    average = _averager(model, settings, len(train_cells[2]))

    def snapshot() -> tuple[dict[str, Any], dict[str, Any] | None]:
        return copy.deepcopy(model.state_dict()), None if average is None else average.state()

    best_loss, best_state, best_epoch = float("inf"), snapshot(), 0
    lr, drops_left, last_drop = settings.lr, settings.lr_drops, 0
    current: list[float] = []  # the rates that led to the weights being trained now
    best_path: list[float] = []
    for epoch in range(1, settings.max_epochs + 1):
        _train_epoch(model, optimiser, train_cells, settings.batch_size, generator, average)
        current.append(lr)
        val_loss = _val_loss(model, average, x_va, m_va, y_va)
        if history is not None:
            history.append({"epoch": epoch, "lr": lr, "val_loss": val_loss})
        if val_loss < best_loss - 1e-5:
            best_loss, best_state, best_epoch, best_path = val_loss, snapshot(), epoch, list(current)
        waited = epoch - max(best_epoch, last_drop)
        if drops_left > 0 and waited >= settings.lr_drop_patience:
            _restore(model, average, best_state)  # as fit does: refine the best weights at a tenth of the rate
            current = list(best_path)  # the epochs after the best are undone
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
    if path is not None:
        path[:] = best_path
    return model, best_loss, best_epoch


def train_on_path(model: nn.Module, embeddings: np.ndarray, cells: Responses, settings: FitSettings,
                  path: Sequence[float], history: list[dict[str, float]] | None = None) -> nn.Module:
    """Train `model` on `cells` for one epoch per rate of `path`, at that rate: no validation, no early stopping
    (jeirt_lite_training.fit.train_on_schedule for the baselines). The batch size, weight decay, weight average
    (its decay from these cells' steps per epoch, as fit's refit) and seed are `settings`'; the returned model
    holds the averaged weights when `settings` average. `history` gets one {"epoch", "lr"} per epoch trained,
    the rate read back from the optimiser."""
    _check(settings)
    if len(path) == 0 or not all(lr > 0 for lr in path):
        raise ValueError(f"a path needs at least one epoch and positive learning rates, got {list(path)}")
    torch.manual_seed(settings.seed)
    generator = torch.Generator().manual_seed(settings.seed)
    train_cells = cell_tensors(embeddings, cells)
    optimiser = torch.optim.AdamW(model.parameters(), lr=path[0], weight_decay=settings.weight_decay)
    average = _averager(model, settings, len(train_cells[2]))
    for epoch, lr in enumerate(path, start=1):
        for group in optimiser.param_groups:
            group["lr"] = float(lr)
        _train_epoch(model, optimiser, train_cells, settings.batch_size, generator, average)
        if history is not None:
            history.append({"epoch": epoch, "lr": float(optimiser.param_groups[0]["lr"])})
    if average is not None:
        average.copy_into_model()
    model.eval()
    return model


def _restore(model: nn.Module, average: WeightAverage | None,
             state: tuple[dict[str, Any], dict[str, Any] | None]) -> None:
    model.load_state_dict(state[0])
    if average is not None and state[1] is not None:
        average.load(state[1])


@dataclass
class GridChoice:
    """What `choose_on_grid` chose on validation, and the model it returns."""

    val_loss: float
    model: nn.Module | None
    config: Any  # the grid setting, with the schedule's name when there were several
    epochs: int  # the chosen run's best epoch
    path: list[float] = field(default_factory=list)  # the rates that led to the chosen run's best weights
    refitted: bool = False  # the model is the chosen setting refitted on training + validation cells


def median_path(paths: Sequence[Sequence[float]], schedule: FitSettings) -> list[float]:
    """The path of several held-out runs of one schedule, as `fit` takes its folds' (jeirt_lite_training.choose):
    the median number of epochs at each rate of the drops, or the median number of epochs of the per-epoch decay."""
    if schedule.lr_decay == 1.0:
        return median_schedule(paths, schedule.lr, schedule.lr_drops + 1)
    epochs = max(1, int(np.floor(np.median([len(path) for path in paths]) + 0.5)))
    return [schedule.lr * schedule.lr_decay**epoch for epoch in range(epochs)]


def _held_out_runs(model: Callable[[], nn.Module], embeddings: np.ndarray,
                   parts: Sequence[tuple[Responses, Responses]],
                   schedule: FitSettings) -> tuple[nn.Module, float, int, list[float]]:
    """One setting trained on each (train, validation) pair: (the first pair's model, the validation loss over all
    pairs' cells, the median best epoch, the median path)."""
    runs, paths = [], []
    for train, val in parts:
        path: list[float] = []
        runs.append(fit_cells(model(), embeddings, train, val, schedule, path=path))
        paths.append(path)
    loss = parts_loss([run[1] for run in runs], parts)
    epochs = int(np.floor(np.median([run[2] for run in runs]) + 0.5))
    return runs[0][0], loss, epochs, paths[0] if len(parts) == 1 else median_path(paths, schedule)


def choose_on_grid(
    grid: Sequence[ConfigT], build: Callable[[ConfigT], nn.Module], embeddings: np.ndarray, train: Responses,
    val: Responses, settings: FitSettings | Sequence[FitSettings], refit: bool = False,
    folds: Sequence[tuple[Responses, Responses]] = (),
) -> GridChoice:
    """Fits `build(config)` for every grid setting and every schedule in `settings` and keeps the lowest validation
    loss. With `refit`, the winner is then trained afresh on training + validation cells for its path (as `fit`
    refits its chosen setting): the choice is the same, only the returned model differs.

    `folds`, (train, validation) pairs over the training and validation cells: choose on all of them as `fit
    --folds K` does (the validation loss over every pair's cells, the median path), then refit (needs `refit`)."""
    if folds and not refit:
        raise ValueError("a choice on folds has no one model to return: it needs refit")
    parts = list(folds) or [(train, val)]
    schedules = [settings] if isinstance(settings, FitSettings) else list(settings)
    best = GridChoice(np.inf, None, {}, 0)
    winner: tuple[ConfigT, FitSettings] | None = None
    for schedule in schedules:
        for config in grid:
            model, loss, epochs, path = _held_out_runs(partial(build, config), embeddings, parts, schedule)
            if loss < best.val_loss:
                chosen = config if len(schedules) == 1 else {"schedule": schedule.name, **dict(config)}  # type: ignore[call-overload]
                best, winner = GridChoice(loss, model, chosen, epochs, path), (config, schedule)
    if refit and winner is not None:
        config, schedule = winner
        torch.manual_seed(schedule.seed)  # the fresh model's initial weights do not depend on the grid's order
        best.model = train_on_path(build(config), embeddings, Responses.concatenate([train, val]), schedule, best.path)
        best.refitted = True
    return best


def fit_best_on_grid(
    grid: Sequence[ConfigT], build: Callable[[ConfigT], nn.Module], embeddings: np.ndarray, train: Responses,
    val: Responses, settings: FitSettings | Sequence[FitSettings], refit: bool = False,
) -> tuple[float, nn.Module | None, ConfigT | dict[str, Any], int]:
    """`choose_on_grid` as (validation loss, model, config, epochs). With several schedules the returned config says
    which (`{"schedule": name, **config}`); with `refit` the model is the winner refitted on training + validation."""
    choice = choose_on_grid(grid, build, embeddings, train, val, settings, refit)
    return choice.val_loss, choice.model, choice.config, choice.epochs


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
