"""Baseline: one logistic regression per LLM on the frozen question embedding (the per-LLM classifier routers of
RouterBench and RouteLLM): P(LLM k right on question q) = sigmoid(w_k·e_q + b_k).

Each LLM's regression is fitted on its own training cells with an L2 penalty on w_k (full-batch L-BFGS; the K
problems are independent and solved together). The penalty is chosen on validation log-loss.
"""

from __future__ import annotations

import numpy as np
import torch
from jeirt_lite._metrics import log_loss
from jeirt_lite_training.types import Responses

L2_GRID = (1e-4, 1e-3, 1e-2, 1e-1)


def _fit(x: torch.Tensor, cells: Responses, n_llms: int, l2: float, iterations: int = 200) -> tuple[torch.Tensor, torch.Tensor]:
    rows, inverse = np.unique(cells.question, return_inverse=True)
    x = x[torch.from_numpy(rows)]  # only the questions with cells, each once
    q = torch.from_numpy(inverse.reshape(-1))
    k = torch.from_numpy(cells.llm)
    y = torch.from_numpy(cells.correct.astype(np.float32))
    # Each cell weighs 1 / (its LLM's cell count): the sum is then each LLM's mean loss, summed over LLMs.
    cell_weight = (1.0 / torch.bincount(k, minlength=n_llms).clamp(min=1).float())[k]
    w = torch.zeros(n_llms, x.shape[1], requires_grad=True)
    b = torch.zeros(n_llms, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], lr=1.0, max_iter=iterations, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        logits = (x @ w.T)[q, k] + b[k]
        losses = torch.nn.functional.binary_cross_entropy_with_logits(logits, y, reduction="none")
        loss = (losses * cell_weight).sum() + l2 * (w * w).sum()  # K independent problems, solved together
        loss.backward()
        return loss

    opt.step(closure)
    return w.detach(), b.detach()


class LogisticPerLlm:
    name = "logreg"

    def __init__(self, l2_grid: tuple[float, ...] = L2_GRID) -> None:
        self.l2_grid = l2_grid
        self.l2 = l2_grid[0]
        self.val_log_loss = float("nan")

    def fit(self, embeddings: np.ndarray, train: Responses, val: Responses, n_llms: int) -> LogisticPerLlm:
        x = torch.from_numpy(np.ascontiguousarray(embeddings, dtype=np.float32))
        best = (np.inf, self.l2_grid[0], None, None)
        for l2 in self.l2_grid:
            w, b = _fit(x, train, n_llms, l2)
            self.w, self.b = w, b
            score = log_loss(val.correct, self.predict_proba(embeddings, val.question, val.llm))
            if score < best[0]:
                best = (score, l2, w, b)
        self.val_log_loss, self.l2, self.w, self.b = best
        return self

    def predict_proba(self, embeddings: np.ndarray, question: np.ndarray, llm: np.ndarray) -> np.ndarray:
        x = torch.from_numpy(np.ascontiguousarray(embeddings[np.asarray(question)], dtype=np.float32))
        k = torch.from_numpy(np.asarray(llm, dtype=np.int64))
        with torch.inference_mode():
            p = torch.sigmoid((x * self.w[k]).sum(dim=1) + self.b[k])
        return p.numpy().astype(np.float64)
