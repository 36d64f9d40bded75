"""Neighbour votes for a router `fit` writes (jeirt_lite._neighbours): chosen, weighed and kept or dropped on the
same held-out parts that choose the router's settings (choose.py), never on a test part.

1. Setting. For each (train, validation) part, the vote on each validation question comes from its neighbours
   among that part's training questions only, by the features that part's run read (a static table fine-tuned on
   the part gives its own), compared in a short space of them (votes.principal_space of the part's training
   questions), or on the features themselves. Within each of two grids, k, α and τ minimise the vote's own
   held-out log-loss, summed over the parts: the short spaces (widths `SPACE_GRID`, k up to 80: `SHORT_K_GRID`),
   whose search costs a fifth of the features', and the features with the KNN baseline's grid (k up to 320).
   Steps 2 and 3 then weigh each; the features win only where they are kept and either the short space is dropped
   or their cross-fitted loss is lower by more than one standard error (space_difference): their search costs
   the router several times the speed, so a difference within the noise goes to the short space
   (docs/research/neighbours.md, "Short keys" and "The two spaces on the test part").
2. Weight. A logistic regression of the held-out answers on (the router's held-out logit, the vote's logit, 1)
   gives the vote's weight relative to the logit (w = b/a); the calibration is then fitted on logit + w·vote.
3. Kept only if it helps out of sample: the held-out questions are dealt into two halves (grouped by question);
   the regression with and without the vote is fitted on one half and scored on the other, both ways. The votes
   are kept when the vote lowers that cross-fitted log-loss and its weight is positive.

The router's table then holds every question it learned from (the refit's), with the features its encoder gives.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ._runtime import NeighbourVotes, cell_log_losses, log_loss, short_rows, unit_rows, vote_logits
from .types import Responses
from .votes import (
    ALPHA_GRID,
    FULL_SPACE,
    K_GRID,
    PRIOR_STRENGTH,
    TAU_GRID,
    VoteTuning,
    answers_table,
    principal_space,
    smoothed_llm_accuracy,
    tune_votes,
)

# Above this many questions learned from, fit leaves the votes out: the router would store their features (77 MB at
# 384 float16 features) and every routed question would be compared with all of them.
MAX_STORED_QUESTIONS = 100_000
HALVES_SEED = 0
# The short spaces' grid: 16 or 32 principal directions, k up to 80 (the search's cost grows with both); the
# features themselves take the KNN baseline's grid (votes.K_GRID). α and τ: the KNN baseline's for both.
SHORT_K_GRID = (10, 20, 40, 80)
SPACE_GRID = (16, 32)


@dataclass
class VoteChoice:
    """What the held-out parts decided (record() goes into router.json's training summary)."""

    k: int
    smoothing: float
    temperature: float | None
    weight: float
    kept: bool
    heldout_vote_logits: np.ndarray  # the chosen vote's logit on each held-out cell (selection.heldout order)
    crossfit: dict[str, float]
    space_dims: int | None = None  # the short space's width; None: the features themselves
    # The other space's outcome (space_dims, kept, cross-fitted loss with its votes), so that router.json shows what
    # the choice between a fast short-space search and the slower full-feature one was worth.
    passed_over: dict[str, Any] | None = None

    def record(self) -> dict[str, Any]:
        return {"kept": self.kept, "k": self.k, "smoothing": self.smoothing, "temperature": self.temperature,
                "weight": self.weight, "space_dims": self.space_dims, "crossfit_log_loss": self.crossfit,
                "passed_over": self.passed_over,
                "chosen_on": "the held-out parts that chose d and dropout (jeirt_lite_training.neighbour_blend)"}

    def outcome(self) -> dict[str, Any]:
        return {"space_dims": self.space_dims, "kept": self.kept, "crossfit_with_votes": self.crossfit["with_votes"]}

    def describe(self) -> str:
        """One line for fit's log: the chosen votes, their losses, and the space passed over."""
        other, without = self.passed_over, self.crossfit["calibration_only"]  # both spaces share the "without"
        # The space passed over, and what its votes alone would have come to; dropped with a loss below the chosen
        # one's, it would read as a mistake without its reason.
        passed_over = "" if other is None else (
            f" (passed over: votes on {_space_name(other['space_dims'])}, {other['crossfit_with_votes']:.4f}, which "
            f"alone would have been {_kept(other['kept'])}"
            f"{', their weight not positive' if not other['kept'] and other['crossfit_with_votes'] < without else ''})")
        lower = self.crossfit["with_votes"] < without
        # Dropped although they lower the loss: their weight beside the router's logit came out zero or less.
        why = " (their fitted weight beside the router's logit is not positive)" if lower and not self.kept else ""
        return (f"neighbour votes: k={self.k} on {_space_name(self.space_dims)}, weight {self.weight:.3f}, "
                f"cross-fitted held-out log-loss {self.crossfit['with_votes']:.4f} with, "
                f"{self.crossfit['calibration_only']:.4f} without: {_kept(self.kept)}{why}{passed_over}")


def _space_name(space_dims: int | None) -> str:
    return "the features" if space_dims is None else f"{space_dims} principal directions"


def _kept(kept: bool) -> str:
    return "kept" if kept else "dropped"


def logistic_fit(design: np.ndarray, y: np.ndarray, iterations: int = 50) -> np.ndarray:
    """Logistic regression by Newton's method, a step that would raise the loss halved until it does not (a few
    columns; a tiny ridge keeps it finite)."""
    def loss(w: np.ndarray) -> float:
        s = design @ w
        return float(np.sum(np.logaddexp(0.0, s) - y * s) + 0.5e-6 * w @ w)

    w = np.zeros(design.shape[1])
    current = loss(w)
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-(design @ w)))
        gradient = design.T @ (p - y) + 1e-6 * w
        hessian = (design * (p * (1.0 - p))[:, None]).T @ design + 1e-6 * np.eye(design.shape[1])
        step = np.linalg.solve(hessian, gradient)
        for _ in range(60):
            trial = loss(w - step)
            if trial <= current:
                break
            step = step / 2
        w, current = w - step, trial
        if np.abs(step).max() < 1e-10:
            break
    return w


def _design(logits: np.ndarray, votes: np.ndarray | None) -> np.ndarray:
    columns = [logits, np.ones_like(logits)] + ([] if votes is None else [votes])
    return np.stack(columns, axis=1)


def crossfit_predictions(logits: np.ndarray, votes: np.ndarray, cells: Responses) -> dict[str, np.ndarray]:
    """Each held-out cell's probability from the (logit, 1) and (logit, 1, vote) regressions, each fitted on one half
    of the questions and applied to the other (both ways)."""
    questions = np.unique(cells.question)
    first = np.isin(cells.question, np.random.default_rng(HALVES_SEED).permutation(questions)[: len(questions) // 2])
    out = {}
    for name, v in (("calibration_only", None), ("with_votes", votes)):
        design = _design(logits, v)
        p = np.empty(len(logits))
        for fit_on in (first, ~first):
            w = logistic_fit(design[fit_on], cells.correct[fit_on])
            p[~fit_on] = 1.0 / (1.0 + np.exp(-(design[~fit_on] @ w)))
        out[name] = p
    return out


def crossfit_losses(logits: np.ndarray, votes: np.ndarray, cells: Responses) -> dict[str, float]:
    """The held-out log-loss of crossfit_predictions' two regressions."""
    return {name: log_loss(cells.correct, p) for name, p in crossfit_predictions(logits, votes, cells).items()}


def space_difference(short: VoteChoice, full: VoteChoice, heldout: Responses,
                     heldout_logits: np.ndarray) -> tuple[float, float]:
    """The features' cross-fitted held-out log-loss with their votes minus the short space's, and its standard
    error: the per-cell differences summed within each held-out question (a question's cells share its votes), the
    sd of those sums over questions, times sqrt(questions) / cells."""
    short_loss, full_loss = (
        cell_log_losses(heldout.correct,
                        crossfit_predictions(heldout_logits, choice.heldout_vote_logits, heldout)["with_votes"])
        for choice in (short, full))
    _, rows = np.unique(heldout.question, return_inverse=True)
    per_question = np.bincount(rows, weights=full_loss - short_loss)
    cells = len(heldout.correct)
    return float(per_question.sum() / cells), float(per_question.std(ddof=1) * np.sqrt(len(per_question)) / cells)


def vote_candidates(embeddings: np.ndarray | Sequence[np.ndarray],
                    parts: Sequence[tuple[Responses, Responses]], n_llms: int, heldout: Responses,
                    heldout_logits: np.ndarray) -> tuple[VoteChoice, VoteChoice]:
    """Steps 1–3 of the module docstring within each grid: (the short spaces' vote, the features' vote), each
    weighed and put to the keep rule. `embeddings`: the features every part's run read, or one array per part (a
    static table fine-tuned on each part)."""
    per_part = [embeddings] * len(parts) if isinstance(embeddings, np.ndarray) else list(embeddings)
    short = _weighed(tune_votes(per_part, parts, n_llms, SHORT_K_GRID, ALPHA_GRID, TAU_GRID, SPACE_GRID),
                     heldout, heldout_logits)
    full = _weighed(tune_votes(per_part, parts, n_llms, K_GRID, ALPHA_GRID, TAU_GRID, FULL_SPACE),
                    heldout, heldout_logits)
    return short, full


def choose_neighbour_votes(embeddings: np.ndarray | Sequence[np.ndarray],
                           parts: Sequence[tuple[Responses, Responses]], n_llms: int, heldout: Responses,
                           heldout_logits: np.ndarray) -> VoteChoice:
    """vote_candidates, then the space: the features, whose search is several times slower at run time, only when
    they are kept and either the short space is dropped or the features' cross-fitted loss is lower by more than one
    standard error of the paired difference (space_difference); else the short space (which records why when it
    is dropped too)."""
    short, full = vote_candidates(embeddings, parts, n_llms, heldout, heldout_logits)
    if full.kept and (not short.kept or _clearly_lower(short, full, heldout, heldout_logits)):
        return replace(full, passed_over=short.outcome())
    return replace(short, passed_over=full.outcome())


def _clearly_lower(short: VoteChoice, full: VoteChoice, heldout: Responses, heldout_logits: np.ndarray) -> bool:
    difference, error = space_difference(short, full, heldout, heldout_logits)
    return difference < -error


def _weighed(tuning: VoteTuning, heldout: Responses, heldout_logits: np.ndarray) -> VoteChoice:
    """Steps 2–3 of the module docstring for one tuned vote."""
    (k, alpha, tau), votes = tuning.setting, vote_logits(tuning.p)
    crossfit = crossfit_losses(heldout_logits, votes, heldout)
    a, _, b = logistic_fit(_design(heldout_logits, votes), heldout.correct)
    weight = float(b / a) if a > 0 else 0.0
    kept = crossfit["with_votes"] < crossfit["calibration_only"] and weight > 0
    return VoteChoice(k, alpha, tau, weight, bool(kept), votes, crossfit, tuning.dims)


def neighbour_votes(embeddings: np.ndarray, cells: Responses, llm_names: Sequence[str],
                    choice: VoteChoice) -> NeighbourVotes:
    """The router's table: every question of `cells` with its answers, its keys the questions' features from
    `embeddings` in the chosen short space (the principal directions of all of them), or the features."""
    questions = np.unique(cells.question)
    n_llms = len(llm_names)
    prior = smoothed_llm_accuracy(cells, n_llms, PRIOR_STRENGTH).astype(np.float32)
    features = embeddings[questions]
    if choice.space_dims is None:
        centre, projection, keys = None, None, unit_rows(features)
    else:
        centre, projection = principal_space(features, choice.space_dims)
        keys = short_rows(features, centre, projection)
    return NeighbourVotes(tuple(llm_names), keys.astype(np.float16), answers_table(cells, questions, n_llms), prior,
                          choice.k, choice.smoothing, choice.temperature, choice.weight, centre, projection)
