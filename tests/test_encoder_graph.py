"""The ONNX encoder (`_encoder.OnnxEncoder`) on graphs built in the test: every way a graph can disagree with
router.json is refused by name when it loads, and what goes wrong while encoding names the texts at fault."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pytest
from jeirt_lite import JeirtError
from jeirt_lite._encoder import DEFAULT_BATCH_SIZE, OnnxEncoder, _pad_id
from jeirt_lite._manifest import EncoderSpec
from onnx import TensorProto, helper, numpy_helper
from tiny_router import WORDS, build_tokenizer

DIM = 3
INPUTS = ("input_ids", "attention_mask")
TEXTS = ["what is the price", "law", "a court of law and a contract", "energy"]


def _graph(
    path: Path,
    *,
    ids_type: int = TensorProto.INT64,
    ids_shape: tuple[Any, ...] = ("batch", "sequence"),
    extra_inputs: tuple[str, ...] = (),
    out_type: int = TensorProto.FLOAT,
    out_rank: int = 2,
    features_rank: Optional[int] = None,
    symbolic: bool = False,
    table: Optional[np.ndarray] = None,
) -> Path:
    """A graph whose question vector is the masked mean of a per-token table's rows (ids 0..len(table)-1), of the
    given type and rank (ONNX Runtime infers the shapes it reports from the computation, whatever is declared).
    `features_rank`: a second output `features` (the pooled rows, doubled) of that rank; `symbolic`: the width
    goes through a Reshape computed from the input, so that ONNX Runtime cannot tell it before running."""
    import onnx

    vocab = len(WORDS) + 2
    rows = np.arange(vocab * DIM, dtype=np.float32).reshape(vocab, DIM) / 10 if table is None else table
    nodes = [helper.make_node("Cast", ["input_ids"], ["ids64"], to=TensorProto.INT64),
             helper.make_node("Gather", ["table", "ids64"], ["tokens"]),
             helper.make_node("Cast", ["attention_mask"], ["mask"], to=TensorProto.FLOAT),
             helper.make_node("Unsqueeze", ["mask", "axis_2"], ["mask_3d"]),
             helper.make_node("Mul", ["tokens", "mask_3d"], ["masked"]),
             helper.make_node("ReduceSum", ["masked", "axis_1"], ["summed"], keepdims=0),
             helper.make_node("ReduceSum", ["mask_3d", "axis_1"], ["count"], keepdims=0),
             helper.make_node("Div", ["summed", "count"], ["mean"])]
    if symbolic:
        nodes += [helper.make_node("Shape", ["ids64"], ["ids_shape"]),
                  helper.make_node("Slice", ["ids_shape", "zero", "axis_1"], ["n"]),
                  helper.make_node("Concat", ["n", "minus_one"], ["target"], axis=0),
                  helper.make_node("Reshape", ["mean", "target"], ["pooled"])]
    else:
        nodes.append(helper.make_node("Identity", ["mean"], ["pooled"]))

    def ranked(source: str, name: str, rank: int, out: int) -> None:
        if rank == 2:
            nodes.append(helper.make_node("Cast", [source], [name], to=out))
        elif rank == 3:
            nodes.append(helper.make_node("Unsqueeze", [source, "axis_2"], [f"{name}_3d"]))
            nodes.append(helper.make_node("Cast", [f"{name}_3d"], [name], to=out))
        else:
            nodes.append(helper.make_node("ReduceSum", [source, "axis_1"], [f"{name}_1d"], keepdims=0))
            nodes.append(helper.make_node("Cast", [f"{name}_1d"], [name], to=out))
        outputs.append(helper.make_tensor_value_info(name, out, None))

    outputs: list[Any] = []
    ranked("pooled", "question_vectors", out_rank, out_type)
    if features_rank is not None:
        nodes.append(helper.make_node("Add", ["pooled", "pooled"], ["doubled"]))
        ranked("doubled", "features", features_rank, TensorProto.FLOAT)
    inputs = [helper.make_tensor_value_info("input_ids", ids_type, list(ids_shape)),
              helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"])]
    for name in extra_inputs:  # read by the graph, so ONNX Runtime keeps them as inputs
        inputs.append(helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "sequence"]))
        nodes.append(helper.make_node("Cast", [name], [f"{name}_read"], to=TensorProto.FLOAT))
        outputs.append(helper.make_tensor_value_info(f"{name}_read", TensorProto.FLOAT, None))
    initializers = [numpy_helper.from_array(rows, "table"),
                    numpy_helper.from_array(np.array([2], np.int64), "axis_2"),
                    numpy_helper.from_array(np.array([1], np.int64), "axis_1"),
                    numpy_helper.from_array(np.array([0], np.int64), "zero"),
                    numpy_helper.from_array(np.array([-1], np.int64), "minus_one")]
    model = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs, initializers),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tokenizer") / "tokenizer.json"
    build_tokenizer(path)
    return path


def _spec(**changes: Any) -> EncoderSpec:
    fields: dict[str, Any] = {"name": "test", "max_seq_length": 16, "input_names": INPUTS,
                              "output_name": "question_vectors"}
    fields.update(changes)
    return EncoderSpec(**fields)


def _encoder(tokenizer: Path, graph: Path, spec: Optional[EncoderSpec] = None, dim: int = DIM) -> OnnxEncoder:
    return OnnxEncoder(tokenizer, graph, spec or _spec(), dim, 1)


@pytest.mark.parametrize(
    ("graph", "spec", "message"),
    [
        ({"ids_type": TensorProto.INT32}, {},
         "input 'input_ids' is tensor(int32) of shape ['batch', 'sequence'], expected int64 (N, L)"),
        ({"ids_type": TensorProto.UINT8}, {},
         "input 'input_ids' is tensor(uint8) of shape ['batch', 'sequence'], expected int64 (N, L)"),
        ({"ids_shape": ("batch",)}, {}, "input 'input_ids' is tensor(int64) of shape ['batch'], expected int64 (N, L)"),
        ({"ids_shape": ("batch", "sequence", 1)}, {},
         "input 'input_ids' is tensor(int64) of shape ['batch', 'sequence', 1], expected int64 (N, L)"),
        ({"extra_inputs": ("token_type_ids",)}, {},
         "needs inputs ['token_type_ids'] that the router does not provide"),
        ({}, {"input_names": ("input_ids", "mask")},
         "has no input 'mask' (inputs: ['attention_mask', 'input_ids'])"),
        ({}, {"output_name": "vectors"}, "has no output 'vectors' (outputs: ['question_vectors'])"),
        ({"out_type": TensorProto.DOUBLE}, {}, "output 'question_vectors' is tensor(double), expected float32"),
        ({"out_type": TensorProto.FLOAT16}, {}, "output 'question_vectors' is tensor(float16), expected float32"),
        ({"table": np.ones((len(WORDS) + 2, DIM + 1), np.float32)}, {},
         f"output 'question_vectors' has shape ['batch', {DIM + 1}], expected (N, {DIM})"),
        ({"table": np.ones((len(WORDS) + 2, DIM - 1), np.float32)}, {},
         f"output 'question_vectors' has shape ['batch', {DIM - 1}], expected (N, {DIM})"),
        ({"out_rank": 3}, {}, f"output 'question_vectors' has shape ['batch', {DIM}, 1], expected (N, {DIM})"),
        ({"out_rank": 1}, {}, f"output 'question_vectors' has shape ['batch'], expected (N, {DIM})"),
        ({}, {"feature_output": "features", "feature_dim": DIM},
         "has no feature output 'features' (outputs: ['question_vectors'])"),
        ({"features_rank": 2}, {"feature_output": "features", "feature_dim": DIM + 1},
         f"feature output 'features' has shape ['batch', {DIM}], router.json says feature_dim {DIM + 1}"),
        ({"features_rank": 2}, {"feature_output": "features", "feature_dim": DIM - 1},
         f"feature output 'features' has shape ['batch', {DIM}], router.json says feature_dim {DIM - 1}"),
        ({"features_rank": 3}, {"feature_output": "features", "feature_dim": DIM},
         f"feature output 'features' has shape ['batch', {DIM}, 1], router.json says feature_dim {DIM}"),
        ({"features_rank": 1}, {"feature_output": "features", "feature_dim": DIM},
         f"feature output 'features' has shape ['batch'], router.json says feature_dim {DIM}"),
    ],
)
def test_a_graph_that_disagrees_with_router_json_is_refused_by_name(
    tokenizer: Path, tmp_path: Path, graph: dict[str, Any], spec: dict[str, Any], message: str
) -> None:
    path = _graph(tmp_path / "encoder.onnx", **graph)
    with pytest.raises(JeirtError) as raised:
        _encoder(tokenizer, path, _spec(**spec))
    assert str(raised.value) == f"{path}: {message}"


def test_symbolic_widths_are_taken_on_trust_and_checked_on_the_vectors(tokenizer: Path, tmp_path: Path) -> None:
    path = _graph(tmp_path / "encoder.onnx", features_rank=2, symbolic=True)
    with pytest.raises(JeirtError, match="feature output 'features' has shape .*, router.json says feature_dim 0$"):
        _encoder(tokenizer, path, _spec(feature_output="features", feature_dim=0))
    encoder = _encoder(tokenizer, path, _spec(feature_output="features", feature_dim=DIM))
    assert not any(isinstance(node.shape[1], int) for node in encoder.session.get_outputs())
    vectors, features = encoder.encode_with_features(TEXTS)
    assert features is not None and np.array_equal(features, 2 * vectors)
    for dim in (DIM - 1, DIM + 1):
        with pytest.raises(JeirtError, match=re.escape(f"encoder returned shape (4, {DIM}), expected (4, {dim})")):
            _encoder(tokenizer, path, dim=dim).encode(TEXTS, batch_size=8)


def _by_hand(tokenizer: Path, texts: list[str], table: np.ndarray) -> np.ndarray:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer))
    return np.stack([table[tok.encode(text).ids].mean(axis=0) for text in texts])


@pytest.mark.parametrize("batch_size", [None, 1, 3, 64])
def test_vectors_come_back_in_input_order_at_any_batch_size(
    tokenizer: Path, tmp_path: Path, batch_size: Optional[int]
) -> None:
    table = np.random.default_rng(0).normal(size=(len(WORDS) + 2, DIM)).astype(np.float32)
    encoder = _encoder(tokenizer, _graph(tmp_path / "encoder.onnx", table=table))
    vectors = encoder.encode(TEXTS, batch_size=batch_size)
    np.testing.assert_allclose(vectors, _by_hand(tokenizer, TEXTS, table), rtol=1e-6, atol=1e-6)
    assert vectors.dtype == np.float32 and vectors.shape == (len(TEXTS), DIM)
    vectors, features = encoder.encode_with_features(TEXTS)  # a graph without features gives none
    assert features is None


def test_a_router_one_wide_with_features_one_wide_loads(tokenizer: Path, tmp_path: Path) -> None:
    path = _graph(tmp_path / "encoder.onnx", features_rank=2, table=np.ones((len(WORDS) + 2, 1), np.float32))
    vectors, features = _encoder(tokenizer, path, _spec(feature_output="features", feature_dim=1), dim=1
                                 ).encode_with_features(TEXTS)
    assert vectors.shape == (len(TEXTS), 1) and features is not None and np.array_equal(features, 2 * vectors)


def test_the_routers_own_batch_size_is_used_unless_one_is_given(tokenizer: Path, tmp_path: Path) -> None:
    path = _graph(tmp_path / "encoder.onnx")
    assert _encoder(tokenizer, path).batch_size == DEFAULT_BATCH_SIZE
    assert _encoder(tokenizer, path, _spec(batch_size=2)).batch_size == 2
    with pytest.raises(JeirtError, match="batch_size must be"):
        _encoder(tokenizer, path).encode(TEXTS, batch_size=0)


def test_no_texts_give_empty_arrays_of_the_right_widths(tokenizer: Path, tmp_path: Path) -> None:
    path = _graph(tmp_path / "encoder.onnx", features_rank=2)
    vectors, features = _encoder(tokenizer, path, _spec(feature_output="features", feature_dim=DIM)
                                 ).encode_with_features([])
    assert vectors.shape == (0, DIM) and features is not None and features.shape == (0, DIM)


def test_a_token_outside_the_graphs_table_names_the_texts_of_its_batch(tokenizer: Path, tmp_path: Path) -> None:
    table = np.ones((5, DIM), np.float32)  # ids 0..4 only: "[PAD]", "[UNK]", "what", "is", "the"
    encoder = _encoder(tokenizer, _graph(tmp_path / "encoder.onnx", table=table))
    texts = ["what is", "the what", "what is the law", "is"]
    with pytest.raises(JeirtError, match=re.escape("the encoder failed on texts [2]: ")):
        encoder.encode(texts, batch_size=1)


def test_a_failing_batch_names_at_most_five_of_its_texts(tokenizer: Path, tmp_path: Path) -> None:
    encoder = _encoder(tokenizer, _graph(tmp_path / "encoder.onnx", table=np.ones((5, DIM), np.float32)))
    texts = ["what", "is", "the", "what is", "is the", "the law", "what"]
    with pytest.raises(JeirtError, match=re.escape("the encoder failed on texts [0, 1, 2, 3, 4]: ")):
        encoder.encode(texts, batch_size=8)


class _RefusingTokenizer:
    """Stands in for a tokenizer that cannot encode one text: the batch call fails without saying which."""

    def __init__(self, refused: str) -> None:
        self.refused = refused

    def encode_batch(self, texts: list[str]) -> list[Any]:
        raise TypeError("cannot encode the batch")

    def encode(self, text: str) -> Any:
        if text == self.refused:
            raise TypeError("cannot encode this one")
        return None


def test_a_text_the_tokenizer_refuses_is_named_by_its_index(tokenizer: Path, tmp_path: Path) -> None:
    encoder = _encoder(tokenizer, _graph(tmp_path / "encoder.onnx"))
    encoder.tokenizer = _RefusingTokenizer("court")
    with pytest.raises(JeirtError) as raised:
        encoder.encode(["law", "market", "court", "price"])
    assert str(raised.value) == "text 2: the tokenizer cannot encode it (cannot encode this one)"
    encoder.tokenizer = _RefusingTokenizer("none of them")  # the batch fails, yet every text alone passes
    with pytest.raises(JeirtError) as raised:
        encoder.encode(["law", "market"])
    assert str(raised.value) == "the tokenizer failed on this batch of texts (cannot encode the batch)"


def test_a_vector_that_is_not_finite_names_its_text(tokenizer: Path, tmp_path: Path) -> None:
    table = np.ones((len(WORDS) + 2, DIM), np.float32)
    table[WORDS.index("law") + 2, 1] = np.inf
    encoder = _encoder(tokenizer, _graph(tmp_path / "encoder.onnx", table=table))
    with pytest.raises(JeirtError, match="encoder produced NaN or inf for text 2$"):
        encoder.encode(["what", "energy", "a law", "law"])


def test_a_tokenizer_file_that_is_not_one_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "tokenizer.json"
    bad.write_text('{"version": "1.0"}')
    with pytest.raises(JeirtError, match=re.escape(f"{bad}: not a readable tokenizers file (")):
        _encoder(bad, _graph(tmp_path / "encoder.onnx"))


def test_a_lone_surrogate_is_named_by_text_and_character(tokenizer: Path, tmp_path: Path) -> None:
    encoder = _encoder(tokenizer, _graph(tmp_path / "encoder.onnx"))
    with pytest.raises(JeirtError) as raised:
        encoder.encode(["law", "ab\udc80c"])
    assert str(raised.value) == ("text 1 is not valid Unicode: a lone surrogate '\\udc80' at character 2 (text "
                                 "decoded with errors='surrogateescape' or surrogatepass?)")


def test_the_pad_id_is_the_tokenizers_own_then_a_pad_token_then_0(tmp_path: Path) -> None:
    from tokenizers import Tokenizer, models

    def tok(vocab: dict[str, int]) -> Tokenizer:
        return Tokenizer(models.WordLevel(vocab=vocab, unk_token="x"))

    padded = tok({"x": 0, "[PAD]": 1, "y": 2})
    padded.enable_padding(pad_id=2, pad_token="y")
    assert _pad_id(padded) == 2
    assert _pad_id(tok({"x": 0, "y": 1, "[PAD]": 2})) == 2
    assert _pad_id(tok({"x": 0, "<pad>": 3, "y": 1, "z": 2})) == 3
    assert _pad_id(tok({"x": 0, "y": 1})) == 0
