"""Reading a router folder's files (jeirt_lite._artifact_files) on its own, at the edges a mutation round found
untested: a key given twice in router.json, metadata that holds one of the two binding keys or unreadable names,
the first row whose LLM differs, unreadable safetensors files, several missing tensors and tensors not float32."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest
from jeirt_lite import JeirtError
from jeirt_lite._artifact_files import (
    DIGEST_KEY,
    NAMES_KEY,
    check_binding,
    read_manifest_json,
    read_metadata,
    read_tensors,
)
from jeirt_lite._manifest import content_digest
from safetensors.numpy import save_file


def test_a_key_given_twice_is_named(tmp_path: Path) -> None:
    path = tmp_path / "router.json"
    path.write_text('{"format": "a", "llms": [], "format": "b"}', encoding="utf-8")
    with pytest.raises(JeirtError, match="the key 'format' appears twice in one object"):
        read_manifest_json(path)


def _binding(names: list[str], raw: Mapping[str, object]) -> dict[str, str]:
    return {NAMES_KEY: json.dumps(names), DIGEST_KEY: content_digest(raw)}


def test_metadata_must_hold_both_binding_keys(tmp_path: Path) -> None:
    raw = {"llms": ["a", "b"]}
    for key in (NAMES_KEY, DIGEST_KEY):
        metadata = _binding(["a", "b"], raw)
        del metadata[key]
        with pytest.raises(JeirtError, match="carries no LLM names or router.json digest"):
            check_binding(tmp_path / "router.json", raw, metadata, tmp_path / "llms.safetensors")
    check_binding(tmp_path / "router.json", raw, _binding(["a", "b"], raw), tmp_path / "llms.safetensors")


def test_names_that_are_not_json_are_unreadable(tmp_path: Path) -> None:
    raw = {"llms": ["a"]}
    metadata = {NAMES_KEY: "[not json", DIGEST_KEY: content_digest(raw)}
    with pytest.raises(JeirtError, match="the LLM names in its metadata are unreadable"):
        check_binding(tmp_path / "router.json", raw, metadata, tmp_path / "llms.safetensors")


@pytest.mark.parametrize(
    ("listed", "table", "row"),
    [(["a", "c"], ["b", "c"], 0), (["x", "a"], ["x", "b"], 1), (["x", "b"], ["x", "a"], 1)],
)
def test_the_first_row_whose_llm_differs_is_named(tmp_path: Path, listed: list[str], table: list[str], row: int) -> None:
    raw = {"llms": listed}
    with pytest.raises(JeirtError, match=rf"lists LLM {row} as '{listed[row]}', but row {row} of llms.safetensors "
                                         rf"belongs to '{table[row]}'"):
        check_binding(tmp_path / "router.json", raw, _binding(table, raw), tmp_path / "llms.safetensors")


def test_a_file_that_is_not_safetensors_is_named_by_both_readers(tmp_path: Path) -> None:
    path = tmp_path / "llms.safetensors"
    path.write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00not json")
    with pytest.raises(JeirtError, match="not a readable safetensors file"):
        read_metadata(path)
    with pytest.raises(JeirtError, match="not a readable safetensors file"):
        read_tensors(path, ["llm_vectors"])


def test_the_first_missing_tensor_is_named(tmp_path: Path) -> None:
    path = tmp_path / "t.safetensors"
    save_file({"kept": np.zeros(2, np.float32)}, str(path))
    with pytest.raises(JeirtError, match=r"has no tensor 'first' \(found \['kept'\]\)"):
        read_tensors(path, ["kept", "first", "second"])


@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.int32])
def test_tensors_must_be_float32(tmp_path: Path, dtype: type) -> None:
    path = tmp_path / "t.safetensors"
    save_file({"ok": np.zeros(2, np.float32), "bad": np.zeros(2, dtype)}, str(path), metadata={"k": "v"})
    with pytest.raises(JeirtError, match=f"bad must be float32, got {np.dtype(dtype)}"):
        read_tensors(path, ["ok", "bad"])
    tensors, metadata = read_tensors(path, ["ok"])
    assert list(tensors) == ["ok"] and metadata == {"k": "v"}
