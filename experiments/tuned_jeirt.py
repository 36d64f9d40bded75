"""JE-IRT for the comparison (experiments.compare's `jeirt` row): d and dropout chosen by validation log-loss with
the training library's `choose`, trained on the training part only, as the baselines are tuned on theirs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from jeirt_lite_training.choose import DEFAULT_DIMS, DEFAULT_DROPOUTS, Selection, choose
from jeirt_lite_training.types import Responses


class TunedJeirt:
    name = "JE-IRT"

    def __init__(self, seed: int = 0, dims: Sequence[int] = DEFAULT_DIMS,
                 dropouts: Sequence[float] = DEFAULT_DROPOUTS, **hyper: Any) -> None:
        self.seed, self.dims, self.dropouts, self.hyper = seed, tuple(dims), tuple(dropouts), hyper
        self.selection: Selection | None = None
        self.config: Any = None
        self.best_val_loss: float = float("nan")
        self.candidates: list[dict[str, Any]] = []

    def fit(self, embeddings: np.ndarray, train: Responses, val: Responses, n_llms: int) -> TunedJeirt:
        self.selection = choose(embeddings, [(train, val)], n_llms, dims=self.dims, dropouts=self.dropouts,
                                seed=self.seed, **self.hyper)
        best = self.selection.predictors[0]
        self.config, self.best_val_loss, self.candidates = best.config, best.best_val_loss, self.selection.candidates
        return self

    def predict_proba(self, embeddings: np.ndarray, question: np.ndarray, llm: np.ndarray) -> np.ndarray:
        assert self.selection is not None, "fit first"
        return np.asarray(self.selection.predictors[0].predict_proba(embeddings, question, llm))
