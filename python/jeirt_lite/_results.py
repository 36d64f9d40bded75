"""The result of routing a batch of questions."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Optional, Union, overload

import numpy as np


@dataclass(frozen=True)
class RouteResult:
    """The k most likely-correct LLMs for each question, best first.

    Attributes:
        indices: (N, k) uint32 rows of the router's LLM table.
        probabilities: (N, k) float32 P(correct) of those LLMs.
        llm_names: the router's LLM names in table order (to turn indices into names).
        fallback: with `min_probability` routing, (N,) bool: True where no LLM cleared the threshold and the
            most likely LLM was returned instead; None for the other rules.

    Example:
        >>> result = router.route(["What is 2 + 2?"], k=2)   # doctest: +SKIP
        >>> result[0]                                         # doctest: +SKIP
        [('llm-a', 0.93), ('llm-b', 0.88)]
    """

    indices: np.ndarray
    probabilities: np.ndarray
    llm_names: tuple[str, ...]
    fallback: Optional[np.ndarray] = None

    def __len__(self) -> int:
        return int(self.indices.shape[0])

    @property
    def k(self) -> int:
        return int(self.indices.shape[1])

    @property
    def names(self) -> list[list[str]]:
        """Per question, the chosen LLM names, best first."""
        return [[self.llm_names[j] for j in row] for row in self.indices.tolist()]

    @property
    def best(self) -> list[str]:
        """Per question, the single most likely-correct LLM."""
        return [self.llm_names[row[0]] for row in self.indices.tolist()]

    @overload
    def __getitem__(self, i: int) -> list[tuple[str, float]]: ...

    @overload
    def __getitem__(self, i: slice) -> list[list[tuple[str, float]]]: ...

    def __getitem__(
        self, i: Union[int, slice]
    ) -> Union[list[tuple[str, float]], list[list[tuple[str, float]]]]:
        """(name, probability) pairs for question i, best first; a slice gives those of each question in it."""
        if isinstance(i, slice):
            return [self[row] for row in range(len(self))[i]]
        if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)):
            raise TypeError(f"a route result is indexed by a question's position or a slice, not {type(i).__name__}")
        return [
            (self.llm_names[j], float(p))
            for j, p in zip(self.indices[i].tolist(), self.probabilities[i].tolist())
        ]

    def __iter__(self) -> Iterator[list[tuple[str, float]]]:
        for i in range(len(self)):
            yield self[i]
