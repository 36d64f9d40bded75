"""Baseline 5, a diagnostic: plain 2PL IRT fitted on the training matrix.

logit = a_i * theta_m - b_i with one (a_i, b_i) per item and one theta_m per LLM, fitted by maximum a posteriori
(Gaussian priors: theta ~ N(0, 1), a ~ N(0, PRIOR_SD^2), b ~ N(0, PRIOR_SD^2)) with full-batch L-BFGS. Afterwards
theta is standardised (mean 0, sd 1 over the LLMs) and the orientation fixed so that most discriminations are
positive, which makes the thresholds below meaningful.

It predicts only for items it has seen, so it is not in the held-out comparison. It shows why a single ability
scale does not fit: the share of items with negative or near-zero discrimination, and the LLM pairs whose order
flips between subjects.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from jeirt_lite_training.types import Dataset, Responses

PRIOR_SD = 3.0
SMALL_A = 0.1
FLIP_MARGIN = 0.05  # accuracy points each way before a pair counts as flipped
MIN_SUBJECT_CELLS = 30  # per LLM and subject, else that subject is not used for the pair


@dataclass(frozen=True)
class TwoPLFit:
    items: np.ndarray  # item (question) index of each row of a and b
    a: np.ndarray
    b: np.ndarray
    theta: np.ndarray  # per LLM; NaN-free, standardised

    def share_negative(self) -> float:
        return float(np.mean(self.a < 0))

    def share_small(self, threshold: float = SMALL_A) -> float:
        return float(np.mean(np.abs(self.a) < threshold))


def fit_2pl(cells: Responses, n_llms: int, prior_sd: float = PRIOR_SD, max_iter: int = 500) -> TwoPLFit:
    items, item_row = np.unique(cells.question, return_inverse=True)
    q = torch.from_numpy(item_row.astype(np.int64))
    m = torch.from_numpy(cells.llm.astype(np.int64))
    y = torch.from_numpy(cells.correct.astype(np.float64))
    torch.manual_seed(0)
    theta = (0.1 * torch.randn(n_llms, dtype=torch.float64)).requires_grad_()
    a = torch.ones(len(items), dtype=torch.float64, requires_grad=True)
    b = torch.zeros(len(items), dtype=torch.float64, requires_grad=True)
    optimiser = torch.optim.LBFGS([theta, a, b], max_iter=max_iter, tolerance_grad=1e-7, tolerance_change=1e-10,
                                  history_size=20, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        optimiser.zero_grad()
        logits = a[q] * theta[m] - b[q]
        nll = torch.nn.functional.binary_cross_entropy_with_logits(logits, y, reduction="sum")
        prior = 0.5 * (theta**2).sum() + 0.5 * ((a**2).sum() + (b**2).sum()) / prior_sd**2
        loss = (nll + prior) / len(y)
        loss.backward()
        return loss

    optimiser.step(closure)
    t, av, bv = theta.detach().numpy(), a.detach().numpy(), b.detach().numpy()
    mean, sd = t.mean(), max(t.std(), 1e-12)
    # a*t - b = (a*sd) * ((t-mean)/sd) - (b - a*mean): same predictions on the standardised scale.
    av, bv, t = av * sd, bv - av * mean, (t - mean) / sd
    if np.median(av) < 0:  # the likelihood is symmetric under flipping theta and a together
        av, t = -av, -t
    return TwoPLFit(items=items, a=av, b=bv, theta=t)


def subject_order_flips(data: Dataset, cells: Responses, margin: float = FLIP_MARGIN,
                        min_cells: int = MIN_SUBJECT_CELLS) -> dict[str, object]:
    """LLM pairs where one is ahead by `margin` in some subject and behind by `margin` in another."""
    subjects, subject_of = np.unique(np.asarray(data.subjects)[cells.question], return_inverse=True)
    n_llms = data.n_llms
    key = cells.llm * len(subjects) + subject_of
    n = np.bincount(key, minlength=n_llms * len(subjects)).reshape(n_llms, len(subjects))
    k = np.bincount(key, weights=cells.correct, minlength=n_llms * len(subjects)).reshape(n_llms, len(subjects))
    acc = np.where(n >= min_cells, k / np.maximum(n, 1), np.nan)
    diff = acc[:, None, :] - acc[None, :, :]  # (L, L, S)
    with np.errstate(invalid="ignore"):
        ahead = np.nanmax(np.where(np.isnan(diff), -np.inf, diff), axis=2)
        behind = np.nanmin(np.where(np.isnan(diff), np.inf, diff), axis=2)
    upper = np.triu(np.ones((n_llms, n_llms), dtype=bool), 1)
    comparable = upper & np.isfinite(ahead) & np.isfinite(behind)
    flips = comparable & (ahead >= margin) & (behind <= -margin)
    worst = sorted(zip(*np.nonzero(flips)), key=lambda ij: -min(ahead[ij], -behind[ij]))[:5]
    examples = []
    for i, j in worst:
        s_up, s_down = int(np.nanargmax(diff[i, j])), int(np.nanargmin(diff[i, j]))
        examples.append(f"{data.llm_names[i]} vs {data.llm_names[j]}: +{ahead[i, j]:.2f} on {subjects[s_up]}, "
                        f"{behind[i, j]:.2f} on {subjects[s_down]}")
    return {"pairs": int(comparable.sum()), "flipping_pairs": int(flips.sum()),
            "share_flipping": float(flips.sum() / max(comparable.sum(), 1)), "margin": margin, "examples": examples}


def two_pl_diagnostic(data: Dataset, train: Responses) -> dict[str, object]:
    fit = fit_2pl(train, data.n_llms)
    return {
        "items": len(fit.items),
        "share_negative_a": fit.share_negative(),
        "share_abs_a_below_0.1": fit.share_small(),
        # |a| thresholds depend on the theta scale (here sd 1): a few more make the shape of the spread visible.
        "share_abs_a_below": {str(t): fit.share_small(t) for t in (0.1, 0.25, 0.5, 1.0)},
        "median_a": float(np.median(fit.a)),
        "subject_order_flips": subject_order_flips(data, train),
    }


class TwoPL:
    """2PL as a Predictor for items seen in training only (asking about an unseen item is an error)."""

    name = "irt_2pl_seen_items"

    def fit(self, embeddings: np.ndarray, train: Responses, val: Responses, n_llms: int) -> TwoPL:
        self.result = fit_2pl(train, n_llms)
        return self

    def predict_proba(self, embeddings: np.ndarray, question: np.ndarray, llm: np.ndarray) -> np.ndarray:
        row = np.searchsorted(self.result.items, question)
        row = np.minimum(row, len(self.result.items) - 1)
        if not np.all(self.result.items[row] == question):
            raise ValueError("2PL predicts only for questions seen in training; this batch has unseen ones")
        logits = self.result.a[row] * self.result.theta[llm] - self.result.b[row]
        return (1.0 / (1.0 + np.exp(-logits))).astype(np.float32)
