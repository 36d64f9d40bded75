"""Ability probes: a difference-of-means direction between two groups of questions, and scores along it.

Fit on questions that have a property and questions that do not; any question's score is its (unit) direction's
projection on that axis, centred so that 0 lies halfway between the two group means.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .._alignment import unit_rows
from .._errors import JeirtError
from .._limits import check_finite_rows
from .._type_names import python_type

if TYPE_CHECKING:
    from .._router import Router


@dataclass(frozen=True)
class Probe:
    """A direction in question space; `score` projects question vectors on it (larger: more like `with`)."""

    direction: np.ndarray  # (d,), unit length
    midpoint: float  # projection of the halfway point between the two group means
    normalize: bool  # whether question vectors are scaled to unit length before projecting
    n_with: int
    n_without: int

    def score(self, vectors: np.ndarray) -> np.ndarray:
        """Scores (N,) float64 of question vectors (N, d) along the probe."""
        x = np.asarray(vectors, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.direction.shape[0]:
            raise JeirtError(f"vectors must have shape (N, {self.direction.shape[0]}), got {x.shape}")
        check_finite_rows(x, "vectors")  # as fitting the probe refuses them
        if self.normalize:
            x = unit_rows(x)
        scores: np.ndarray = x @ self.direction - self.midpoint
        return scores


def probe_vectors(with_vectors: np.ndarray, without_vectors: np.ndarray, *, normalize: bool = True) -> Probe:
    """A difference-of-means probe from question vectors of the two groups.

    >>> p = probe_vectors(np.array([[1., 0], [2, 0.1]]), np.array([[0., 1], [0.1, 2]]))
    >>> bool(p.score(np.array([[3., 0]]))[0] > 0)
    True
    """
    a, b = np.asarray(with_vectors, dtype=np.float64), np.asarray(without_vectors, dtype=np.float64)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
        raise JeirtError(f"both groups need vectors of one dimension, got shapes {a.shape} and {b.shape}")
    if a.shape[0] == 0 or b.shape[0] == 0:
        raise JeirtError("a probe needs at least one question in each group")
    check_finite_rows(a, "with_vectors")
    check_finite_rows(b, "without_vectors")
    if normalize:
        a, b = unit_rows(a), unit_rows(b)
    mean_a, mean_b = a.mean(axis=0), b.mean(axis=0)
    difference = mean_a - mean_b
    length = float(np.linalg.norm(difference))
    if length == 0.0:
        raise JeirtError("the two groups have the same mean direction: no probe axis")
    direction = difference / length
    midpoint = float((mean_a + mean_b) @ direction / 2.0)
    return Probe(direction, midpoint, normalize, int(a.shape[0]), int(b.shape[0]))


def probe(router: Router, texts_with: Sequence[str], texts_without: Sequence[str]) -> Probe:
    """`probe_vectors` on texts embedded with the router; score new texts with `probe.score(router.encode(t, features=False).vectors)`."""
    return probe_vectors(router.encode(texts_with, features=False).vectors, router.encode(texts_without, features=False).vectors)


# -- a stated labelling rule for "needs calculation" ------------------------------------------------------------

_OPTION = re.compile(r"^\s*([A-J])[.)]\s*(.+?)\s*$", re.MULTILINE)
_NUMBER = re.compile(r"^[\s$€£~≈-]*[-+]?\d[\d,]*(\.\d+)?(\s*[×x*]\s*10\^?-?\d+)?\s*(%|[a-zA-Zµ°/^²³·\s\d()-]{0,16})$")
CALCULATION_WORDS = ("calculate", "compute", "how many", "how much", "what is the value", "find the value",
                     "determine the value", "evaluate", "solve for")
NUMERIC_OPTION_SHARE = 0.75


def needs_calculation(text: str) -> bool:
    """The rule: at least 75% of the lettered options (A. … J.) are numbers (with optional units), or, with
    fewer than two options, the text contains a calculation keyword (calculate, compute, how many, …)."""
    if not isinstance(text, str):
        raise JeirtError(f"needs_calculation takes a question text, got {python_type(text)}")
    options = [match.group(2) for match in _OPTION.finditer(text)]
    if len(options) >= 2:
        numeric = sum(1 for option in options if _NUMBER.match(option))
        return numeric / len(options) >= NUMERIC_OPTION_SHARE
    lowered = text.lower()
    return any(word in lowered for word in CALCULATION_WORDS)
