"""The JE-IRT network and its training settings: a trainable adapter over frozen question embeddings, and one
learned vector per LLM.

    q = adapter(e) in R^d,  m_k in R^d,  logit = q·m_k / ‖q‖ − ‖q‖,  P(correct) = sigmoid(logit)

The direction of q says which LLMs a question favours, its norm says how hard it is; ‖m_k‖ is the LLM's overall
strength along that direction. jeirt_lite_training.fit trains it; jeirt_lite_training.model.JeirtPredictor wraps both as a jeirt_lite_training.types.Predictor.
"""

from __future__ import annotations

import torch
from torch import nn

from .config import JeirtConfig as JeirtConfig  # defined without torch, for the command line

# Guards the division by ‖q‖; a question vector of norm 0 is a point where the formula has no direction.
NORM_EPS = 1e-8


class Adapter(nn.Module):
    """Two-layer MLP from the frozen embedding (D) to the question vector (d): D → 2D → ReLU → dropout → d."""

    def __init__(self, in_dim: int, dim: int, dropout: float) -> None:
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

    def logit_matrix(self, embeddings: torch.Tensor) -> torch.Tensor:
        """All-pairs logits (n_questions, K)."""
        return jeirt_logit_matrix(self.adapter(embeddings), self.llms.weight)

