"""The static fast path's own checks (jeirt_lite._static_path), at the edges a mutation round found untested: which
tokenizer.json it reproduces and what it defaults, a static_encoder.safetensors whose tensors do not chain, the
adapter's width against d, when the pooled rows are the graph's features, a bad batch size, and how close the
fast path and the graph must agree. Small tensors over the shipped tokenizer's vocabulary; no router is loaded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from jeirt_lite import JeirtError
from jeirt_lite._router import DEFAULT_ROUTER_PATH
from jeirt_lite._static_path import (
    PROBE_TEXTS,
    PROBE_TOLERANCE,
    StaticEncoder,
    Unsupported,
    check_agreement,
    read_static_tensors,
    tokenizer_settings,
)
from safetensors.numpy import save_file

SHIPPED_TOKENIZER = DEFAULT_ROUTER_PATH / "tokenizer.json"
SPEC = json.loads(SHIPPED_TOKENIZER.read_text(encoding="utf-8"))
VOCAB = len(SPEC["model"]["vocab"])
WIDTH, HIDDEN, DIM = 2, 3, 2


def _tokenizer(tmp_path: Path, **changes: Any) -> Path:
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps({**SPEC, **changes}), encoding="utf-8")
    return path


def _tensors(**changes: np.ndarray) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    tensors = {
        "table": rng.normal(size=(VOCAB, WIDTH)).astype(np.float32),
        "w1": rng.normal(size=(HIDDEN, WIDTH)).astype(np.float32),
        "b1": np.zeros(HIDDEN, np.float32),
        "w2": rng.normal(size=(DIM, HIDDEN)).astype(np.float32),
        "b2": np.zeros(DIM, np.float32),
    }
    return {**tensors, **changes}


def _tensor_file(tmp_path: Path, **changes: np.ndarray) -> Path:
    path = tmp_path / "static_encoder.safetensors"
    save_file(_tensors(**changes), str(path))
    return path


def _encoder(tmp_path: Path, *, dim: int = DIM, feature_dim: int = 0, **changes: np.ndarray) -> StaticEncoder:
    return StaticEncoder(SHIPPED_TOKENIZER, _tensor_file(tmp_path, **changes), 16, dim, 1, feature_dim)


# -- tokenizer.json --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("content", [None, b"\xff\xfe not utf-8", b"{not json"])
def test_a_tokenizer_file_that_is_missing_or_not_json_is_named(tmp_path: Path, content: bytes | None) -> None:
    path = tmp_path / "tokenizer.json"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(JeirtError, match="tokenizer.json: not readable JSON"):
        tokenizer_settings(path, 16)


def test_three_tokens_is_the_shortest_max_length_and_defaults_are_bert_s(tmp_path: Path) -> None:
    model = {key: value for key, value in SPEC["model"].items() if key not in ("max_input_chars_per_word",
                                                                               "continuing_subword_prefix")}
    settings = tokenizer_settings(_tokenizer(tmp_path, model=model), 3)
    assert settings["max_length"] == 3
    assert settings["max_input_chars_per_word"] == 100
    assert settings["continuation_prefix"] == "##"
    assert (settings["cls_id"], settings["sep_id"], settings["unk_id"]) == (101, 102, 100)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"pre_tokenizer": {"type": "Bert"}}, "pre-tokenizer 'Bert'"),  # sorts before BertPreTokenizer
        ({"model": {**SPEC["model"], "type": "BPE"}}, "model 'BPE'"),  # sorts before WordPiece, same vocabulary
        ({"post_processor": {"type": "RobertaProcessing"}}, "post-processor 'RobertaProcessing'"),
        ({"post_processor": {**SPEC["post_processor"], "single": SPEC["post_processor"]["pair"]}},
         r"template other than \[CLS\] \$A \[SEP\]"),
        ({"post_processor": {**SPEC["post_processor"], "single": [SPEC["post_processor"]["single"][i] for i in (0, 2, 1)]}},
         r"template other than \[CLS\] \$A \[SEP\]"),
        ({"post_processor": {**SPEC["post_processor"],
                             "special_tokens": {**SPEC["post_processor"]["special_tokens"],
                                                "[SEP]": {"id": "[SEP]", "ids": [102, 0], "tokens": ["[SEP]"]}}}},
         r"special token '\[SEP\]' is not one id"),
    ],
)
def test_tokenizers_the_rust_path_does_not_reproduce_are_named(
    tmp_path: Path, changes: dict[str, Any], message: str
) -> None:
    with pytest.raises(Unsupported, match=message):
        tokenizer_settings(_tokenizer(tmp_path, **changes), 16)


@pytest.mark.parametrize("flag", ["normalized", "lstrip", "rstrip", "single_word"])
def test_an_added_token_with_any_one_flag_is_unsupported(tmp_path: Path, flag: str) -> None:
    token = {**SPEC["added_tokens"][0], flag: True}
    with pytest.raises(Unsupported, match=r"added token '\[PAD\]'"):
        tokenizer_settings(_tokenizer(tmp_path, added_tokens=[token, *SPEC["added_tokens"][1:]]), 16)


def test_a_bert_processing_post_processor_gives_its_ids(tmp_path: Path) -> None:
    post = {"type": "BertProcessing", "cls": ["[CLS]", 7], "sep": ["[SEP]", 9]}
    settings = tokenizer_settings(_tokenizer(tmp_path, post_processor=post), 16)
    assert (settings["cls_id"], settings["sep_id"]) == (7, 9)


# -- static_encoder.safetensors --------------------------------------------------------------------------------


def test_a_file_that_is_not_safetensors_is_named(tmp_path: Path) -> None:
    path = tmp_path / "static_encoder.safetensors"
    path.write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00not json")
    with pytest.raises(JeirtError, match="not a readable safetensors file"):
        read_static_tensors(path)


def test_a_file_without_one_of_its_tensors_is_named(tmp_path: Path) -> None:
    tensors = _tensors()
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
    ],
)
def test_tensors_that_do_not_chain_are_refused(tmp_path: Path, changes: dict[str, np.ndarray]) -> None:
    with pytest.raises(JeirtError, match="do not chain"):
        read_static_tensors(_tensor_file(tmp_path, **changes))


@pytest.mark.parametrize(
    "changes",
    [
        {"b1": np.zeros(HIDDEN + 1, np.float32)},
        {"b2": np.zeros(DIM + 1, np.float32)},
        {"b2": np.zeros(DIM - 1, np.float32)},
        {"b2": np.zeros((DIM, 1), np.float32)},
    ],
)
def test_biases_of_another_length_are_refused(tmp_path: Path, changes: dict[str, np.ndarray]) -> None:
    with pytest.raises(JeirtError, match="biases .* do not match"):
        read_static_tensors(_tensor_file(tmp_path, **changes))


@pytest.mark.parametrize("dim", [DIM - 1, DIM + 1])
def test_an_adapter_of_another_width_than_d_is_refused(tmp_path: Path, dim: int) -> None:
    with pytest.raises(JeirtError, match=f"the adapter outputs {DIM} values, the router's d is {dim}"):
        _encoder(tmp_path, dim=dim)


@pytest.mark.parametrize(("feature_dim", "gives"), [(0, False), (WIDTH, True), (WIDTH - 1, False), (WIDTH + 1, False)])
def test_pooled_rows_are_features_only_at_the_graphs_stated_width(
    tmp_path: Path, feature_dim: int, gives: bool
) -> None:
    encoder = _encoder(tmp_path, feature_dim=feature_dim)
    assert encoder.gives_features is gives
    vectors, features = encoder.encode_with_features(["a question"])
    assert vectors.shape == (1, DIM)
    assert (features is not None) is gives


@pytest.mark.parametrize("batch_size", [0, -1, True, 1.5, "2"])
def test_a_bad_batch_size_is_named(tmp_path: Path, batch_size: object) -> None:
    with pytest.raises(JeirtError, match="batch_size must be an integer of at least 1"):
        _encoder(tmp_path).encode(["a question"], batch_size)  # type: ignore[arg-type]
    assert _encoder(tmp_path).encode(["a question"], 1).shape == (1, DIM)


# -- the fast path against the graph ---------------------------------------------------------------------------


class _Fixed:
    """An encoder that gives one fixed array for the probe texts (check_agreement only calls `encode`)."""

    def __init__(self, vectors: np.ndarray):
        self.vectors = vectors

    def encode(self, texts: list[str]) -> np.ndarray:
        assert texts == list(PROBE_TEXTS)
        return self.vectors


def _agree(graph: np.ndarray, difference: float) -> None:
    fast = graph.copy()
    fast[1, 0] += difference
    check_agreement(_Fixed(fast), _Fixed(graph), Path("encoder.onnx"))  # type: ignore[arg-type]


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
