"""Splits: by question, identical texts together, stratified by subject, deterministic."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from jeirt_lite_training.data import load_dataset
from jeirt_lite_training.splits import make_split, text_groups
from jeirt_lite_training.types import Dataset, Responses

REPO = Path(__file__).resolve().parents[1]


def synthetic(n: int = 600, seed: int = 1) -> Dataset:
    rng = np.random.default_rng(seed)
    texts = [f"question {i}" for i in range(n)]
    subjects = np.asarray(rng.choice(["a", "b", "c", "tiny"], size=n, p=[0.5, 0.3, 0.19, 0.01]), dtype=str)
    for i in range(7, n, 7):  # every 7th question repeats the previous one (text modulo whitespace, subject)
        texts[i] = "  " + texts[i - 1].replace(" ", "   ")
        subjects[i] = subjects[i - 1]
    empty = np.zeros(0, dtype=np.int64)
    return Dataset("syn", [str(i) for i in range(n)], texts, subjects, subjects, ["m"],
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
    from jeirt_lite_training.data import DataError
    from jeirt_lite_training.prepared import prepare_split
    from jeirt_lite_training.types import Split

    # "late" answered questions 4 and 5 only, both held out: training would never read one of its answers. The
    # check comes before any encoder loads.
    data = Dataset("syn", ["1", "2", "3", "4", "5", "6"], [f"question {i}" for i in range(6)], np.full(6, "a"),
                   np.full(6, "a"), ["early", "late"],
                   Responses(np.array([0, 1, 2, 3, 4, 5, 4, 5]), np.array([0, 0, 0, 0, 0, 0, 1, 1]),
                             np.array([1, 0, 1, 0, 1, 0, 1, 1], np.float32)))
    held_out = Split(train=np.array([0, 1, 2]), val=np.array([3]), test=np.array([4, 5]))
    with pytest.raises(DataError, match=r"syn: every answer of 1 LLM\(s\) \('late'\) is among the held-out questions"):
        prepare_split(data, held_out, split_seed=0, progress=False)
