"""Training loop for JE-IRT: AdamW on shuffled mini-batches of cells, BCE with logits, the learning rate divided
by 10 at validation plateaus (from the best weights so far), early stopping on the validation loss with the best
weights restored. Deterministic for a given seed and thread count.

Why the learning-rate drops: at lr 1e-3 the best validation loss comes after a few epochs and is a noisy optimum
(runs that differ only in their seed differ by as much as JE-IRT and KNN do on MMLU-Pro). Refining the best
weights at lr 1e-4 and 1e-5 improved the MMLU-Pro comparison and left zeroeval about unchanged (the numbers are in
docs/research/comparison.md).

The LLM table has its own learning rate (JeirtConfig.llm_lr_scale, 10x the adapter's): see the config's comment.

With JeirtConfig.ema_epochs > 0 (the default) a moving average of all trained weights (jeirt_lite_training.averaging) is
what a run validates, stops on, restores and returns; the optimiser moves the raw weights underneath.

A run records its `schedule`: the adapter's learning rate of every epoch on the path to the weights it returns
(epochs undone by a restore are not on it). `train_on_schedule` replays such a schedule without validation data,
which is how `fit` trains its final router on all the data with the epochs chosen on held-out runs.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, Union

import numpy as np
import torch
from torch import nn

from ._runtime import check_seed
from .averaging import WeightAverage, ema_decay
from .network import JeirtConfig, JeirtModel, jeirt_logits
from .progress import progress_bar
from .types import Responses

# Warm start (llm_init="accuracy"): the adapter's output starts near WARM_NORM·u for one shared unit vector u, and
# m_k = (logit(acc_k) + WARM_NORM)·u, so the first logits are ≈ logit(acc_k): training starts from the per-LLM
# accuracy baseline instead of from noise.
WARM_NORM = 2.0
WARM_WEIGHT_SCALE = 0.1


def _check_embeddings(embeddings: Questions) -> None:
    """Once per run: the question features every part's cells index into."""
    if embeddings.ndim != 2:
        raise ValueError(f"embeddings must be 2-D (n_questions, D), got shape {embeddings.shape}")
    if isinstance(embeddings, np.ndarray) and not np.isfinite(embeddings).all():
        rows = np.flatnonzero(~np.isfinite(embeddings).all(axis=1))
        raise ValueError(f"embeddings hold NaN or infinite values in {len(rows)} rows (first: {rows[:5].tolist()})")


def _check_inputs(embeddings: Questions, cells: Responses, n_llms: int, what: str, soft: bool = False) -> None:
    if len(cells) == 0:
        raise ValueError(f"{what} has no cells")
    if cells.question.min() < 0 or cells.question.max() >= embeddings.shape[0]:
        raise IndexError(f"{what}: question index outside the {embeddings.shape[0]} embedding rows")
    if cells.llm.min() < 0 or cells.llm.max() >= n_llms:
        raise IndexError(f"{what}: llm index outside [0, {n_llms})")
    bad = ~((cells.correct >= 0.0) & (cells.correct <= 1.0)) if soft else ~np.isin(cells.correct, (0.0, 1.0))
    if bad.any():
        need = "a probability in [0, 1] (soft targets)" if soft else "0 or 1"
        raise ValueError(f"{what}: 'correct' must be {need}; found {cells.correct[bad][:3]}")


def llm_accuracies(train: Responses, n_llms: int, prior: float = 1.0) -> np.ndarray:
    """Per-LLM training accuracy, smoothed towards 0.5 by `prior` pseudo-counts (an LLM without cells gets 0.5)."""
    hits = np.bincount(train.llm, weights=train.correct, minlength=n_llms)
    counts = np.bincount(train.llm, minlength=n_llms)
    return (hits + prior) / (counts + 2 * prior)


def init_llm_vectors(
    model: JeirtModel, train: Responses, n_llms: int, how: str, gen: torch.Generator
) -> None:
    dim = model.llms.embedding_dim
    with torch.no_grad():
        if how == "random":
            model.llms.weight.normal_(0.0, 1.0 / math.sqrt(dim), generator=gen)
        elif how == "accuracy":
            u = torch.randn(dim, generator=gen)
            u /= u.norm()
            acc = torch.from_numpy(llm_accuracies(train, n_llms)).float()
            scale = torch.log(acc / (1 - acc)) + WARM_NORM
            model.llms.weight.copy_(scale[:, None] * u[None, :])
            last = model.adapter.net[-1]
            assert isinstance(last, nn.Linear)
            last.weight.mul_(WARM_WEIGHT_SCALE)
            last.bias.copy_(WARM_NORM * u)
        else:
            raise ValueError(f"llm_init must be 'accuracy' or 'random', got {how!r}")


Batch = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]


class TrainableQuestions(Protocol):
    """Question embeddings that train with the model (an nn.Module; jeirt_lite_training.static_finetune has one): rows are
    looked up by question index like a frozen matrix's, and its parameters join the optimiser."""

    shape: tuple[int, int]
    ndim: int

    def __getitem__(self, rows: torch.Tensor) -> torch.Tensor: ...

    def param_groups(self, lr: float) -> list[dict[str, Any]]: ...


# Frozen embeddings (n_questions, D), or embeddings that train along (TrainableQuestions).
Questions = Union[np.ndarray, TrainableQuestions]


def cell_batches(train: Responses, batch_size: int, rng: np.random.Generator) -> Iterator[Batch]:
    """Shuffled mini-batches of training cells as (question rows, row of each cell, llm, correct): all cells of a
    shuffled run of questions, about `batch_size` cells a batch, so the adapter runs once per question rather than
    once per cell (about K times less work)."""
    order = np.argsort(train.question, kind="stable")
    questions, starts, counts = np.unique(train.question[order], return_index=True, return_counts=True)
    per_batch = _questions_per_batch(train, len(questions), batch_size)
    perm = rng.permutation(len(questions))
    for s in range(0, len(perm), per_batch):
        pick = perm[s : s + per_batch]
        cells = order[np.concatenate([np.arange(starts[i], starts[i] + counts[i]) for i in pick])]
        local = np.repeat(np.arange(len(pick)), counts[pick])
        yield (
            torch.from_numpy(questions[pick]),
            torch.from_numpy(local),
            torch.from_numpy(train.llm[cells]),
            torch.from_numpy(train.correct[cells].astype(np.float32)),
        )


def _questions_per_batch(train: Responses, n_questions: int, batch_size: int) -> int:
    return max(1, round(batch_size * n_questions / len(train)))


def steps_per_epoch(train: Responses, batch_size: int) -> int:
    """How many batches cell_batches yields for one pass over `train`."""
    n_questions = len(np.unique(train.question))
    return math.ceil(n_questions / _questions_per_batch(train, n_questions, batch_size))


def mean_bce(model: JeirtModel, emb: Any, cells: Responses, chunk: int = 4096) -> float:
    """Mean validation BCE, encoding each question once (eval mode, no dropout)."""
    model.eval()
    uq, inv = np.unique(cells.question, return_inverse=True)
    total = 0.0
    with torch.inference_mode():
        logits = model.logit_matrix(emb[torch.from_numpy(uq)])[torch.from_numpy(inv), torch.from_numpy(cells.llm)]
        y = torch.from_numpy(cells.correct.astype(np.float32))
        for s in range(0, len(y), chunk):
            total += float(
                nn.functional.binary_cross_entropy_with_logits(
                    logits[s : s + chunk], y[s : s + chunk], reduction="sum"
                )
            )
    return total / len(cells)


@dataclass
class TrainOutcome:
    """What one training run produced: the weights (eval mode) and how it got there."""

    model: JeirtModel
    history: list[dict[str, float]] = field(default_factory=list)  # one row per epoch: train_loss, val_loss, lr
    best_epoch: int = -1
    best_val_loss: float = float("nan")
    seconds: float = float("nan")
    schedule: list[float] = field(default_factory=list)  # the adapter's lr per epoch on the path to the weights


def _check_config(cfg: JeirtConfig) -> None:
    check_seed(cfg.seed)
    if cfg.lr_drops < 0 or cfg.lr_drop_patience < 1:
        raise ValueError(
            f"lr_drops must be >= 0 and lr_drop_patience >= 1, got {cfg.lr_drops} and {cfg.lr_drop_patience}"
        )
    if not cfg.llm_lr_scale > 0:
        raise ValueError(f"llm_lr_scale must be > 0, got {cfg.llm_lr_scale}")
    if not cfg.ema_epochs >= 0:
        raise ValueError(f"ema_epochs must be >= 0 (0: no weight averaging), got {cfg.ema_epochs}")


def _averager(cfg: JeirtConfig, model: JeirtModel, train: Responses) -> WeightAverage | None:
    """The moving average of the weights that the run validates and returns (None: the raw weights)."""
    if cfg.ema_epochs == 0:
        return None
    return WeightAverage(model, ema_decay(cfg.ema_epochs, steps_per_epoch(train, cfg.batch_size)))


Snapshot = tuple[dict[str, Any], Union[dict[str, Any], None]]


def _snapshot(model: JeirtModel, average: WeightAverage | None) -> Snapshot:
    return copy.deepcopy(model.state_dict()), None if average is None else average.state()


def _restore(model: JeirtModel, average: WeightAverage | None, snapshot: Snapshot) -> None:
    model.load_state_dict(snapshot[0])
    if average is not None and snapshot[1] is not None:
        average.load(snapshot[1])


def _val_loss(model: JeirtModel, average: WeightAverage | None, emb: Any, val: Responses) -> float:
    if average is None:
        return mean_bce(model, emb, val)
    with average.applied():
        return mean_bce(model, emb, val)


def _start(
    cfg: JeirtConfig, embeddings: Questions, train: Responses, n_llms: int
) -> tuple[JeirtModel, torch.optim.Optimizer, Any, np.random.Generator]:
    """Seeded model (warm-started), optimiser, embeddings as a tensor (or the trainable source, registered in the
    model as `questions` so that its weights are saved and restored with the rest), and the batch-order generator."""
    torch.manual_seed(cfg.seed)
    gen = torch.Generator().manual_seed(cfg.seed)
    emb: Any = (
        torch.from_numpy(np.ascontiguousarray(embeddings, dtype=np.float32))
        if isinstance(embeddings, np.ndarray) else embeddings
    )
    model = JeirtModel(emb.shape[1], n_llms, cfg.dim, cfg.dropout)
    init_llm_vectors(model, train, n_llms, cfg.llm_init, gen)
    groups: list[dict[str, Any]] = [
        {"params": model.adapter.parameters()},
        {"params": model.llms.parameters(), "lr": cfg.lr * cfg.llm_lr_scale},
    ]
    if not isinstance(embeddings, np.ndarray):
        model.add_module("questions", emb)
        groups += embeddings.param_groups(cfg.lr)
    opt = torch.optim.AdamW(groups, lr=cfg.lr, weight_decay=cfg.weight_decay)
    return model, opt, emb, np.random.default_rng(cfg.seed)


def _set_lr(opt: torch.optim.Optimizer, cfg: JeirtConfig, lr: float) -> None:
    opt.param_groups[0]["lr"] = lr
    opt.param_groups[1]["lr"] = lr * cfg.llm_lr_scale
    for group in opt.param_groups[2:]:  # a trainable embedding source's, at its own multiple of the adapter's
        group["lr"] = lr * group["lr_scale"]


def _train_epoch(
    model: JeirtModel, opt: torch.optim.Optimizer, emb: Any, train: Responses, cfg: JeirtConfig,
    rng: np.random.Generator, average: WeightAverage | None = None,
) -> float:
    """One pass over the training cells; returns the mean training loss."""
    model.train()
    running = 0.0
    for rows, local, llm, y in cell_batches(train, cfg.batch_size, rng):
        logits = jeirt_logits(model.adapter(emb[rows])[local], model.llms(llm))
        loss = nn.functional.binary_cross_entropy_with_logits(logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if average is not None:
            average.update()
        running += loss.item() * len(y)
    return running / len(train)


def _progress_bar(cfg: JeirtConfig, total: int, progress: bool) -> Any:
    return progress_bar(total, f"JE-IRT d={cfg.dim}", "epoch") if progress else None


def train_model(
    cfg: JeirtConfig,
    embeddings: Questions,
    train: Responses,
    val: Responses,
    n_llms: int,
    progress: bool = False,
    soft_targets: bool = False,
) -> TrainOutcome:
    """Early-stopped training on `train`, learning-rate drops and stopping decided by the loss on `val`.

    soft_targets: train's `correct` may be any probability (a teacher's, experiments.ensemble_eval distils one); the
    loss is the same BCE, and `val` keeps 0/1 answers."""
    _check_embeddings(embeddings)
    _check_inputs(embeddings, train, n_llms, "train", soft=soft_targets)
    _check_inputs(embeddings, val, n_llms, "val")
    _check_config(cfg)
    t0 = time.perf_counter()
    model, opt, emb, rng = _start(cfg, embeddings, train, n_llms)
    average = _averager(cfg, model, train)
    best_state = _snapshot(model, average)
    best_loss = _val_loss(model, average, emb, val)
    best_epoch = 0
    path: list[float] = []  # learning rates of the epochs that led to the current weights
    best_path: list[float] = []
    drops_left, last_drop = cfg.lr_drops, 0  # last_drop: the epoch of the last learning-rate drop
    lr = cfg.lr  # the adapter's; the LLM table's is llm_lr_scale times it
    history: list[dict[str, float]] = [{"epoch": 0, "train_loss": float("nan"), "val_loss": best_loss, "lr": lr}]
    bar = _progress_bar(cfg, cfg.max_epochs, progress)
    for epoch in range(1, cfg.max_epochs + 1):
        train_loss = _train_epoch(model, opt, emb, train, cfg, rng, average)
        path.append(lr)
        val_loss = _val_loss(model, average, emb, val)
        history.append({"epoch": epoch, "train_loss": train_loss, "val_loss": val_loss, "lr": lr})
        if val_loss < best_loss - 1e-5:
            best_loss, best_epoch, best_path = val_loss, epoch, list(path)
            best_state = _snapshot(model, average)
        if bar is not None:
            bar.update(1)
            bar.set_postfix(train=f"{train_loss:.4f}", val=f"{val_loss:.4f}", best=best_epoch)
        waited = epoch - max(best_epoch, last_drop)
        if drops_left > 0 and waited >= cfg.lr_drop_patience:
            _restore(model, average, best_state)
            path = list(best_path)
            lr *= 0.1
            _set_lr(opt, cfg, lr)
            drops_left, last_drop = drops_left - 1, epoch
        elif drops_left == 0 and waited >= cfg.patience:
            break
    if bar is not None:
        bar.close()
    _restore(model, average, best_state)
    if average is not None:
        average.copy_into_model()
    model.eval()
    return TrainOutcome(model, history, best_epoch, best_loss, time.perf_counter() - t0, best_path)


def train_on_schedule(
    cfg: JeirtConfig,
    embeddings: Questions,
    train: Responses,
    n_llms: int,
    schedule: Sequence[float],
    progress: bool = False,
    soft_targets: bool = False,
) -> TrainOutcome:
    """Training without validation data: one epoch per entry of `schedule`, at that (adapter) learning rate."""
    _check_embeddings(embeddings)
    _check_inputs(embeddings, train, n_llms, "train", soft=soft_targets)
    _check_config(cfg)
    if len(schedule) == 0 or not all(lr > 0 for lr in schedule):
        raise ValueError(f"a schedule needs at least one epoch and positive learning rates, got {list(schedule)}")
    t0 = time.perf_counter()
    model, opt, emb, rng = _start(cfg, embeddings, train, n_llms)
    average = _averager(cfg, model, train)
    history: list[dict[str, float]] = []
    bar = _progress_bar(cfg, len(schedule), progress)
    for epoch, lr in enumerate(schedule, start=1):
        _set_lr(opt, cfg, float(lr))
        train_loss = _train_epoch(model, opt, emb, train, cfg, rng, average)
        history.append({"epoch": epoch, "train_loss": train_loss, "val_loss": float("nan"), "lr": float(lr)})
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    if average is not None:
        average.copy_into_model()
    model.eval()
    return TrainOutcome(model, history, len(schedule), float("nan"), time.perf_counter() - t0, list(schedule))
