"""Difficulty: does a question's norm ‖q‖ rank questions the way the LLMs' observed error rates do?"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .._errors import JeirtError
from ._stats import spearman

MIN_SUBJECT_QUESTIONS = 10  # fewer questions than this: no per-subject correlation (too noisy to report)


@dataclass(frozen=True)
class DifficultyReport:
    """Spearman between norm and observed error rate, over all questions and within each subject."""

    n_questions: int
    spearman: float
    per_subject: dict[str, tuple[int, float]] = field(default_factory=dict)  # subject -> (questions, Spearman)

    def to_dict(self) -> dict[str, object]:
        return {
            "n_questions": self.n_questions,
            "spearman": self.spearman,
            "per_subject": {s: {"n": n, "spearman": r} for s, (n, r) in self.per_subject.items()},
        }


def difficulty_vs_error(
    norms: np.ndarray, error_rates: np.ndarray, subjects: Optional[Sequence[str]] = None
) -> DifficultyReport:
    """Spearman correlation of question norms with observed error rates, overall and per subject.

    Args:
        norms: ‖q‖ per question (`router.difficulty`).
        error_rates: share of LLMs that answered each question wrongly (NaN where none was observed: skipped).
        subjects: optional subject per question for the within-subject correlations (a question without one,
            None or NaN, counts overall only).

    >>> difficulty_vs_error(np.array([1., 2, 3, 4]), np.array([.1, .3, .2, .9])).spearman
    0.8
    """
    n = np.asarray(norms, dtype=np.float64)
    e = np.asarray(error_rates, dtype=np.float64)
    if n.ndim != 1 or n.shape != e.shape:
        raise JeirtError(f"one error rate per norm is needed, both 1-D; got shapes {n.shape} and {e.shape}")
    keep = np.isfinite(n) & np.isfinite(e)
    if not keep.any():
        raise JeirtError(f"no question has both a finite norm and an error rate (of {n.size})")
    per_subject: dict[str, tuple[int, float]] = {}
    if subjects is not None:
        s = np.asarray(list(subjects), dtype=object)
        if s.shape != n.shape:
            raise JeirtError(f"one subject per question is needed, got {s.size} subjects for {n.size} questions")
        named = np.array([isinstance(name, str) and bool(name.strip()) for name in s], dtype=bool)  # None, NaN: none
        for name in sorted(set(s[keep & named].tolist())):
            rows = keep & named & (s == name)
            if rows.sum() >= MIN_SUBJECT_QUESTIONS:
                per_subject[str(name)] = (int(rows.sum()), spearman(n[rows], e[rows]))
    return DifficultyReport(int(keep.sum()), spearman(n[keep], e[keep]), per_subject)
