"""Answers recorded more than once for one (question, LLM): the majority of them counts, a tie drops the cell. The
one rule of every reader of answers, training's and the report's alike."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class MergedCells:
    question: np.ndarray  # int64 per cell, sorted by (question, LLM)
    llm: np.ndarray  # int64 per cell
    correct: np.ndarray  # float64 per cell, 0 or 1
    repeated: int  # cells recorded more than once
    extra_rows: int  # the rows beyond a cell's first
    ties: int  # repeated cells dropped for want of a majority


def merge_repeated_cells(question: np.ndarray, llm: np.ndarray, correct: np.ndarray, n_llms: int) -> MergedCells:
    """One answer per (question, LLM) cell from rows that may repeat a cell: the majority of its labels (0 or 1)."""
    key = np.asarray(question, dtype=np.int64) * n_llms + np.asarray(llm, dtype=np.int64)
    unique, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
    ones = np.bincount(inverse, weights=np.asarray(correct, dtype=np.float64), minlength=len(unique))
    repeated = counts > 1
    tie = 2 * ones == counts
    keep = ~tie
    return MergedCells(
        question=unique[keep] // n_llms, llm=unique[keep] % n_llms,
        correct=(2 * ones[keep] > counts[keep]).astype(np.float64),
        repeated=int(repeated.sum()), extra_rows=int((counts[repeated] - 1).sum()), ties=int(tie.sum()),
    )
