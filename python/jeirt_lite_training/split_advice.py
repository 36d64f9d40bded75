"""What to give instead of held-out fractions that leave the training or the validation part without answers.

Training deals each subject's questions among the parts on their own (`splits.make_split`), so a set of small
subjects may split well at a few fractions only, or at none: one question per subject goes whole to one part, the
validation part below a fraction of 0.5 and the training part above it. The error of either part alone would then
point one way and the other's the opposite way; this says which --val-fraction values work, or that none can and
what would.
"""

from __future__ import annotations

import numpy as np

from ._runtime import counted
from .splits import make_split
from .types import Dataset

# The fractions tried, as a user gives them: a few dozen draws of the split, quick on any data that can fail this way.
TRIED = tuple(round(0.05 * i, 2) for i in range(1, 20))


def working_val_fractions(data: Dataset, seed: int, test_fraction: float) -> list[float]:
    """The fractions of TRIED that, beside `test_fraction`, leave both the training and the validation part answers.
    A larger fraction only moves questions from training to validation, so they are one run of TRIED."""
    answered = np.unique(data.responses.question)
    working = []
    for val_fraction in TRIED:
        if val_fraction + test_fraction >= 1:
            break
        split = make_split(data, seed=seed, val_fraction=val_fraction, test_fraction=test_fraction)
        if np.isin(split.train, answered).any() and np.isin(split.val, answered).any():
            working.append(val_fraction)
    return working


def val_fraction_advice(data: Dataset, seed: int, test_fraction: float) -> str:
    """The end of an error about an empty training or validation part: the --val-fraction values that work, or a
    smaller --holdout, or why no fraction can and what to change in the data."""
    working = working_val_fractions(data, seed, test_fraction)
    if working:
        return f"give {_fractions(working)}, which leaves both the training and the validation part answers"
    if test_fraction > 0:
        working = working_val_fractions(data, seed, 0.0)
        if working:
            return f"give a smaller --holdout: without one, {_fractions(working)} leaves both parts answers"
    answered = np.unique(data.responses.question)
    _, per_subject = np.unique(np.asarray(data.subjects)[answered], return_counts=True)
    return (f"no --val-fraction can leave both the training and the validation part answers: the questions are dealt "
            f"within each of their subjects ({len(per_subject)}, the largest holding "
            f"{counted(int(per_subject.max(initial=0)), 'answered question')}); give more questions per subject, or "
            "fewer subjects (a table without subject and benchmark columns deals all its questions together)")


def _fractions(working: list[float]) -> str:
    if len(working) == 1:
        return f"--val-fraction {working[0]:g}"
    return f"a --val-fraction from {working[0]:g} to {working[-1]:g}"
