"""The static fast path's own checks (jeirt_lite._static_path), at the edges a mutation round found untested: which
tokenizer.json it reproduces and what it defaults, a static_encoder.safetensors whose tensors do not chain, the
adapter's width against d, when the pooled rows are the graph's features, a bad batch size, and how close the
fast path and the graph must agree. Small tensors over the shipped tokenizer's vocabulary; no router is loaded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from jeirt_lite import JeirtError
from jeirt_lite._manifest import STATIC_ROLE
from jeirt_lite._static_path import (
    PROBE_TEXTS,
    PROBE_TOLERANCE,
    STATIC_ENCODER_FILE,
    StaticEncoder,
    Unsupported,
    _checked,
    check_agreement,
    read_static_tensors,
    static_encoder_for,
    tokenizer_settings,
)
from safetensors.numpy import save_file
from static_encoder_files import (
    DIM,
    HIDDEN,
    SHIPPED_TOKENIZER,
    SPEC,
    VOCAB,
    WIDTH,
    static_tensors,
    tensor_file,
    tokenizer_file,
)


def _encoder(
    tmp_path: Path, *, dim: int = DIM, width: int = WIDTH, feature_dim: int = 0, **changes: np.ndarray
) -> StaticEncoder:
    return StaticEncoder(SHIPPED_TOKENIZER, tensor_file(tmp_path, width=width, **changes), 16, dim, 1, feature_dim)


# -- tokenizer.json --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("content", [None, b"\xff\xfe not utf-8", b"{not json"])
def test_a_tokenizer_file_that_is_missing_or_not_json_is_named(tmp_path: Path, content: bytes | None) -> None:
    path = tmp_path / "tokenizer.json"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(JeirtError, match="tokenizer.json: not readable JSON"):
        tokenizer_settings(path, 16)


def test_a_max_length_without_room_between_cls_and_sep_is_unsupported() -> None:
    with pytest.raises(Unsupported, match="max_seq_length 2 leaves no room"):
        tokenizer_settings(SHIPPED_TOKENIZER, 2)


def test_three_tokens_is_the_shortest_max_length_and_defaults_are_bert_s(tmp_path: Path) -> None:
    model = {key: value for key, value in SPEC["model"].items() if key not in ("max_input_chars_per_word",
                                                                               "continuing_subword_prefix")}
    normalizer = {"type": "BertNormalizer"}  # lowercase, clean_text and handle_chinese_chars default to true
    settings = tokenizer_settings(tokenizer_file(tmp_path, model=model, normalizer=normalizer), 3)
    assert settings["max_length"] == 3
    assert settings["lowercase"] and settings["clean_text"] and settings["handle_chinese_chars"]
    assert settings["strip_accents"]  # follows lowercase when not stated
    assert settings["max_input_chars_per_word"] == 100
    assert settings["continuation_prefix"] == "##"
    assert (settings["cls_id"], settings["sep_id"], settings["unk_id"]) == (101, 102, 100)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"normalizer": {"type": "NFKC"}}, "normalizer 'NFKC'"),
        ({"normalizer": {**SPEC["normalizer"], "type": "Bert"}}, "normalizer 'Bert'"),  # sorts before BertNormalizer
        ({"pre_tokenizer": {"type": "Whitespace"}}, "pre-tokenizer 'Whitespace'"),
        ({"pre_tokenizer": {"type": "Bert"}}, "pre-tokenizer 'Bert'"),  # sorts before BertPreTokenizer
        ({"model": {**SPEC["model"], "type": "WordPieces"}}, "model 'WordPieces'"),  # sorts after WordPiece
        ({"model": {**SPEC["model"], "unk_token": "[NOT IN VOCAB]"}}, "without a vocabulary that holds its unknown"),
        ({"model": {**SPEC["model"], "type": "BPE"}}, "model 'BPE'"),  # sorts before WordPiece, same vocabulary
        ({"post_processor": None}, "post-processor None"),
        ({"post_processor": {"type": "RobertaProcessing"}}, "post-processor 'RobertaProcessing'"),
        ({"post_processor": {**SPEC["post_processor"], "single": SPEC["post_processor"]["pair"]}},
         r"template other than \[CLS\] \$A \[SEP\]"),
        ({"post_processor": {**SPEC["post_processor"], "single": [SPEC["post_processor"]["single"][i] for i in (0, 2, 1)]}},
         r"template other than \[CLS\] \$A \[SEP\]"),
        ({"post_processor": {**SPEC["post_processor"], "single": [SPEC["post_processor"]["single"][i] for i in (1, 1, 2)]}},
         r"template other than \[CLS\] \$A \[SEP\]"),
        ({"post_processor": {**SPEC["post_processor"], "single": SPEC["post_processor"]["single"][:2]}},
         r"template other than \[CLS\] \$A \[SEP\]"),
        ({"post_processor": {**SPEC["post_processor"],
                             "special_tokens": {**SPEC["post_processor"]["special_tokens"],
                                                "[SEP]": {"id": "[SEP]", "ids": [102, 0], "tokens": ["[SEP]"]}}}},
         r"special token '\[SEP\]' is not one id"),
        ({"post_processor": {**SPEC["post_processor"],
                             "special_tokens": {**SPEC["post_processor"]["special_tokens"],
                                                "[CLS]": {"id": "[CLS]", "ids": [], "tokens": []}}}},
         r"special token '\[CLS\]' is not one id"),
    ],
)
def test_tokenizers_the_rust_path_does_not_reproduce_are_named(
    tmp_path: Path, changes: dict[str, Any], message: str
) -> None:
    with pytest.raises(Unsupported, match=message):
        tokenizer_settings(tokenizer_file(tmp_path, **changes), 16)


@pytest.mark.parametrize("flag", ["normalized", "lstrip", "rstrip", "single_word"])
def test_an_added_token_with_any_one_flag_is_unsupported(tmp_path: Path, flag: str) -> None:
    token = {**SPEC["added_tokens"][0], flag: True}
    with pytest.raises(Unsupported, match=r"added token '\[PAD\]'"):
        tokenizer_settings(tokenizer_file(tmp_path, added_tokens=[token, *SPEC["added_tokens"][1:]]), 16)


def test_a_bert_processing_post_processor_gives_its_ids(tmp_path: Path) -> None:
    post = {"type": "BertProcessing", "cls": ["[CLS]", 7], "sep": ["[SEP]", 9]}
    settings = tokenizer_settings(tokenizer_file(tmp_path, post_processor=post), 16)
    assert (settings["cls_id"], settings["sep_id"]) == (7, 9)


# -- static_encoder.safetensors --------------------------------------------------------------------------------


def test_a_file_that_is_not_safetensors_is_named(tmp_path: Path) -> None:
    path = tmp_path / "static_encoder.safetensors"
    path.write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00not json")
    with pytest.raises(JeirtError, match="not a readable safetensors file"):
        read_static_tensors(path)


def test_a_file_without_one_of_its_tensors_is_named(tmp_path: Path) -> None:
    tensors = static_tensors()
    del tensors["b2"]
    save_file(tensors, str(tmp_path / "s.safetensors"))
    with pytest.raises(JeirtError, match=r"lacks tensors \['b2'\]"):
        read_static_tensors(tmp_path / "s.safetensors")


@pytest.mark.parametrize(
    "changes",
    [
        {"table": np.ones(VOCAB, np.float32)},
        {"w1": np.ones(HIDDEN * WIDTH, np.float32)},
        {"w2": np.ones(DIM * HIDDEN, np.float32)},
        {"w1": np.ones((HIDDEN, WIDTH + 1), np.float32)},
        {"w1": np.ones((HIDDEN, WIDTH - 1), np.float32)},
        {"w2": np.ones((DIM, HIDDEN + 1), np.float32)},
        {"w2": np.ones((DIM, HIDDEN - 1), np.float32)},
        {"table": np.ones((VOCAB, WIDTH, 1), np.float32)},
        {"w1": np.ones((HIDDEN, WIDTH, 1), np.float32)},
        {"w2": np.ones((DIM, HIDDEN, 1), np.float32)},
    ],
)
def test_tensors_that_do_not_chain_are_refused(tmp_path: Path, changes: dict[str, Any]) -> None:
    with pytest.raises(JeirtError, match="do not chain"):
        read_static_tensors(tensor_file(tmp_path, **changes))


@pytest.mark.parametrize(
    "changes",
    [
        {"b1": np.zeros(HIDDEN + 1, np.float32)},
        {"b1": np.zeros(HIDDEN - 1, np.float32)},
        {"b2": np.zeros(DIM + 1, np.float32)},
        {"b2": np.zeros(DIM - 1, np.float32)},
        {"b2": np.zeros((DIM, 1), np.float32)},
    ],
)
def test_biases_of_another_length_are_refused(tmp_path: Path, changes: dict[str, Any]) -> None:
    with pytest.raises(JeirtError, match="biases .* do not match"):
        read_static_tensors(tensor_file(tmp_path, **changes))


@pytest.mark.parametrize("dim", [DIM - 1, DIM + 1])
def test_an_adapter_of_another_width_than_d_is_refused(tmp_path: Path, dim: int) -> None:
    with pytest.raises(JeirtError, match=f"the adapter outputs {DIM} values, the router's d is {dim}"):
        _encoder(tmp_path, dim=dim)


@pytest.mark.parametrize(
    ("width", "feature_dim", "gives"),
    [(WIDTH, 0, False), (WIDTH, WIDTH, True), (WIDTH, WIDTH - 1, False), (WIDTH, WIDTH + 1, False), (1, 1, True)],
)
def test_pooled_rows_are_features_only_at_the_graphs_stated_width(
    tmp_path: Path, width: int, feature_dim: int, gives: bool
) -> None:
    encoder = _encoder(tmp_path, width=width, feature_dim=feature_dim)
    assert encoder.gives_features is gives
    vectors, features = encoder.encode_with_features(["a question"])
    assert vectors.shape == (1, DIM)
    assert (features is not None) is gives


@pytest.mark.parametrize("batch_size", [0, -1, True, 1.5, "2"])
def test_a_bad_batch_size_is_named(tmp_path: Path, batch_size: object) -> None:
    with pytest.raises(JeirtError, match="batch_size must be an integer of at least 1"):
        _encoder(tmp_path).encode(["a question"], batch_size)  # type: ignore[arg-type]
    assert _encoder(tmp_path).encode(["a question"], 1).shape == (1, DIM)
    assert _encoder(tmp_path).encode(["a question"], 2).shape == (1, DIM)


def test_a_background_encoding_gives_features_only_when_asked(tmp_path: Path) -> None:
    encoder = _encoder(tmp_path, feature_dim=WIDTH)
    vectors, features, sums = encoder.encode_start(["a question", "another"]).result()
    assert features is None and sums is None
    again, features, _ = encoder.encode_start(["a question", "another"], features=True).result()
    np.testing.assert_array_equal(again, vectors)
    assert features is not None and features.shape == (2, WIDTH)
    with pytest.raises(TypeError):
        encoder.encode_start(["a question"], True)  # type: ignore[call-arg]


def test_a_lone_surrogate_is_named_however_the_texts_are_encoded(tmp_path: Path) -> None:
    encoder = _encoder(tmp_path)
    texts = ["fine", "bad \ud800 text", "fine"]
    with pytest.raises(JeirtError, match="text 1 is not valid Unicode"):
        encoder.encode(texts)
    with pytest.raises(JeirtError, match="text 1 is not valid Unicode"):
        encoder.encode_start(texts).result()


def test_the_first_row_that_is_not_finite_is_named() -> None:
    vectors = np.array([[1.0, 2.0], [3.0, 4.0], [np.nan, 0.0], [np.inf, 1.0]])
    with pytest.raises(JeirtError, match="encoder produced NaN or inf for text 2"):
        _checked(vectors)
    np.testing.assert_array_equal(_checked(vectors[:2]), vectors[:2])


def _manifest(**encoder: object) -> dict[str, Any]:
    return {"files": {STATIC_ROLE: {"path": STATIC_ENCODER_FILE}}, "encoder": {"max_seq_length": 16, **encoder}}


@pytest.mark.parametrize(
    ("encoder", "gives"),
    [({"feature_output": "features", "feature_dim": 1}, True), ({"feature_dim": 1}, False),
     ({"feature_output": "features"}, False)],
)
def test_the_folder_s_encoder_reads_the_features_width_only_with_a_features_output(
    tmp_path: Path, encoder: dict[str, object], gives: bool
) -> None:
    tensor_file(tmp_path, width=1)
    fast = static_encoder_for(tmp_path, _manifest(**encoder), SHIPPED_TOKENIZER, DIM, 1)
    assert fast is not None and fast.gives_features is gives


def test_a_folder_without_the_file_or_with_another_tokenizer_has_no_fast_path(tmp_path: Path) -> None:
    tensor_file(tmp_path)
    assert static_encoder_for(tmp_path, {"files": {}, "encoder": {"max_seq_length": 16}}, SHIPPED_TOKENIZER, DIM,
                              1) is None
    other = tokenizer_file(tmp_path, normalizer={"type": "NFKC"})
    assert static_encoder_for(tmp_path, _manifest(), other, DIM, 1) is None
    assert static_encoder_for(tmp_path, _manifest(), SHIPPED_TOKENIZER, DIM, 1) is not None


# -- the fast path against the graph ---------------------------------------------------------------------------


class _Fixed:
    """An encoder that gives fixed arrays for the probe texts (check_agreement only calls `encode_with_features`)."""

    def __init__(self, vectors: np.ndarray, features: np.ndarray | None = None):
        self.vectors, self.features = vectors, features

    def encode_with_features(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray | None]:
        assert texts == list(PROBE_TEXTS)
        return self.vectors, self.features


def _agree(graph: np.ndarray, difference: float) -> None:
    fast = graph.copy()
    fast[1, 0] += difference
    check_agreement(_Fixed(fast), _Fixed(graph), Path("encoder.onnx"))  # type: ignore[arg-type]


def _agree_on_features(graph: np.ndarray, difference: float, *, fast_gives: bool = True) -> None:
    fast = graph.copy()
    fast[1, 0] += difference
    vectors = np.zeros((len(PROBE_TEXTS), 2))
    check_agreement(_Fixed(vectors, fast if fast_gives else None), _Fixed(vectors, graph),  # type: ignore[arg-type]
                    Path("encoder.onnx"))


def test_the_features_are_held_to_the_same_tolerance_where_the_fast_path_gives_them() -> None:
    graph = np.zeros((len(PROBE_TEXTS), 3))
    _agree_on_features(graph, PROBE_TOLERANCE)
    with pytest.raises(JeirtError, match="its features output differs"):
        _agree_on_features(graph, 2 * PROBE_TOLERANCE)
    graph[0, 0] = 4.0
    _agree_on_features(graph, 3 * PROBE_TOLERANCE)
    with pytest.raises(JeirtError, match=r"max difference 0\.00025 relative"):
        _agree_on_features(graph, 10 * PROBE_TOLERANCE)
    with pytest.raises(JeirtError, match="max difference nan"):
        _agree_on_features(graph, float("nan"))
    _agree_on_features(graph, 1.0, fast_gives=False)  # features from the graph alone: nothing to compare


def test_agreement_is_measured_against_the_largest_entry_and_at_least_one() -> None:
    graph = np.zeros((len(PROBE_TEXTS), 2))
    _agree(graph, PROBE_TOLERANCE)  # exactly at the tolerance: accepted
    with pytest.raises(JeirtError, match="computes other question vectors"):
        _agree(graph, 2 * PROBE_TOLERANCE)
    graph[0, 0] = 0.5  # entries below 1 are measured in absolute terms
    with pytest.raises(JeirtError, match="computes other question vectors"):
        _agree(graph, 1.5 * PROBE_TOLERANCE)
    graph[0, 0] = 4.0  # above 1, relative to the largest entry
    _agree(graph, 3 * PROBE_TOLERANCE)
    with pytest.raises(JeirtError, match=r"max difference 0\.00025 relative"):
        _agree(graph, 10 * PROBE_TOLERANCE)
    with pytest.raises(JeirtError, match="max difference nan"):
        _agree(graph, float("nan"))
