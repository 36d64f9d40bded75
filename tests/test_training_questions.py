"""training_questions.npy: the record of the questions a router learned from, written, bound and checked at load."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from jeirt_lite import JeirtError, Router
from jeirt_lite._training_questions import (
    TRAINING_QUESTIONS_FILE,
    check_record,
    question_hash,
    seen_mask,
    training_question_set,
)
from jeirt_lite.artifact import load_artifact
from npy_bytes import npy_bytes
from tiny_router import edit_and_reseal

from scripts.add_training_questions import learned_from_everything

REPO = Path(__file__).resolve().parents[1]
TEXTS = ["What is the derivative of x?", "Which enzyme unwinds DNA?", "What  is the derivative\nof x? "]


def test_the_identity_is_the_text_up_to_whitespace() -> None:
    assert question_hash(TEXTS[0]) == question_hash(TEXTS[2])
    assert question_hash(TEXTS[0]) != question_hash(TEXTS[1])
    record = training_question_set(TEXTS)
    assert record.dtype == np.dtype("<u8") and record.size == 2 and np.all(np.diff(record.astype(np.float64)) > 0)
    assert seen_mask(record, ["Which  enzyme unwinds DNA?", "an unseen question", TEXTS[2]]).tolist() == [
        True, False, True]
    assert seen_mask(training_question_set([]), TEXTS).tolist() == [False] * 3


def _with_record(src: Path, dst: Path, texts: list[str]) -> Path:
    artifact = dataclasses.replace(load_artifact(src), training_questions=training_question_set(texts))
    return Path(Router(artifact, threads=1).save(dst))


def test_a_saved_record_is_listed_hashed_and_read_back(tiny_router_path: Path, tmp_path: Path) -> None:
    assert load_artifact(tiny_router_path).training_questions is None  # older routers: no record, still load
    folder = _with_record(tiny_router_path, tmp_path / "r", TEXTS)
    manifest = json.loads((folder / "router.json").read_text())
    assert manifest["files"]["training_questions"]["path"] == TRAINING_QUESTIONS_FILE
    record = load_artifact(folder).training_questions
    assert record is not None and np.array_equal(record, training_question_set(TEXTS))
    # Derived routers keep it (select_llms, save again).
    again = Router.load(folder, threads=1).select_llms(["llm-0", "llm-1"]).save(tmp_path / "again")
    assert np.array_equal(load_artifact(again).training_questions, record)  # type: ignore[arg-type]


def test_a_corrupt_or_invalid_record_is_refused_naming_the_file(tiny_router_path: Path, tmp_path: Path) -> None:
    folder = _with_record(tiny_router_path, tmp_path / "r", TEXTS)
    path = folder / TRAINING_QUESTIONS_FILE
    good = path.read_bytes()
    path.write_bytes(good[:-8] + bytes(8))
    with pytest.raises(JeirtError, match=f"{TRAINING_QUESTIONS_FILE}: sha256 .* does not match"):
        load_artifact(folder)
    for bad, message in ((np.array([3, 2], dtype="<u8"), "sorted and distinct"),
                         (np.array([1.0, 2.0]), "must be a 1-D little-endian uint64 array")):
        np.save(path, bad)
        edit_and_reseal(folder)  # consistent hashes, wrong content: the record's own check must catch it
        with pytest.raises(JeirtError, match=f"{TRAINING_QUESTIONS_FILE}: .*{message}"):
            load_artifact(folder)
    # NumPy's own parser raises SyntaxError on this descr
    damaged = npy_bytes("{'descr': ',<u8', 'fortran_order': False, 'shape': (2,), }\n", data=bytes(16))
    for content in (b"not an npy file", damaged):
        path.write_bytes(content)
        edit_and_reseal(folder)
        with pytest.raises(JeirtError, match=f"{TRAINING_QUESTIONS_FILE}: not a readable .npy file"):
            load_artifact(folder)
    path.unlink()
    with pytest.raises(JeirtError, match=f"{TRAINING_QUESTIONS_FILE}: missing"):
        load_artifact(folder)


def test_the_shipped_router_records_every_mmlu_pro_question() -> None:
    record = load_artifact(REPO / "python" / "jeirt_lite" / "default_router").training_questions
    texts = pd.read_csv(REPO / "data" / "mmlu_pro" / "questions.csv")["text"].tolist()
    assert record is not None and np.array_equal(record, training_question_set(texts))
    assert seen_mask(record, texts[:50]).all()
    assert not seen_mask(record, ["What is 2 + 2? A question the shipped router never saw."]).any()


def test_back_filling_refuses_a_router_that_did_not_learn_from_every_question() -> None:
    full = {"dataset": "d", "split": {"n_test_questions": 0}, "selection": {"refit_on": {"questions": 10}}}
    assert learned_from_everything(full, 10, "d") is None
    assert "not 'e'" in str(learned_from_everything(full, 10, "e"))
    assert "refitted on 10 questions, the data has 11" in str(learned_from_everything(full, 11, "d"))
    assert "test part" in str(learned_from_everything({**full, "split": {"n_test_questions": 5}}, 10, "d"))
    assert "no training record" in str(learned_from_everything(None, 10, "d"))


def test_add_llm_counts_the_answers_on_the_shipped_routers_training_questions() -> None:
    """Real questions: MMLU-Pro's (the shipped router learned from every one) and zeroeval's (it saw none)."""
    seen = pd.read_csv(REPO / "data" / "mmlu_pro" / "questions.csv")["text"].tolist()[:40]
    unseen = pd.read_csv(REPO / "data" / "zeroeval_crux_gsm_math" / "questions.csv")["text"].tolist()[:60]
    router = Router.load(threads=1)
    texts = seen + unseen
    assert router.learned_from(texts).tolist() == [True] * 40 + [False] * 60  # type: ignore[union-attr]
    labels = [i % 3 != 0 for i in range(100)]
    record = router.add_llm("new-llm", texts, labels).manifest["onboarded"][-1]
    assert record["on_training_questions"] == 40 and record["cv_answers"] == 60
    everything_seen = router.add_llm("newer-llm", seen, labels[:40]).manifest["onboarded"][-1]
    assert everything_seen["on_training_questions"] == 40
    assert "40 of the 40 answers are on questions the router learned from" in everything_seen["correction"]
    assert router.select_llms(router.llms[:3]).learned_from(texts) is not None  # derived routers keep the record


def test_a_router_without_the_record_does_not_know(tiny_router_path: Path) -> None:
    router = Router.load(tiny_router_path, threads=1)
    assert router.learned_from(TEXTS) is None


def _texts_around(record_text: str) -> tuple[str, str]:
    """An unseen text whose hash is below the recorded one's, and one whose hash is above it."""
    pivot = question_hash(record_text)
    candidates = [f"unseen question {i}" for i in range(64)]
    below = next(t for t in candidates if question_hash(t) < pivot)
    return below, next(t for t in candidates if question_hash(t) > pivot)


def test_seen_is_exact_membership_at_both_ends_of_the_record() -> None:
    below, above = _texts_around("What is 2 + 2?")
    record = training_question_set(["What is 2 + 2?"])
    digest = hashlib.sha256(b"What is 2 + 2?").digest()
    assert question_hash("What is 2 + 2?") == int.from_bytes(digest[:8], "little")
    mask = seen_mask(record, [below, "What  is 2 +\n2?", above])
    assert mask.tolist() == [False, True, False]
    wider = training_question_set([below, above, "What is 2 + 2?"])
    assert seen_mask(wider, [above, below, "x"]).tolist() == [True, True, False]
    assert seen_mask(training_question_set([]), [below, above]).tolist() == [False, False]
    # a text above every recorded one, in a record of even size
    assert seen_mask(training_question_set([below, "What is 2 + 2?"]), [above]).tolist() == [False]


SHAPE = "the training questions must be a 1-D little-endian uint64 array"
ORDER = "the training question hashes must be sorted and distinct"


@pytest.mark.parametrize(
    ("array", "problem"),
    [(np.arange(4, dtype="<u8").reshape(2, 2), SHAPE), (np.array(5, "<u8"), SHAPE), (np.array([1, 2], ">u8"), SHAPE),
     (np.array([1, 2], "<i8"), SHAPE), (np.array([1, 1], "<u8"), ORDER), (np.array([1, 3, 2], "<u8"), ORDER),
     (np.array([3, 2, 1], "<u8"), ORDER)],
)
def test_a_record_must_be_one_sorted_run_of_distinct_little_endian_uint64(array: np.ndarray, problem: str) -> None:
    with pytest.raises(JeirtError, match=f"r.npy: {problem}"):
        check_record(array, "r.npy")


@pytest.mark.parametrize("values", [[], [7], [1, 2, 2**64 - 1]])
def test_a_valid_record_is_kept_as_it_is_and_read_only(values: list[int]) -> None:
    record = check_record(np.array(values, "<u8"), "r.npy")
    assert record.tolist() == values and not record.flags.writeable
