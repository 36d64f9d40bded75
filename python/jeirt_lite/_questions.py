"""Questions as a router reads them: what `Router.encode` returns and what every scoring method takes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, Optional, Union

import numpy as np


class EncodedQuestions(NamedTuple):
    """Question vectors (N, d) and, where the router's scoring reads them (feature corrections of onboarded LLMs,
    neighbour votes), the encoder's features (N, p); unpacks as `vectors, features = router.encode(texts)`.

    `Router.encode(texts)` makes one; for vectors embedded elsewhere, `EncodedQuestions(vectors)` (with
    `features=` when the router needs them, `router.needs_features`). Every scoring method of the router takes it
    in place of texts, so a bank is encoded once and then routed, forecast and measured without encoding again.
    """

    vectors: np.ndarray
    features: Optional[np.ndarray] = None

    def rows(self, index: Union[slice, np.ndarray, Sequence[int]]) -> EncodedQuestions:
        """The questions at `index` (a slice, a mask or positions), vectors and features alike."""
        features = None if self.features is None else np.asarray(self.features)[index]
        return EncodedQuestions(np.asarray(self.vectors)[index], features)


def distinct_texts(texts: Sequence[str]) -> tuple[list[str], Optional[np.ndarray]]:
    """Each text once, in the order first met, and where each given text is among them; None when none repeats.
    A table of answers repeats each question for every LLM: encoding each text once is the saving."""
    first: dict[str, int] = {}
    rows = [first.setdefault(text, len(first)) for text in texts]
    if len(first) == len(rows):
        return list(texts), None
    return list(first), np.asarray(rows, dtype=np.int64)


# What a scoring method takes: question texts, or questions encoded once by `Router.encode` (or elsewhere).
Questions = Union[Sequence[str], EncodedQuestions]


class VotedQuestions(EncodedQuestions):
    """`EncodedQuestions` whose neighbour votes were computed with the encoding (`score`'s background jobs,
    _pipeline.py), so scoring does not search again; internal. `vote_sums`: (weighted sums of answers, sums of
    weights), each (N, K) over the router's vote table's LLMs."""

    vote_sums: tuple[np.ndarray, np.ndarray]


def voted(vectors: np.ndarray, features: Optional[np.ndarray], sums: tuple[np.ndarray, np.ndarray]) -> VotedQuestions:
    questions = VotedQuestions(vectors, features)
    questions.vote_sums = sums
    return questions
