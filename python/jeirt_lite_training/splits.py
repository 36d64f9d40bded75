"""Train/validation/test split by question, with identical texts kept together and subjects stratified.

Why by question: the router must predict for questions it has never seen, so no question (and no copy of its text:
mmlu_pro repeats 150 texts under two ids each) may be on both sides.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ._runtime import check_seed, normalise_question
from .types import Dataset, Split


def text_groups(texts: list[str]) -> np.ndarray:
    """Group id per question: questions whose texts are equal up to whitespace share one id (first-appearance order).
    The same identity as a router's training_questions.npy (jeirt_lite._training_questions)."""
    normalised = pd.Series(texts, dtype=object).map(normalise_question)
    codes, _ = pd.factorize(normalised, sort=False)
    return codes.astype(np.int64)


def _deal_groups(
    dataset: Dataset, seed: int, fractions: list[float], among: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(part of each text group, group of each question): within each subject the groups are shuffled (seeded) and
    dealt out in order, a group going to part j while the running count at its midpoint is below the sum of the
    first j+1 `fractions` (the last part takes the rest). `among`: deal only these questions' groups (the others
    get part -1)."""
    check_seed(seed)
    groups = text_groups(dataset.texts)
    n_groups = int(groups.max()) + 1 if len(groups) else 0
    first_member = np.full(n_groups, len(groups), dtype=np.int64)
    np.minimum.at(first_member, groups, np.arange(len(groups)))
    group_size = np.bincount(groups, minlength=n_groups)
    group_subject = np.asarray(dataset.subjects)[first_member] if n_groups else np.asarray([], dtype=str)
    dealt = np.ones(n_groups, dtype=bool)
    if among is not None:
        dealt = np.zeros(n_groups, dtype=bool)
        dealt[groups[np.asarray(among, dtype=np.int64)]] = True

    rng = np.random.default_rng(seed)
    part_of_group = np.full(n_groups, -1, dtype=np.int64)
    for subject in sorted(set(group_subject[dealt].tolist())):
        members = np.flatnonzero((group_subject == subject) & dealt)  # ascending group id: a deterministic start
        members = members[rng.permutation(len(members))]
        sizes = group_size[members]
        total = sizes.sum()
        midpoint = np.cumsum(sizes) - sizes / 2.0
        ends, running = [], 0.0
        for fraction in fractions:
            running = running + fraction * total
            ends.append(running)
        part = np.full(len(members), len(fractions), dtype=np.int64)
        for j in reversed(range(len(ends))):  # the first part whose end lies beyond the group's midpoint
            part = np.where(midpoint < ends[j], j, part)
        part_of_group[members] = part
    return part_of_group, groups


def make_folds(dataset: Dataset, questions: np.ndarray, k: int, *, seed: int = 0) -> list[np.ndarray]:
    """`questions` dealt into `k` folds of about equal size, identical texts together, stratified by subject (as
    make_split deals its parts). Fold j's questions, ascending, for each j."""
    if k < 2:
        raise ValueError(f"need at least 2 folds, got {k}")
    questions = np.asarray(questions, dtype=np.int64)
    part_of_group, groups = _deal_groups(dataset, seed, [1.0 / k] * (k - 1), among=questions)
    part = part_of_group[groups[questions]]
    return [np.sort(questions[part == j]) for j in range(k)]


def make_split(dataset: Dataset, *, seed: int = 0, val_fraction: float = 0.1, test_fraction: float = 0.2) -> Split:
    """Split the questions of `dataset` into train/val/test.

    Within each subject the text groups are shuffled (seeded) and dealt out in order: a group goes to test while the
    running count at its midpoint is below the test target, then to validation, then to train. So each subject's
    fractions are within half a group of the targets, and the same seed always gives the same split.

    A group whose questions carry different subjects is placed by the subject of its first question.

    >>> split = make_split(load_dataset("data/mmlu_pro"), seed=0)  # doctest: +SKIP
    """
    if not (0.0 <= val_fraction and 0.0 <= test_fraction and val_fraction + test_fraction < 1.0):
        raise ValueError(f"need 0 <= val_fraction, test_fraction and their sum < 1; got {val_fraction}, "
                         f"{test_fraction}")
    part_of_group, groups = _deal_groups(dataset, seed, [test_fraction, val_fraction])
    part_of_group = np.array([2, 1, 0], dtype=np.int8)[part_of_group]  # dealt in the order test, val, train
    part = part_of_group[groups]
    return Split(
        train=np.flatnonzero(part == 0).astype(np.int64),
        val=np.flatnonzero(part == 1).astype(np.int64),
        test=np.flatnonzero(part == 2).astype(np.int64),
        val_fraction=float(val_fraction),
        test_fraction=float(test_fraction),
    )
