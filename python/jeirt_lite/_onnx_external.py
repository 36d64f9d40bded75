"""encoder.onnx tensors kept in another file of the router folder (ONNX external data), checked before ONNX
Runtime is allowed to read them.

A static router's encoder.onnx stores no copy of its token table and adapter: each of those initializers points
(ONNX external data: location, offset, length) at the tensor of the same name inside static_encoder.safetensors,
the file the Rust fast path reads, so the folder holds them once. ONNX Runtime reads such bytes without looking
at what lies there, so a rewritten static_encoder.safetensors whose tensors moved would be read as the wrong
numbers while both files still match their sha256 in router.json. Before a graph is used, every external
reference in it must therefore name the static encoder file by its plain name (no other file, no directory, no
`..`, no absolute path: nothing outside the router folder is ever read), and its offset, length, dtype and shape
must be exactly those of the same-named tensor in that file's safetensors header; anything else is a `JeirtError`
naming the tensor and the mismatch. The graph is read with a small protobuf reader (the `onnx` package is not a
run-time dependency) that visits every place an ONNX tensor can sit: initializers, sparse initializers, node
attributes, subgraphs, functions and training graphs.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ._errors import JeirtError

# ONNX TensorProto.DataType codes of the safetensors dtypes a table or adapter may have.
SAFETENSORS_TO_ONNX = {"F32": 1, "U8": 2, "I8": 3, "I32": 6, "I64": 7, "F16": 10, "F64": 11, "BF16": 16}
_ITEM_BYTES = {"F32": 4, "U8": 1, "I8": 1, "I32": 4, "I64": 8, "F16": 2, "F64": 8, "BF16": 2}
EXTERNAL_KEYS = ("location", "offset", "length")
_MAX_HEADER = 100 * 1024 * 1024  # safetensors' own limit on the JSON header

# Message types of onnx.proto and, for each, the fields that hold messages worth visiting.
_TENSOR, _SPARSE, _GRAPH, _NODE, _ATTRIBUTE, _FUNCTION, _TRAINING = (
    "tensor", "sparse", "graph", "node", "attribute", "function", "training"
)
_CHILDREN: dict[str, dict[int, str]] = {
    "model": {7: _GRAPH, 20: _TRAINING, 25: _FUNCTION},
    _GRAPH: {1: _NODE, 5: _TENSOR, 15: _SPARSE},
    _NODE: {5: _ATTRIBUTE},
    _ATTRIBUTE: {5: _TENSOR, 6: _GRAPH, 10: _TENSOR, 11: _GRAPH, 22: _SPARSE, 23: _SPARSE},
    _FUNCTION: {7: _NODE},
    _TRAINING: {1: _GRAPH, 2: _GRAPH},
    _SPARSE: {1: _TENSOR, 2: _TENSOR},
}
_MAX_DEPTH = 64


class _Malformed(Exception):
    pass


@dataclass(frozen=True)
class ExternalTensor:
    """One tensor of the graph whose bytes live in another file."""

    name: str
    data_type: int
    dims: tuple[int, ...]
    entries: dict[str, str]  # external_data key -> value, as stored


def _varint(buf: memoryview, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise _Malformed("a varint runs past its message")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


def _fields(buf: memoryview) -> Iterator[tuple[int, int, int, memoryview]]:
    """(field number, wire type, integer value, bytes value) of each field of one protobuf message; the integer is
    that of a varint field, the bytes those of a length-delimited one (fixed-width fields are skipped over)."""
    pos, end = 0, len(buf)
    while pos < end:
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        integer, data = 0, buf[0:0]
        if wire == 0:
            integer, pos = _varint(buf, pos)
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        elif wire == 2:
            size, pos = _varint(buf, pos)
            data, pos = buf[pos : pos + size], pos + size
        else:
            raise _Malformed(f"wire type {wire} of field {number}")
        if pos > end or number == 0:
            raise _Malformed(f"field {number} runs past its message")
        yield number, wire, integer, data


def _tensor(buf: memoryview) -> Optional[ExternalTensor]:
    """The tensor's external reference, or None when it holds its own data."""
    name, data_type, location = "", 0, 0
    dims: list[int] = []
    entries: dict[str, str] = {}
    for number, wire, integer, data in _fields(buf):
        if number == 1 and wire == 0:
            dims.append(integer)
        elif number == 1 and wire == 2:
            pos = 0
            while pos < len(data):
                dim, pos = _varint(data, pos)
                dims.append(dim)
        elif number == 2 and wire == 0:
            data_type = integer
        elif number == 8 and wire == 2:
            name = _text(data)
        elif number == 13 and wire == 2:
            pair = {n: _text(d) for n, w, _, d in _fields(data) if w == 2}
            key = pair.get(1, "")
            if key in entries:  # readers disagree on which of two values wins; accept neither
                raise _Malformed(f"tensor {name!r} gives external data key {key!r} twice")
            entries[key] = pair.get(2, "")
        elif number == 14 and wire == 0:
            location = integer
    if location == 0 and not entries:
        return None
    return ExternalTensor(name, data_type, tuple(dims), entries)


def _text(data: memoryview) -> str:
    return bytes(data).decode("utf-8", "replace")


def external_tensors(onnx_path: Path) -> list[ExternalTensor]:
    """Every tensor of an ONNX file that keeps its data in another file (JeirtError if it is not protobuf)."""
    try:
        content = onnx_path.read_bytes()  # ONNX Runtime reads the whole graph too, right after this
        if not content:
            raise JeirtError(f"{onnx_path}: empty; not an ONNX graph")
        found: list[ExternalTensor] = []
        _visit(memoryview(content), "model", found, 0)
        return found
    except OSError as err:
        raise JeirtError(f"{onnx_path}: not readable ({err})") from err
    except (_Malformed, RecursionError) as err:
        raise JeirtError(f"{onnx_path}: not a readable ONNX graph ({err})") from err


def _visit(buf: memoryview, kind: str, found: list[ExternalTensor], depth: int) -> None:
    if depth > _MAX_DEPTH:
        raise _Malformed("messages nested too deep")
    children = _CHILDREN[kind]
    for number, wire, _, data in _fields(buf):
        child = children.get(number)
        if child is None or wire != 2:
            continue
        if child == _TENSOR:
            tensor = _tensor(data)
            if tensor is not None:
                found.append(tensor)
        else:
            _visit(data, child, found, depth + 1)


def _header_bytes(path: Path) -> tuple[int, int, bytes]:
    """(file size, header length, header bytes) of a safetensors file, its length checked against the file."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as handle:
            prefix = handle.read(8)
            if len(prefix) < 8:
                raise JeirtError(f"{path}: truncated ({size} bytes; not a safetensors file)")
            (header_len,) = struct.unpack("<Q", prefix)
            if header_len > min(_MAX_HEADER, size - 8):
                raise JeirtError(f"{path}: truncated or not safetensors (header of {header_len} bytes, file {size})")
            return size, header_len, handle.read(header_len)
    except OSError as err:
        raise JeirtError(f"{path}: not readable ({err})") from err


def safetensors_layout(path: Path) -> dict[str, tuple[str, tuple[int, ...], int, int]]:
    """name -> (dtype, shape, first byte, end byte) of each tensor, the bytes counted from the file's start."""
    size, header_len, raw = _header_bytes(path)
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise JeirtError(f"{path}: its safetensors header is not readable JSON ({err})") from err
    if not isinstance(header, dict):
        raise JeirtError(f"{path}: its safetensors header is not a JSON object")
    start, layout = 8 + header_len, {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        try:
            begin, end = (int(x) for x in entry["data_offsets"])
            dtype, shape = str(entry["dtype"]), tuple(int(x) for x in entry["shape"])
        except (TypeError, KeyError, ValueError) as err:
            raise JeirtError(f"{path}: header entry {name!r} is malformed ({err})") from err
        if not 0 <= begin <= end or start + end > size:
            raise JeirtError(
                f"{path}: truncated or corrupt: tensor {name!r} would end at byte {start + end}, the file has {size}"
            )
        if dtype in _ITEM_BYTES and end - begin != _ITEM_BYTES[dtype] * math.prod(shape):
            raise JeirtError(f"{path}: corrupt: tensor {name!r} spans {end - begin} bytes, not {dtype} {list(shape)}")
        layout[name] = (dtype, shape, start + begin, start + end)
    return layout


def check_external_data(onnx_path: Path, static_path: Optional[Path]) -> int:
    """Refuse any external reference of `onnx_path` other than an exact view of a tensor of `static_path` (the
    router's static_encoder.safetensors, None when it has none); returns how many references it checked."""
    tensors = external_tensors(onnx_path)
    if not tensors:
        return 0
    if static_path is None:
        raise JeirtError(
            f"{onnx_path}: tensor {tensors[0].name!r} keeps its data in {tensors[0].entries.get('location')!r}, "
            "but router.json lists no static encoder file; a graph may read only that file's tensors"
        )
    layout = safetensors_layout(static_path)
    for tensor in tensors:
        _check_one(onnx_path, static_path, tensor, layout)
    return len(tensors)


def _check_one(
    onnx_path: Path, static_path: Path, tensor: ExternalTensor, layout: dict[str, tuple[str, tuple[int, ...], int, int]]
) -> None:
    where = f"{onnx_path}: tensor {tensor.name!r}"
    unknown = sorted(set(tensor.entries) - set(EXTERNAL_KEYS))
    if unknown or any(key not in tensor.entries for key in EXTERNAL_KEYS):
        raise JeirtError(f"{where}: external data must give exactly {list(EXTERNAL_KEYS)}, got {sorted(tensor.entries)}")
    location = tensor.entries["location"]
    if location != static_path.name:
        raise JeirtError(
            f"{where}: reads its data from {location!r}; only {static_path.name!r} in the router folder is allowed"
        )
    if tensor.name not in layout:
        raise JeirtError(f"{where}: {static_path.name} holds no tensor of that name (it holds {sorted(layout)})")
    dtype, shape, begin, end = layout[tensor.name]
    # Plain ASCII digits only: Python's int() also takes "1_0", " 10" or "+10", which ONNX Runtime reads otherwise.
    if not all(tensor.entries[key].isascii() and tensor.entries[key].isdigit() for key in ("offset", "length")):
        raise JeirtError(f"{where}: external offset/length must be plain decimal numbers, got {tensor.entries}")
    offset, length = int(tensor.entries["offset"]), int(tensor.entries["length"])
    if SAFETENSORS_TO_ONNX.get(dtype) != tensor.data_type:
        raise JeirtError(
            f"{where}: is ONNX data type {tensor.data_type}, but {static_path.name} stores it as {dtype}; the two "
            "files do not belong together"
        )
    if shape != tensor.dims:
        raise JeirtError(
            f"{where}: has shape {list(tensor.dims)}, but {static_path.name} stores it as {list(shape)}; the two "
            "files do not belong together"
        )
    if (offset, length) != (begin, end - begin):
        raise JeirtError(
            f"{where}: reads bytes {offset}..{offset + length} of {static_path.name}, but the tensor lies at "
            f"{begin}..{end} there (the file was rewritten without its graph); the two files do not belong "
            "together: rewrite both with python -m jeirt_lite_training.add_static_encoder ROUTER_FOLDER"
        )
