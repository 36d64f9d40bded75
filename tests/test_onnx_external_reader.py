"""The two small readers behind the external-data check, on files built here: the protobuf walk that finds every
external tensor of an ONNX graph (against graphs the `onnx` package writes, and against messages written byte by
byte for what it never writes), and the safetensors header reader (against files `safetensors` writes, and
against headers written by hand)."""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

import numpy as np
import pytest
from jeirt_lite import JeirtError
from jeirt_lite._onnx_external import (
    _ITEM_BYTES,
    _MAX_DEPTH,
    SAFETENSORS_TO_ONNX,
    ExternalTensor,
    check_external_data,
    external_tensors,
    safetensors_layout,
)

onnx = pytest.importorskip("onnx")
from onnx import TensorProto  # noqa: E402

# Field numbers of onnx.proto: ModelProto.graph, GraphProto.node, NodeProto.attribute, AttributeProto.g,
# GraphProto.initializer.
MODEL_GRAPH, GRAPH_NODE, NODE_ATTRIBUTE, ATTRIBUTE_GRAPH, GRAPH_INITIALIZER = 7, 1, 5, 6, 5


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _integer(number: int, value: int) -> bytes:
    """A varint field (wire type 0)."""
    return _varint(number << 3) + _varint(value)


def _external(name: str, location: str = "static_encoder.safetensors") -> TensorProto:
    tensor = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=[2, 3], data_location=TensorProto.EXTERNAL)
    for key, value in (("location", location), ("offset", "0"), ("length", "24")):
        tensor.external_data.add(key=key, value=value)
    return tensor


def _write(path: Path, content: bytes) -> Path:
    path.write_bytes(content)
    return path


def _graph_with_every_place(name: str) -> onnx.GraphProto:
    """A graph holding an external tensor in each place a graph can: initializer, sparse initializer (values and
    indices), and a node's attribute as a tensor, tensors, sparse tensor(s) and a subgraph (and subgraphs)."""
    graph = onnx.GraphProto(name=name)
    graph.initializer.append(_external(f"{name}.initializer"))
    graph.sparse_initializer.add(values=_external(f"{name}.sparse.values"), indices=_external(f"{name}.sparse.indices"))
    node = graph.node.add(op_type="Custom")
    node.attribute.add(name="t", t=_external(f"{name}.attribute.t"))
    node.attribute.add(name="ts").tensors.append(_external(f"{name}.attribute.tensors"))
    node.attribute.add(name="s", sparse_tensor=onnx.SparseTensorProto(values=_external(f"{name}.attribute.sparse")))
    node.attribute.add(name="ss").sparse_tensors.add(values=_external(f"{name}.attribute.sparse_tensors"))
    inner = onnx.GraphProto(name="g")
    inner.initializer.append(_external(f"{name}.attribute.g"))
    node.attribute.add(name="g", g=inner)
    several = onnx.GraphProto(name="gs")
    several.initializer.append(_external(f"{name}.attribute.graphs"))
    node.attribute.add(name="gs").graphs.append(several)
    return graph


def test_every_place_an_onnx_tensor_can_sit_is_visited(tmp_path: Path) -> None:
    model = onnx.ModelProto(graph=_graph_with_every_place("main"))
    function = model.functions.add(name="f", domain="custom")
    function.node.add(op_type="Constant").attribute.add(name="value", t=_external("function.node"))
    model.training_info.add(
        initialization=_graph_with_every_place("training.init"), algorithm=_graph_with_every_place("training.algo")
    )
    found = external_tensors(_write(tmp_path / "m.onnx", model.SerializeToString()))
    names = [t.name for t in found]
    every_place = [
        "initializer", "sparse.values", "sparse.indices", "attribute.t", "attribute.tensors", "attribute.sparse",
        "attribute.sparse_tensors", "attribute.g", "attribute.graphs",
    ]
    want = [f"{graph}.{place}" for graph in ("main", "training.init", "training.algo") for place in every_place]
    assert sorted(names) == sorted(want + ["function.node"])
    assert all(t.entries == {"location": "static_encoder.safetensors", "offset": "0", "length": "24"} for t in found)
    assert all(t.dims == (2, 3) and t.data_type == TensorProto.FLOAT for t in found)


def test_a_tensor_holding_its_own_data_is_not_external(tmp_path: Path) -> None:
    graph = onnx.GraphProto(name="g")
    graph.initializer.append(onnx.numpy_helper.from_array(np.ones((2, 2), np.float32), "inline"))
    path = _write(tmp_path / "m.onnx", onnx.ModelProto(graph=graph).SerializeToString())
    assert external_tensors(path) == []
    assert check_external_data(path, None) == 0  # nothing to check, and no static file needed


def test_a_tensor_marked_external_without_entries_is_still_reported(tmp_path: Path) -> None:
    tensor = TensorProto(name="bare", data_type=TensorProto.FLOAT, dims=[1], data_location=TensorProto.EXTERNAL)
    graph = onnx.GraphProto(name="g", initializer=[tensor])
    found = external_tensors(_write(tmp_path / "m.onnx", onnx.ModelProto(graph=graph).SerializeToString()))
    assert found == [ExternalTensor("bare", TensorProto.FLOAT, (1,), {})]
    with pytest.raises(JeirtError, match=r"tensor 'bare': external data must give exactly"):
        check_external_data(tmp_path / "m.onnx", _safetensors(tmp_path / "s.safetensors", bare=np.zeros(1, np.float32)))


def _tensor_bytes(*fields: bytes) -> bytes:
    return _field(MODEL_GRAPH, _field(GRAPH_INITIALIZER, b"".join(fields)))


ENTRY = _field(13, _field(1, b"location") + _field(2, b"static_encoder.safetensors"))


def test_packed_dims_fixed_width_fields_and_other_strings_are_read_as_protobuf_has_them(tmp_path: Path) -> None:
    """What `onnx` does not write but another writer may: dims packed into one field (127 is the largest one-byte
    varint, 300 takes two), 64- and 32-bit fields the reader must step over by their width, a string_data field
    (6) beside the name (8), and the tensor's own fields again with a wire type they never have, which are
    skipped."""
    content = _tensor_bytes(
        _field(1, _varint(3) + _varint(127) + _varint(300)),
        _integer(2, TensorProto.FLOAT16),
        _varint(98 << 3 | 1) + b"\xff" * 8,
        _varint(99 << 3 | 5) + b"\xff" * 4,
        _field(8, b"table"),
        _field(6, b"not a name"),
        ENTRY,
        _integer(14, TensorProto.EXTERNAL),
        _integer(97, 2**64 - 1),  # ten varint bytes, as protobuf writes a negative int64
        _field(16, _field(1, b"not an entry")),
        *(_varint(number << 3 | 5) + bytes(4) for number in (2, 8, 13, 14)),
        *(_integer(number, 0) for number in (8, 13)),
    )
    found = external_tensors(_write(tmp_path / "m.onnx", content))
    want = ExternalTensor("table", TensorProto.FLOAT16, (3, 127, 300), {"location": "static_encoder.safetensors"})
    assert found == [want]


def test_int32_data_as_plain_varints_is_not_a_data_location(tmp_path: Path) -> None:
    """A parser must read a repeated number unpacked too (one field per value) though onnx writes it packed."""
    content = _tensor_bytes(_field(8, b"ints"), _integer(2, TensorProto.INT32), _integer(1, 2), _integer(5, 1) * 2)
    assert external_tensors(_write(tmp_path / "m.onnx", content)) == []


def test_external_data_location_alone_marks_a_tensor(tmp_path: Path) -> None:
    content = _tensor_bytes(_field(8, b"t"), _integer(14, TensorProto.EXTERNAL), _varint(14 << 3 | 5) + bytes(4))
    assert external_tensors(_write(tmp_path / "m.onnx", content)) == [ExternalTensor("t", 0, (), {})]


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"\x80", "a varint runs past its message"),
        (b"\xff" * 11, "a varint runs past its message"),
        (_varint(7 << 3 | 3), "wire type 3 of field 7"),
        (_varint(0 << 3 | 2) + _varint(0), "field 0 runs past its message"),
        (_varint(7 << 3 | 2) + _varint(5) + b"abc", "field 7 runs past its message"),
        (_varint(9 << 3 | 1) + b"1234", "field 9 runs past its message"),
    ],
)
def test_bytes_that_are_not_protobuf_are_refused_by_name(tmp_path: Path, content: bytes, problem: str) -> None:
    path = _write(tmp_path / "m.onnx", content)
    with pytest.raises(JeirtError, match=f"m.onnx: not a readable ONNX graph \\({problem}"):
        external_tensors(path)


def _nested(graphs: int, node_in_the_last: bool = False) -> bytes:
    """A model whose graph holds a node whose attribute holds a graph, and so on: `graphs` graphs deep (the last
    one holding an empty node too, one level further down, with `node_in_the_last`)."""
    message = _field(GRAPH_INITIALIZER, _field(8, b"deep") + ENTRY)
    if node_in_the_last:
        message += _field(GRAPH_NODE, b"")
    for _ in range(graphs - 1):
        message = _field(GRAPH_NODE, _field(NODE_ATTRIBUTE, _field(ATTRIBUTE_GRAPH, message)))
    return _field(MODEL_GRAPH, message)


def test_nesting_is_followed_to_the_limit_and_refused_past_it(tmp_path: Path) -> None:
    # The model is level 0, its graph 1, and each further graph three levels (node, attribute, graph) below.
    deepest = (_MAX_DEPTH - 1) // 3 + 1
    assert 1 + 3 * (deepest - 1) == _MAX_DEPTH
    assert [t.name for t in external_tensors(_write(tmp_path / "ok.onnx", _nested(deepest)))] == ["deep"]
    for too_deep in (_nested(deepest, node_in_the_last=True), _nested(deepest + 1)):
        with pytest.raises(JeirtError, match=r"not a readable ONNX graph \(messages nested too deep\)"):
            external_tensors(_write(tmp_path / "deep.onnx", too_deep))


def test_an_empty_or_unreadable_graph_is_refused(tmp_path: Path) -> None:
    with pytest.raises(JeirtError, match=r"empty.onnx: empty; not an ONNX graph"):
        external_tensors(_write(tmp_path / "empty.onnx", b""))
    with pytest.raises(JeirtError, match=r"missing.onnx: not readable"):
        external_tensors(tmp_path / "missing.onnx")


def _safetensors(path: Path, **tensors: np.ndarray) -> Path:
    from safetensors.numpy import save

    return _write(path, save(tensors))


def _hand_written(header: dict, data: bytes, header_length: int = 0) -> bytes:
    text = json.dumps(header).encode()
    text += b" " * max(0, header_length - len(text))
    return struct.pack("<Q", len(text)) + text + data


def test_the_layout_gives_each_tensors_dtype_shape_and_bytes_from_the_files_start(tmp_path: Path) -> None:
    path = _safetensors(
        tmp_path / "s.safetensors", a=np.arange(6, dtype=np.int8).reshape(2, 3), B=np.zeros(5, np.float16)
    )
    header_length = struct.unpack("<Q", path.read_bytes()[:8])[0]
    start = 8 + header_length
    assert safetensors_layout(path) == {
        "B": ("F16", (5,), start, start + 10),  # safetensors writes the wider dtype first
        "a": ("I8", (2, 3), start + 10, start + 16),
    }


def test_the_byte_widths_and_onnx_codes_are_those_of_numpy_and_onnx() -> None:
    import ml_dtypes  # installed with onnx

    numpy_types = {"F32": np.float32, "U8": np.uint8, "I8": np.int8, "I32": np.int32, "I64": np.int64,
                   "F16": np.float16, "F64": np.float64, "BF16": ml_dtypes.bfloat16}
    assert _ITEM_BYTES == {name: np.dtype(kind).itemsize for name, kind in numpy_types.items()}
    onnx_names = {"F32": "FLOAT", "U8": "UINT8", "I8": "INT8", "I32": "INT32", "I64": "INT64", "F16": "FLOAT16",
                  "F64": "DOUBLE", "BF16": "BFLOAT16"}
    assert SAFETENSORS_TO_ONNX == {name: TensorProto.DataType.Value(code) for name, code in onnx_names.items()}


def test_a_header_that_fills_the_file_and_a_long_header_are_read(tmp_path: Path) -> None:
    only_header = _write(tmp_path / "empty.safetensors", _hand_written({}, b""))
    assert safetensors_layout(only_header) == {}
    long_header = {"__metadata__": {"note": "x" * 200_000}, "a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]}}
    path = _write(tmp_path / "long.safetensors", _hand_written(long_header, b"abcd"))
    assert safetensors_layout(path)["a"][1:] == ((4,), path.stat().st_size - 4, path.stat().st_size)


@pytest.mark.parametrize(("header_length", "size"), [(100, 50), (41, 48)])
def test_a_header_longer_than_the_file_is_refused(tmp_path: Path, header_length: int, size: int) -> None:
    path = _write(tmp_path / "s.safetensors", struct.pack("<Q", header_length) + b"{}" + b" " * (size - 10))
    with pytest.raises(JeirtError) as refused:
        safetensors_layout(path)
    assert str(refused.value) == f"{path}: truncated or not safetensors (header of {header_length} bytes, file {size})"


@pytest.mark.parametrize("size", [0, 3, 7])
def test_a_file_shorter_than_a_header_length_is_refused_as_truncated(tmp_path: Path, size: int) -> None:
    path = _write(tmp_path / "s.safetensors", bytes(size))
    with pytest.raises(JeirtError) as refused:
        safetensors_layout(path)
    assert str(refused.value) == f"{path}: truncated ({size} bytes; not a safetensors file)"


def test_a_header_over_safetensors_own_limit_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "huge.safetensors"
    with open(path, "wb") as handle:  # a sparse file: 101 MiB long, a few bytes on disk
        handle.write(struct.pack("<Q", 100 * 1024 * 1024 + 1) + b"{")
        handle.truncate(101 * 1024 * 1024)
    with pytest.raises(JeirtError) as refused:
        safetensors_layout(path)
    assert str(refused.value).startswith(f"{path}: truncated or not safetensors (header of 104857601 bytes")


def test_a_header_at_safetensors_own_limit_is_read(tmp_path: Path) -> None:
    path = tmp_path / "limit.safetensors"
    with open(path, "wb") as handle:  # sparse again: a header of exactly 100 MiB, which is not JSON
        handle.write(struct.pack("<Q", 100 * 1024 * 1024) + b"{")
        handle.truncate(8 + 100 * 1024 * 1024)
    with pytest.raises(JeirtError, match=r"its safetensors header is not readable JSON"):
        safetensors_layout(path)


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({"dtype": "U8", "shape": [2], "data_offsets": ["zero", 2]}, "invalid literal"),
        ({"shape": [2], "data_offsets": [0, 2]}, "'dtype'"),
        ({"dtype": "U8", "shape": 2, "data_offsets": [0, 2]}, "not iterable"),
    ],
)
def test_a_malformed_header_entry_is_refused_by_name(tmp_path: Path, entry: dict, problem: str) -> None:
    path = _write(tmp_path / "s.safetensors", _hand_written({"a": entry}, b"ab"))
    with pytest.raises(JeirtError, match=rf"header entry 'a' is malformed \(.*{problem}"):
        safetensors_layout(path)


@pytest.mark.parametrize(("offsets", "shape"), [([4, 2], [0]), ([-1, 1], [2])])
def test_a_tensor_ending_before_it_begins_or_before_the_data_is_refused(
    tmp_path: Path, offsets: list[int], shape: list[int]
) -> None:
    header = {"a": {"dtype": "U8", "shape": shape, "data_offsets": offsets}}
    path = _write(tmp_path / "s.safetensors", _hand_written(header, bytes(4)))
    with pytest.raises(JeirtError, match=r"truncated or corrupt: tensor 'a' would end at byte"):
        safetensors_layout(path)


def test_a_tensor_past_the_files_end_is_refused_by_its_last_byte(tmp_path: Path) -> None:
    # The data starts at byte 128 and the tensor claims 128 bytes: it would end at byte 256, the file stops at 255.
    header = {"a": {"dtype": "U8", "shape": [128], "data_offsets": [0, 128]}}
    content = _hand_written(header, bytes(127), header_length=120)
    with pytest.raises(JeirtError, match=r"tensor 'a' would end at byte 256, the file has 255"):
        safetensors_layout(_write(tmp_path / "s.safetensors", content))


@pytest.mark.parametrize("end", [8, 13])
def test_a_tensor_whose_bytes_do_not_match_its_shape_is_refused(tmp_path: Path, end: int) -> None:
    header = {"a": {"dtype": "U8", "shape": [10], "data_offsets": [2, end]}}
    content = _hand_written(header, bytes(16))
    with pytest.raises(JeirtError, match=rf"corrupt: tensor 'a' spans {end - 2} bytes, not U8 \[10\]"):
        safetensors_layout(_write(tmp_path / "s.safetensors", content))


def test_a_graph_without_its_static_file_names_its_first_tensor(tmp_path: Path) -> None:
    graph = onnx.GraphProto(name="g", initializer=[_external("first"), _external("second", location="other")])
    path = _write(tmp_path / "m.onnx", onnx.ModelProto(graph=graph).SerializeToString())
    with pytest.raises(JeirtError, match=r"tensor 'first' keeps its data in 'static_encoder.safetensors', but"):
        check_external_data(path, None)


def test_a_reference_to_other_bytes_names_both_ranges(tmp_path: Path) -> None:
    static = _safetensors(tmp_path / "static_encoder.safetensors", table=np.zeros((2, 3), np.float32))
    begin = safetensors_layout(static)["table"][2]
    tensor = _external("table")
    tensor.external_data[1].value = str(begin + 4)
    graph = onnx.GraphProto(name="g", initializer=[tensor])
    path = _write(tmp_path / "m.onnx", onnx.ModelProto(graph=graph).SerializeToString())
    with pytest.raises(JeirtError, match=rf"reads bytes {begin + 4}\.\.{begin + 28} of static_encoder.safetensors, "
                       rf"but the tensor lies at {begin}\.\.{begin + 24} there"):
        check_external_data(path, static)
    graph.initializer[0].external_data[1].value = str(begin)  # the graph holds a copy of the tensor
    assert check_external_data(_write(path, onnx.ModelProto(graph=graph).SerializeToString()), static) == 1


@pytest.mark.parametrize("dims", [[2, 2], [1, 3], [2, 3, 1]])
def test_a_reference_of_another_shape_is_refused_by_its_shape(tmp_path: Path, dims: list[int]) -> None:
    static = _safetensors(tmp_path / "static_encoder.safetensors", table=np.zeros((2, 3), np.float32))
    tensor = _external("table")
    tensor.dims[:] = dims
    graph = onnx.GraphProto(name="g", initializer=[tensor])
    path = _write(tmp_path / "m.onnx", onnx.ModelProto(graph=graph).SerializeToString())
    message = re.escape(f"tensor 'table': has shape {dims}, but static_encoder.safetensors stores it as [2, 3]")
    with pytest.raises(JeirtError, match=message):
        check_external_data(path, static)


def test_a_reference_of_another_dtype_is_refused_by_its_dtype(tmp_path: Path) -> None:
    static = _safetensors(tmp_path / "static_encoder.safetensors", table=np.zeros((2, 3), np.float16))
    graph = onnx.GraphProto(name="g", initializer=[_external("table")])
    path = _write(tmp_path / "m.onnx", onnx.ModelProto(graph=graph).SerializeToString())
    with pytest.raises(JeirtError, match=r"tensor 'table': is ONNX data type 1, but static_encoder.safetensors stores "
                       r"it as F16"):
        check_external_data(path, static)
