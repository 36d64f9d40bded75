"""Choose-then-refit: how `python -m jeirt_lite_training fit` makes its router from all the data it is given.

1. Held-out runs. The questions it may learn from (all of them, or all but the `--holdout` part) are split into a
   training and a validation part, or into k folds that each serve as the validation part once; identical texts
   stay together and subjects are stratified, as in every split here. Each candidate setting (d x dropout) is
   trained on the training part, its learning-rate drops and its stop decided by the validation loss.
2. Choice. The candidate with the lowest validation log-loss (cell-weighted over folds) wins. Its runs also fix
   the schedule: how many epochs at each learning rate led to its best weights (the median over folds).
3. Refit. The router is trained once more on ALL those questions with the chosen d, dropout and schedule: no
   validation data, no early stopping.

The held-out metrics reported are the chosen setting's predictions on its validation part(s), out of fold when
k > 1. The setting was chosen on those same questions, so they are slightly optimistic; `--holdout` keeps a test
part that nothing sees. The router's calibration (jeirt_lite_training.calibration) is fitted on those held-out predictions
too: never on cells the refitted model learned from.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._runtime import all_metrics
from .config import DEFAULT_DIMS as DEFAULT_DIMS  # the defaults of fit's options, importable without torch
from .config import DEFAULT_DROPOUTS as DEFAULT_DROPOUTS
from .model import JeirtPredictor
from .types import Responses

LEVEL_DECIMALS = 6  # learning rates are compared after rounding log10(lr) to this many decimals


@dataclass
class Selection:
    """The outcome of the held-out runs: the chosen settings and schedule, and what they were chosen on."""

    hyper: dict[str, Any]
    schedule: list[float]
    candidates: list[dict[str, Any]] = field(default_factory=list)
    heldout: Responses | None = None  # the chosen setting's validation cells, all folds together
    heldout_logits: np.ndarray | None = None  # its logits on them (a calibration is fitted on these)
    heldout_p: np.ndarray | None = None  # its predicted P(correct) on them
    heldout_floor_p: np.ndarray | None = None  # each LLM's training accuracy, the floor to beat
    predictors: list[JeirtPredictor] = field(default_factory=list)  # the chosen setting's run on each fold
    # The features each fold's run read, when they are not the embeddings it was chosen on (a static table
    # fine-tuned per fold, jeirt_lite_training.static_finetune); empty: those embeddings.
    heldout_embeddings: list[np.ndarray] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The choice and what it was made on (JSON-safe; experiments.compare records it for the tuned row)."""
        return {"chosen": {"dim": self.hyper["dim"], "dropout": self.hyper["dropout"]},
                "schedule": list(self.schedule), "candidates": self.candidates}

    def heldout_metrics(self) -> dict[str, dict[str, float]]:
        if self.heldout is None or self.heldout_p is None or self.heldout_floor_p is None:
            return {}
        return {
            "jeirt": all_metrics(self.heldout.correct, self.heldout_p),
            "per_llm_accuracy_baseline": all_metrics(self.heldout.correct, self.heldout_floor_p),
        }


def schedule_counts(schedule: Sequence[float], base_lr: float, levels: int) -> list[int]:
    """Epochs spent at base_lr, base_lr/10, ... (levels entries) in a schedule."""
    counts = [0] * levels
    for lr in schedule:
        steps = round(math.log10(base_lr) - math.log10(lr), LEVEL_DECIMALS)
        level = round(steps)
        if steps != level or not 0 <= level < levels:
            raise ValueError(f"learning rate {lr} is not base_lr / 10^i for i < {levels}")
        counts[level] += 1
    return counts


def median_schedule(schedules: Sequence[Sequence[float]], base_lr: float, levels: int) -> list[float]:
    """The schedule whose epochs at each learning rate are the median over `schedules` (at least one epoch)."""
    counts = np.array([schedule_counts(s, base_lr, levels) for s in schedules])
    median = np.floor(np.median(counts, axis=0) + 0.5).astype(int)
    out = [base_lr * 0.1**level for level, n in enumerate(median) for _ in range(n)]
    return out or [base_lr]


def parts_loss(losses: Sequence[float], parts: Sequence[tuple[Responses, Responses]]) -> float:
    """The validation loss over the cells of all (train, validation) `parts`: each part's loss weighted by its cells."""
    n_val = np.array([len(val) for _, val in parts], dtype=np.float64)
    return float(np.dot(losses, n_val) / n_val.sum())


def _floor_p(train: Responses, cells: Responses, n_llms: int) -> np.ndarray:
    from .fit import llm_accuracies

    return llm_accuracies(train, n_llms)[cells.llm]


def choose(
    embeddings: np.ndarray,
    parts: Sequence[tuple[Responses, Responses]],
    n_llms: int,
    *,
    dims: Sequence[int] = DEFAULT_DIMS,
    dropouts: Sequence[float] = DEFAULT_DROPOUTS,
    log: Callable[[str], None] = lambda _: None,
    **hyper: Any,
) -> Selection:
    """Train every (d, dropout) on each (train, validation) pair of `parts`; keep the lowest validation loss."""
    if not parts:
        raise ValueError("choose needs at least one (train, validation) pair")
    if not dims or not dropouts:
        raise ValueError("choose needs at least one d and one dropout")
    best: Selection | None = None
    best_loss = math.inf
    candidates: list[dict[str, Any]] = []
    # A value given twice (--dims 16,16) is one candidate, trained once.
    for dim, dropout in itertools.product(dict.fromkeys(map(int, dims)), dict.fromkeys(map(float, dropouts))):
        setting = {**hyper, "dim": int(dim), "dropout": float(dropout)}
        runs = [JeirtPredictor(**setting).fit(embeddings, train, val, n_llms) for train, val in parts]
        loss = parts_loss([r.best_val_loss for r in runs], parts)
        candidates.append(
            {"dim": int(dim), "dropout": float(dropout), "val_loss": loss,
             "best_epochs": [r.best_epoch for r in runs]}
        )
        log(f"  d={dim} dropout={dropout}: validation log-loss {loss:.4f} (best epochs {candidates[-1]['best_epochs']}, "
            f"{sum(r.train_seconds for r in runs):.0f}s)")
        if loss < best_loss:
            best_loss = loss
            config = runs[0].config
            best = Selection(
                hyper=setting,
                schedule=median_schedule([r.schedule for r in runs], config.lr, config.lr_drops + 1),
                predictors=runs,
            )
    if best is None:
        raise ValueError(f"no setting reached a finite validation loss ({candidates}): check the features and the "
                         "learning rate")
    best.candidates = candidates
    vals = [val for _, val in parts]
    best.heldout = Responses.concatenate(vals)
    best.heldout_logits = np.concatenate(
        [r.predict_logits(embeddings, val.question, val.llm) for r, (_, val) in zip(best.predictors, parts)]
    )
    best.heldout_p = np.concatenate(
        [r.predict_proba(embeddings, val.question, val.llm) for r, (_, val) in zip(best.predictors, parts)]
    )
    best.heldout_floor_p = np.concatenate([_floor_p(train, val, n_llms) for train, val in parts])
    return best


def refit(
    embeddings: np.ndarray, cells: Responses, n_llms: int, selection: Selection, progress: bool = False
) -> JeirtPredictor:
    """The router's model: the chosen settings trained on all `cells` for the chosen schedule."""
    return JeirtPredictor(**selection.hyper).fit_schedule(
        embeddings, cells, n_llms, selection.schedule, progress=progress
    )


def selection_record(selection: Selection, *, folds: int, n_questions: int, n_cells: int) -> dict[str, Any]:
    """How the router's settings were chosen, for router.json."""
    config = selection.predictors[0].config if selection.predictors else None
    levels = config.lr_drops + 1 if config else 1
    base_lr = config.lr if config else selection.schedule[0]
    return {
        "protocol": "choose-then-refit",
        "folds": folds,
        "chosen_on": (
            "validation loss of a held-out part (grouped by text, stratified by subject)"
            if folds == 1 else f"mean validation loss over {folds} folds (grouped by text, stratified by subject)"
        ),
        "candidates": selection.candidates,
        "chosen": {"dim": selection.hyper["dim"], "dropout": selection.hyper["dropout"]},
        "schedule": {
            "epochs": len(selection.schedule),
            "epochs_per_learning_rate": dict(
                zip([f"{base_lr * 0.1**i:g}" for i in range(levels)], schedule_counts(selection.schedule, base_lr, levels))
            ),
            "from": "the chosen setting's best epoch on each held-out run (median over folds)",
        },
        "refit_on": {"questions": n_questions, "cells": n_cells, "validation": "none (fixed schedule)"},
    }

