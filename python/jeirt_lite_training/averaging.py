"""An exponential moving average of a model's trained weights, kept beside the weights the optimiser moves.

Each optimiser step pulls the average towards the current weights by 1 − decay. The decay is set from a time
constant in epochs (`JeirtConfig.ema_epochs`), so it means the same on a small and a large dataset:
decay = exp(−1 / (ema_epochs × steps per epoch)). The average is bias-corrected as Adam's moments are: step n
pulls it by (1 − decay) / (1 − decay^n), so that it is a weighted mean of the weights after each step so far
(weights decay^age), never a mix with the initial weights.

jeirt_lite_training.fit validates, early-stops and exports the averaged weights; the optimiser keeps moving the raw ones.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn


def ema_decay(ema_epochs: float, steps_per_epoch: int) -> float:
    """The per-step decay of an average whose time constant is `ema_epochs` epochs."""
    if not (ema_epochs > 0 and steps_per_epoch > 0):
        raise ValueError(f"ema_epochs and steps_per_epoch must be > 0, got {ema_epochs} and {steps_per_epoch}")
    return math.exp(-1.0 / (ema_epochs * steps_per_epoch))


class WeightAverage:
    """The moving average of every parameter of `model` (the adapter, the LLM table, a trainable embedding
    source's weights). `update()` after each optimiser step; `applied()` puts the average in the model for a while;
    `copy_into_model()` for good."""

    def __init__(self, model: nn.Module, decay: float) -> None:
        if not 0 <= decay < 1:
            raise ValueError(f"decay must be in [0, 1), got {decay}")
        self.params = [p for p in model.parameters()]
        self.average = [p.detach().clone() for p in self.params]
        self.decay = float(decay)
        self.updates = 0

    @torch.no_grad()
    def update(self) -> None:
        self.updates += 1
        weight = (1.0 - self.decay) / (1.0 - self.decay**self.updates)
        for avg, p in zip(self.average, self.params):
            avg.lerp_(p.detach(), weight)

    @contextmanager
    def applied(self) -> Iterator[None]:
        """The averaged weights in the model inside the block, the raw ones restored after it."""
        raw = [p.detach().clone() for p in self.params]
        self.copy_into_model()
        try:
            yield
        finally:
            with torch.no_grad():
                for p, r in zip(self.params, raw):
                    p.copy_(r)

    @torch.no_grad()
    def copy_into_model(self) -> None:
        for p, avg in zip(self.params, self.average):
            p.copy_(avg)

    def state(self) -> dict[str, Any]:
        return {"average": [a.clone() for a in self.average], "updates": self.updates}

    @torch.no_grad()
    def load(self, state: dict[str, Any]) -> None:
        for avg, saved in zip(self.average, state["average"]):
            avg.copy_(saved)
        self.updates = int(state["updates"])
