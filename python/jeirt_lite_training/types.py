"""Plain data types shared by data loading, splitting, the JE-IRT trainer, the baselines and the evaluation.

Everything is indices into arrays so that every method sees exactly the same questions, LLMs and cells.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np


@dataclass(frozen=True)
class Responses:
    """Observed (question, LLM, correct) cells. Missing cells are simply absent, never zeros."""

    question: np.ndarray  # int64, index into Dataset.texts
    llm: np.ndarray  # int64, index into Dataset.llm_names
    correct: np.ndarray  # float32, 0.0 or 1.0

    def __len__(self) -> int:
        return int(self.question.shape[0])

    def subset(self, mask: np.ndarray) -> Responses:
        return Responses(self.question[mask], self.llm[mask], self.correct[mask])

    @staticmethod
    def concatenate(parts: Sequence[Responses]) -> Responses:
        """The cells of several parts, one part after the other."""
        return Responses(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("question", "llm", "correct")))


@dataclass(frozen=True)
class Dataset:
    """One response matrix: questions with their texts and strata, LLM names, and the observed cells."""

    name: str
    question_ids: list[str]
    texts: list[str]
    benchmarks: np.ndarray  # str per question
    subjects: np.ndarray  # str per question (the stratum for splits and per-subject metrics)
    llm_names: list[str]
    responses: Responses

    @property
    def n_questions(self) -> int:
        return len(self.texts)

    @property
    def n_llms(self) -> int:
        return len(self.llm_names)


@dataclass(frozen=True)
class Split:
    """Disjoint question index sets. The test part is never used for any choice (tuning, early stopping)."""

    train: np.ndarray  # int64 question indices
    val: np.ndarray
    test: np.ndarray
    # The targets it was drawn for (make_split), recorded so that the split can be drawn again; None: not drawn so.
    val_fraction: float | None = None
    test_fraction: float | None = None

    def responses(self, data: Dataset, part: str) -> Responses:
        questions = getattr(self, part)
        return data.responses.subset(np.isin(data.responses.question, questions))


class Predictor(Protocol):
    """What every method in the comparison implements (JE-IRT and each baseline).

    `embeddings` is the frozen encoder's (n_questions, D) float32 matrix for ALL questions of the dataset; a method
    may only read the rows of questions it is asked about (train/val rows in fit, the asked rows in predict).
    """

    name: str

    def fit(self, embeddings: np.ndarray, train: Responses, val: Responses, n_llms: int) -> Predictor: ...

    def predict_proba(self, embeddings: np.ndarray, question: np.ndarray, llm: np.ndarray) -> np.ndarray: ...
