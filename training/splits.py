"""Train/validation/test split by question, with identical texts kept together and subjects stratified.

Why by question: the router must predict for questions it has never seen, so no question (and no copy of its text:
mmlu_pro repeats 150 texts under two ids each) may be on both sides.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .types import Dataset, Split


def text_groups(texts: list[str]) -> np.ndarray:
    """Group id per question: questions whose texts are equal up to whitespace share one id (first-appearance order)."""
    normalised = pd.Series(texts, dtype=object).map(lambda t: " ".join(str(t).split()))
    codes, _ = pd.factorize(normalised, sort=False)
    return codes.astype(np.int64)


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
    groups = text_groups(dataset.texts)
    n_groups = int(groups.max()) + 1 if len(groups) else 0
    first_member = np.full(n_groups, len(groups), dtype=np.int64)
    np.minimum.at(first_member, groups, np.arange(len(groups)))
    group_size = np.bincount(groups, minlength=n_groups)
    group_subject = np.asarray(dataset.subjects)[first_member] if n_groups else np.asarray([], dtype=str)

    rng = np.random.default_rng(seed)
    part_of_group = np.zeros(n_groups, dtype=np.int8)  # 0 train, 1 val, 2 test
    for subject in sorted(set(group_subject.tolist())):
        members = np.flatnonzero(group_subject == subject)  # ascending group id: a deterministic start order
        members = members[rng.permutation(len(members))]
        sizes = group_size[members]
        total = sizes.sum()
        midpoint = np.cumsum(sizes) - sizes / 2.0
        test_end = test_fraction * total
        val_end = test_end + val_fraction * total
        part_of_group[members] = np.where(midpoint < test_end, 2, np.where(midpoint < val_end, 1, 0))

    part = part_of_group[groups]
    return Split(
        train=np.flatnonzero(part == 0).astype(np.int64),
        val=np.flatnonzero(part == 1).astype(np.int64),
        test=np.flatnonzero(part == 2).astype(np.int64),
    )
