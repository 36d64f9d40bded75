"""JE-IRT as a `jeirt_lite_training.types.Predictor`: the network (jeirt_lite_training.network) trained by jeirt_lite_training.fit.

The network's names are re-exported here, where the rest of the package has always imported them from.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from .fit import Questions, TrainOutcome, train_model, train_on_schedule
from .network import (
    NORM_EPS,
    Adapter,
    JeirtConfig,
    JeirtModel,
    jeirt_logit_matrix,
    jeirt_logits,
)
from .types import Responses

__all__ = [
    "NORM_EPS",
    "Adapter",
    "JeirtConfig",
    "JeirtModel",
    "JeirtPredictor",
    "jeirt_logit_matrix",
    "jeirt_logits",
]


class JeirtPredictor:
    """JE-IRT as a `jeirt_lite_training.types.Predictor`: fit on train cells, early-stop on validation loss, predict P(correct).

    >>> p = JeirtPredictor(dim=64).fit(emb, split.responses(ds, "train"), split.responses(ds, "val"), ds.n_llms)
    >>> p.predict_proba(emb, np.array([0, 0]), np.array([3, 7]))
    """

    name = "JE-IRT"

    def __init__(self, **hyper: Any) -> None:
        unknown = set(hyper) - set(JeirtConfig.__dataclass_fields__)
        if unknown:
            raise TypeError(f"unknown JE-IRT hyper-parameters: {sorted(unknown)}")
        self.config = JeirtConfig(**hyper)
        self.model: JeirtModel | None = None
        self.history: list[dict[str, float]] = []  # one row per epoch: train_loss, val_loss, lr
        self.best_epoch: int = -1
        self.best_val_loss: float = float("nan")
        self.train_seconds: float = float("nan")
        self.schedule: list[float] = []  # the adapter's learning rate of each epoch that made the weights

    def fit(
        self, embeddings: Questions, train: Responses, val: Responses, n_llms: int, progress: bool = False,
        soft_targets: bool = False,
    ) -> JeirtPredictor:
        """soft_targets: train's `correct` may be probabilities in [0, 1] (jeirt_lite_training.fit.train_model)."""
        self._take(train_model(self.config, embeddings, train, val, n_llms, progress=progress,
                               soft_targets=soft_targets))
        return self

    def fit_schedule(
        self, embeddings: Questions, train: Responses, n_llms: int, schedule: Sequence[float],
        progress: bool = False, soft_targets: bool = False,
    ) -> JeirtPredictor:
        """Train on `train` alone for len(schedule) epochs at those learning rates (no validation, no stopping)."""
        self._take(train_on_schedule(self.config, embeddings, train, n_llms, schedule, progress=progress,
                                     soft_targets=soft_targets))
        return self

    def _take(self, outcome: TrainOutcome) -> None:
        self.model = outcome.model
        self.history = outcome.history
        self.best_epoch = outcome.best_epoch
        self.best_val_loss = outcome.best_val_loss
        self.train_seconds = outcome.seconds
        self.schedule = outcome.schedule

    def _require_model(self) -> JeirtModel:
        if self.model is None:
            raise RuntimeError("JeirtPredictor is not fitted yet: call fit(...) first")
        return self.model

    @property
    def adapter(self) -> Adapter:
        """The trained adapter (torch module, eval mode)."""
        return self._require_model().adapter

    @property
    def llm_vectors(self) -> np.ndarray:
        """The trained LLM table, (K, d) float32."""
        return self._require_model().llms.weight.detach().cpu().numpy().astype(np.float32).copy()

    def question_vectors(self, embeddings: np.ndarray) -> np.ndarray:
        """Adapter outputs (n, d) float32 for the given embedding rows."""
        model = self._require_model()
        model.eval()
        with torch.inference_mode():
            q = model.adapter(torch.from_numpy(np.ascontiguousarray(embeddings, dtype=np.float32)))
        return q.numpy()

    def predict_logits(self, embeddings: np.ndarray, question: np.ndarray, llm: np.ndarray) -> np.ndarray:
        """The JE-IRT logit q·m/‖q‖ − ‖q‖ of each (question, LLM) pair, float64 (what a calibration is fitted on)."""
        question = np.asarray(question, dtype=np.int64)
        llm = np.asarray(llm, dtype=np.int64)
        if question.shape != llm.shape:
            raise ValueError(
                f"question and llm must have the same shape, got {question.shape} and {llm.shape}"
            )
        model = self._require_model()
        if llm.size and (llm.min() < 0 or llm.max() >= model.llms.num_embeddings):
            raise IndexError(f"llm index out of range [0, {model.llms.num_embeddings})")
        # Encode each asked question once, then score the requested (question, LLM) pairs.
        unique_q, inverse = np.unique(question, return_inverse=True)
        q = torch.from_numpy(self.question_vectors(embeddings[unique_q]))
        m = model.llms.weight.detach()
        rows, columns = inverse.reshape(-1), llm.reshape(-1)
        with torch.inference_mode():
            logits = jeirt_logits(q[torch.from_numpy(rows)], m[torch.from_numpy(columns)]).numpy().astype(np.float64)
        return logits.reshape(question.shape)

    def predict_proba(self, embeddings: np.ndarray, question: np.ndarray, llm: np.ndarray) -> np.ndarray:
        logits = torch.from_numpy(self.predict_logits(embeddings, question, llm).astype(np.float32))
        return torch.sigmoid(logits).numpy().astype(np.float64)
