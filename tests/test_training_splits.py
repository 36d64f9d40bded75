"""Splits: by question, identical texts together, stratified by subject, deterministic."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from jeirt_lite_training.data import DataError, load_dataset
from jeirt_lite_training.splits import make_folds, make_split, text_groups
from jeirt_lite_training.types import Dataset, Responses, Split

REPO = Path(__file__).resolve().parents[1]


def synthetic(n: int = 600, seed: int = 1) -> Dataset:
    rng = np.random.default_rng(seed)
    texts = [f"question {i}" for i in range(n)]
    subjects = np.asarray(rng.choice(["a", "b", "c", "tiny"], size=n, p=[0.5, 0.3, 0.19, 0.01]), dtype=str)
    for i in range(7, n, 7):  # every 7th question repeats the previous one (text modulo whitespace, subject)
        texts[i] = "  " + texts[i - 1].replace(" ", "   ")
        subjects[i] = subjects[i - 1]
    return _without_answers("syn", texts, subjects)


def _without_answers(name: str, texts: list[str], subjects: np.ndarray) -> Dataset:
    """Questions of one LLM that answered none of them: all a split reads."""
    empty = np.zeros(0, dtype=np.int64)
    return Dataset(name, [str(i) for i in range(len(texts))], texts, subjects, subjects, ["m"],
                   Responses(empty, empty, np.zeros(0, np.float32)))


@pytest.fixture(scope="module")
def mmlu() -> Dataset:
    return load_dataset(REPO / "data" / "mmlu_pro")


def check_split(data: Dataset, val_fraction: float, test_fraction: float, seed: int, tol: float) -> None:
    split = make_split(data, seed=seed, val_fraction=val_fraction, test_fraction=test_fraction)
    parts = np.concatenate([split.train, split.val, split.test])
    assert np.array_equal(np.sort(parts), np.arange(data.n_questions))  # every question exactly once
    groups = text_groups(data.texts)
    sides = [set(groups[p].tolist()) for p in (split.train, split.val, split.test)]
    assert not (sides[0] & sides[1] or sides[0] & sides[2] or sides[1] & sides[2])  # no text crosses
    for subject in np.unique(data.subjects):
        members = np.flatnonzero(data.subjects == subject)
        if len(members) < 50:
            continue
        assert abs(np.isin(members, split.test).mean() - test_fraction) < tol, subject
        assert abs(np.isin(members, split.val).mean() - val_fraction) < tol, subject


def test_synthetic_split_properties() -> None:
    data = synthetic()
    assert len(set(text_groups(data.texts).tolist())) == data.n_questions - (data.n_questions - 1) // 7
    for seed in range(3):
        check_split(data, 0.1, 0.2, seed, tol=0.02)
    check_split(data, 0.25, 0.25, 0, tol=0.02)


def test_deterministic_and_seed_dependent() -> None:
    data = synthetic()
    a, b, c = make_split(data, seed=5), make_split(data, seed=5), make_split(data, seed=6)
    assert all(np.array_equal(getattr(a, p), getattr(b, p)) for p in ("train", "val", "test"))
    assert not np.array_equal(a.test, c.test)


def test_a_seed_numpy_cannot_take_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"seed must be in 0\.\.9223372036854775807, got -1"):
        make_split(synthetic(), seed=-1)
    with pytest.raises(ValueError, match="seed must be in"):
        make_folds(synthetic(), np.arange(10), 2, seed=1 << 63)


def test_bad_fractions() -> None:
    with pytest.raises(ValueError, match="sum < 1"):
        make_split(synthetic(), val_fraction=0.5, test_fraction=0.5)


def test_mmlu_pro_split(mmlu: Dataset) -> None:
    groups = text_groups(mmlu.texts)
    assert np.sum(np.bincount(groups) > 1) == 150  # repeated texts in this copy (data/README says 159 upstream)
    check_split(mmlu, 0.1, 0.2, seed=0, tol=0.005)
    split = make_split(mmlu, seed=0)
    assert len(split.responses(mmlu, "train")) + len(split.responses(mmlu, "val")) + len(
        split.responses(mmlu, "test")) == len(mmlu.responses)


def test_an_llm_answering_only_held_out_questions_is_refused() -> None:
    from jeirt_lite_training.prepared import prepare_split

    # "late" answered questions 4 and 5 only, both held out: training would never read one of its answers. "silent"
    # answered nothing (a Dataset built in code: texts alone teach the static table) and is not this check's to
    # refuse. The check comes before any encoder loads.
    data = Dataset("syn", ["1", "2", "3", "4", "5", "6"], [f"question {i}" for i in range(6)], np.full(6, "a"),
                   np.full(6, "a"), ["early", "late", "silent"],
                   Responses(np.array([0, 1, 2, 3, 4, 5, 4, 5]), np.array([0, 0, 0, 0, 0, 0, 1, 1]),
                             np.array([1, 0, 1, 0, 1, 0, 1, 1], np.float32)))
    held_out = Split(train=np.array([0, 1, 2]), val=np.array([3]), test=np.array([4, 5]))
    with pytest.raises(DataError, match=re.escape("syn: every answer of 1 LLM(s) ('late') is among the held-out "
                                                  "questions")):
        prepare_split(data, held_out, split_seed=0, progress=False)


def _subjects_of_groups(sizes: list[int], n_subjects: int) -> Dataset:
    """Each subject holds groups of the given sizes (a group: one text repeated with other whitespace)."""
    texts, subjects = [], []
    for s in range(n_subjects):
        for g, size in enumerate(sizes):
            texts += [f"subject {s} group {g}" + " " * copy for copy in range(size)]
            subjects += [f"s{s}"] * size
    return _without_answers("groups", texts, np.array(subjects))


def test_a_group_goes_to_a_part_while_its_midpoint_is_below_the_part_s_end() -> None:
    singles = _subjects_of_groups([1] * 10, 4)  # midpoints 0.5, 1.5, 2.5, ...: 2 to test, 1 to validation
    for seed in range(3):
        split = make_split(singles, seed=seed, val_fraction=0.1, test_fraction=0.2)
        for subject in ("s0", "s1", "s2", "s3"):
            members = np.flatnonzero(singles.subjects == subject)
            assert [np.isin(members, part).sum() for part in (split.train, split.val, split.test)] == [7, 1, 2]
    pairs = _subjects_of_groups([2] * 5, 2)  # midpoints 1, 3, 5, ...: the test part ends at 3, so one pair
    split = make_split(pairs, seed=0, val_fraction=0.0, test_fraction=0.3)
    assert len(split.test) == 2 * 2 and len(split.val) == 0 and len(split.train) == 2 * 8


def test_fractions_of_zero_are_allowed_and_others_refused() -> None:
    data = synthetic(100)
    split = make_split(data, val_fraction=0.0, test_fraction=0.0)  # train's default: nothing held out
    assert len(split.train) == 100 and len(split.val) == len(split.test) == 0
    for val, test in ((-0.1, 0.2), (0.1, -0.2), (0.5, 0.5), (0.6, 0.5)):
        with pytest.raises(ValueError, match="sum < 1"):
            make_split(data, val_fraction=val, test_fraction=test)


@pytest.mark.parametrize("k", [2, 3, 5])
def test_folds_partition_the_questions_given_and_keep_texts_together(k: int) -> None:
    data = synthetic(600)
    pool = np.sort(np.random.default_rng(0).choice(600, 400, replace=False))
    folds = make_folds(data, pool, k, seed=1)
    assert len(folds) == k and np.array_equal(np.sort(np.concatenate(folds)), pool)  # each question of the pool once
    assert all(np.array_equal(fold, np.sort(fold)) for fold in folds)
    groups = text_groups(data.texts)
    sides = [set(groups[fold].tolist()) for fold in folds]
    assert all(not sides[i] & sides[j] for i in range(k) for j in range(i + 1, k))
    sizes = [len(fold) for fold in folds]
    assert max(sizes) - min(sizes) <= 0.1 * len(pool)
    again = make_folds(data, pool, k, seed=1)
    assert all(np.array_equal(a, b) for a, b in zip(folds, again))
    assert not all(np.array_equal(a, b) for a, b in zip(folds, make_folds(data, pool, k, seed=2)))


def test_folds_need_two() -> None:
    for k in (1, 0, -2):
        with pytest.raises(ValueError, match=f"need at least 2 folds, got {k}"):
            make_folds(synthetic(50), np.arange(50), k)


def test_the_published_splits_and_folds_are_drawn_the_same_way(mmlu: Dataset) -> None:
    # Every split-0 and fold number in docs/ was measured on these parts; a change to the dealing (the group
    # order, the shuffle, a default) would quietly move them all. Digests of the parts as drawn when they were.
    import hashlib

    def digest(part: np.ndarray) -> str:
        return hashlib.sha256(np.asarray(part, np.int64).tobytes()).hexdigest()[:16]

    split = make_split(mmlu)
    assert (len(split.train), len(split.val), len(split.test)) == (7561, 1079, 2161)
    assert (digest(split.test), digest(split.val)) == ("085602b92d1f0190", "c529e28fa8aa3873")
    folds = make_folds(mmlu, np.concatenate([split.train, split.val]), 5)
    assert [len(fold) for fold in folds] == [1730, 1726, 1727, 1727, 1730] and digest(folds[0]) == "419a5f8d0c989260"


def test_cells_datasets_and_splits_are_frozen() -> None:
    import dataclasses

    cells = Responses(np.array([0, 1]), np.array([0, 0]), np.array([1, 0], np.float32))
    data = Dataset("syn", ["1", "2"], ["a", "b"], np.full(2, "x"), np.full(2, "x"), ["m"], cells)
    split = Split(train=np.array([0]), val=np.array([1]), test=np.array([], np.int64))
    for value, field in ((cells, "llm"), (data, "name"), (split, "test")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(value, field, None)
    both = Responses.concatenate([cells, cells.subset(np.array([False, True]))])
    assert (len(both), both.question.tolist(), both.correct.tolist()) == (3, [0, 1, 1], [1.0, 0.0, 0.0])
