"""The JE-IRT model: a trainable adapter over frozen question embeddings, and one learned vector per LLM.

    q = adapter(e) in R^d,  m_k in R^d,  logit = q·m_k / ‖q‖ − ‖q‖,  P(correct) = sigmoid(logit)

The direction of q says which LLMs a question favours, its norm says how hard it is; ‖m_k‖ is the LLM's overall
strength along that direction. `JeirtPredictor` (training.types.Predictor) trains it; see fit.py for the loop.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from training.types import Responses

# Guards the division by ‖q‖; a question vector of norm 0 is a point where the formula has no direction.
NORM_EPS = 1e-8


class Adapter(nn.Module):
    """Two-layer MLP from the frozen embedding (D) to the question vector (d): D → 2D → ReLU → dropout → d."""

    def __init__(self, in_dim: int, dim: int, dropout: float = 0.1) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_dim, 2 * in_dim), nn.ReLU(), nn.Dropout(dropout), nn.Linear(2 * in_dim, dim)
        )

    def forward(self, embeddings: torch.Tensor) -> torch.Tensor:
        return self.net(embeddings)


def jeirt_logits(q: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    """Row-wise logit q·m/‖q‖ − ‖q‖ for paired rows q (n, d) and m (n, d)."""
    norm = q.norm(dim=-1)
    return (q * m).sum(dim=-1) / norm.clamp(min=NORM_EPS) - norm


def jeirt_logit_matrix(q: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    """All-pairs logits (n_questions, K) for q (n, d) and the LLM table m (K, d)."""
    norm = q.norm(dim=-1, keepdim=True)
    return (q @ m.T) / norm.clamp(min=NORM_EPS) - norm


class JeirtModel(nn.Module):
    def __init__(self, in_dim: int, n_llms: int, dim: int, dropout: float) -> None:
        super().__init__()
        self.adapter = Adapter(in_dim, dim, dropout)
        self.llms = nn.Embedding(n_llms, dim)

    def forward(self, embeddings: torch.Tensor, llm: torch.Tensor) -> torch.Tensor:
        return jeirt_logits(self.adapter(embeddings), self.llms(llm))


# The training of the published experiments (the shipped router, docs/analysis*, docs/onboarding, the OOD runs),
# which predate the learning-rate drops and the LLM table's own rate: passed by those commands so that they still
# reproduce their published numbers.
PUBLISHED_SCHEDULE: dict[str, Any] = {"lr_drops": 0, "llm_lr_scale": 1.0}


@dataclass
class JeirtConfig:
    dim: int = 128
    dropout: float = 0.7
    lr: float = 1e-3
    weight_decay: float = 1e-2
    batch_size: int = 1024
    max_epochs: int = 200
    patience: int = 10
    # When validation loss has not improved for `lr_drop_patience` epochs: restore the best weights and divide the
    # learning rate by 10, up to `lr_drops` times; after that, stop at the next plateau of `patience` epochs.
    lr_drops: int = 2
    lr_drop_patience: int = 2
    # The LLM table learns at `llm_lr_scale` times the adapter's rate. Each LLM's row is trained only by its own
    # cells (1/K of them) and starts collinear with the others (llm_init "accuracy"), so at the adapter's rate the
    # rows hardly separate before early stopping, and JE-IRT ordered the LLMs within a question worse than KNN and
    # matrix factorisation. 10 lowered the validation loss of the comparison (the README, "How well it predicts",
    # has the numbers).
    llm_lr_scale: float = 10.0
    seed: int = 0
    # "accuracy": every LLM vector starts along one shared random direction with length set so that a typical
    # question gives the LLM's training accuracy (see fit.init_llm_vectors); "random": N(0, 1/d) per entry.
    llm_init: str = "accuracy"
    # "questions": a batch is all cells of a few questions, so the adapter runs once per question (about K times
    # faster than "cells", where a batch is any cells and the adapter runs once per cell).
    batching: str = "questions"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class JeirtPredictor:
    """JE-IRT as a `training.types.Predictor`: fit on train cells, early-stop on validation loss, predict P(correct).

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

    def fit(
        self, embeddings: np.ndarray, train: Responses, val: Responses, n_llms: int, progress: bool = False
    ) -> JeirtPredictor:
        from training.fit import train_model

        train_model(self, embeddings, train, val, n_llms, progress=progress)
        return self

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

    def predict_proba(self, embeddings: np.ndarray, question: np.ndarray, llm: np.ndarray) -> np.ndarray:
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
        with torch.inference_mode():
            logits = jeirt_logits(
                q[torch.from_numpy(inverse.reshape(-1))], m[torch.from_numpy(llm.reshape(-1))]
            )
        return torch.sigmoid(logits).numpy().astype(np.float64).reshape(question.shape)
