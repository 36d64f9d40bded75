"""What save_artifact and load_artifact refuse, at each edge, and the exact words a user reads: the LLM table's
width, the reference directions, their alignment threshold and centre, and a file missing or changed."""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from jeirt_lite import JeirtError
from jeirt_lite.artifact import load_artifact, read_manifest, save_artifact, sha256_of
from tiny_router import copy_router, edit_and_reseal

DIM = 4


@pytest.fixture(scope="module")
def source(tiny_router_path: Path) -> Any:
    return load_artifact(tiny_router_path)


def _save(source: Any, out: Path, **kwargs: Any) -> Path:
    kwargs.setdefault("llm_names", ["x", "y"])
    kwargs.setdefault("llm_vectors", np.ones((len(kwargs["llm_names"]), DIM)))
    return save_artifact(out, tokenizer_json=source.tokenizer_path, encoder_onnx=source.encoder_path,
                         encoder=source.encoder, **kwargs)


def _refused(source: Any, tmp_path: Path, message: str, **kwargs: Any) -> None:
    with pytest.raises(JeirtError, match=message):
        _save(source, tmp_path / "out", **kwargs)
    assert os.listdir(tmp_path) == []  # nothing written, not even a staging folder


def test_a_table_one_wide_is_a_router_and_zero_wide_is_not(source: Any, tmp_path: Path) -> None:
    one = np.array([[0.5], [-0.5]], np.float32)
    _save(source, tmp_path / "one", llm_vectors=one)
    assert np.array_equal(load_artifact(tmp_path / "one").llm_vectors, one)
    with pytest.raises(JeirtError, match="LLM table has dimension 0"):
        _save(source, tmp_path / "zero", llm_vectors=np.ones((2, 0)))


@pytest.mark.parametrize("rows", [1, 3])
def test_a_table_whose_rows_are_not_the_names_says_both_counts(source: Any, tmp_path: Path, rows: int) -> None:
    _refused(source, tmp_path, re.escape(f"LLM table has {rows} rows but there are 2 LLM names"),
             llm_names=["a", "b"], llm_vectors=np.ones((rows, DIM)))


def test_a_table_of_three_dimensions_is_refused(source: Any, tmp_path: Path) -> None:
    _refused(source, tmp_path, re.escape("LLM table must be 2-D (K, d), got shape (2, 4, 1)"),
             llm_vectors=np.ones((2, DIM, 1)))


@pytest.mark.parametrize("missing", ["tokenizer_json", "encoder_onnx", "static_encoder"])
def test_a_file_to_copy_in_that_does_not_exist_is_named(source: Any, tmp_path: Path, missing: str) -> None:
    absent = tmp_path.parent / f"{tmp_path.name}-absent" / "file"
    paths = {"tokenizer_json": source.tokenizer_path, "encoder_onnx": source.encoder_path,
             "static_encoder": source.encoder_path, missing: absent}
    with pytest.raises(JeirtError, match=re.escape(f"cannot save, {absent} does not exist")):
        save_artifact(tmp_path / "out", llm_names=["x"], llm_vectors=np.ones((1, DIM)), encoder=source.encoder,
                      **paths)
    assert os.listdir(tmp_path) == []


def test_a_router_saved_into_folders_not_made_yet_makes_them(source: Any, tmp_path: Path) -> None:
    folder = _save(source, tmp_path / "a" / "b" / "router")
    assert load_artifact(folder).llm_names == ("x", "y")
    assert os.listdir(tmp_path / "a" / "b") == ["router"]


def test_an_artifact_cannot_be_changed_after_loading(tiny_router_path: Path) -> None:
    loaded = load_artifact(tiny_router_path)
    with pytest.raises(dataclasses.FrozenInstanceError):
        loaded.llm_vectors = np.zeros((1, DIM), np.float32)  # type: ignore[misc]


def test_a_table_with_several_bad_rows_names_the_first(source: Any, tmp_path: Path) -> None:
    table = np.ones((4, DIM))
    table[1, 2], table[3, 0] = np.inf, np.nan
    _refused(source, tmp_path, re.escape("LLM row 1 ('b') contains NaN or inf"),
             llm_names=["a", "b", "c", "d"], llm_vectors=table)


@pytest.mark.parametrize("given", ["directions", "alignment"])
def test_directions_and_their_alignment_block_go_together(source: Any, tmp_path: Path, given: str) -> None:
    kwargs: dict[str, Any] = ({"reference_directions": np.eye(DIM, dtype=np.float32)} if given == "directions"
                              else {"alignment": {"threshold": 0.5}})
    _refused(source, tmp_path, "reference directions and the alignment block \\(threshold\\) go together", **kwargs)


@pytest.mark.parametrize(
    ("directions", "message"),
    [
        (np.zeros((0, DIM), np.float32), re.escape(f"must have shape (R >= 1, {DIM}), got (0, {DIM})")),
        (np.ones((2, DIM + 1), np.float32), re.escape(f"must have shape (R >= 1, {DIM}), got (2, {DIM + 1})")),
        (np.ones((2, DIM - 1), np.float32), re.escape(f"must have shape (R >= 1, {DIM}), got (2, {DIM - 1})")),
        (np.ones((2, DIM, 1), np.float32), re.escape(f"must have shape (R >= 1, {DIM}), got (2, {DIM}, 1)")),
        (np.ones(DIM, np.float32), re.escape(f"must have shape (R >= 1, {DIM}), got ({DIM},)")),
        (np.ones((2, DIM), np.int32), "reference directions must be finite floats"),
        (np.array([[1.0, 0, 0, 0], [0, np.nan, 0, 0]], np.float32), "reference directions must be finite floats"),
    ],
)
def test_reference_directions_of_the_wrong_shape_kind_or_value_are_refused(
    source: Any, tmp_path: Path, directions: np.ndarray, message: str
) -> None:
    _refused(source, tmp_path, message, reference_directions=directions, alignment={"threshold": 0.5})


@pytest.mark.parametrize("threshold", [True, "0.5", float("nan"), float("inf"), None])
def test_an_alignment_threshold_must_be_a_finite_number(source: Any, tmp_path: Path, threshold: Any) -> None:
    _refused(source, tmp_path, re.escape(f"alignment.threshold must be a finite number, got {threshold!r}"),
             reference_directions=np.eye(DIM, dtype=np.float32), alignment={"threshold": threshold})


@pytest.mark.parametrize(
    "center",
    [np.zeros(DIM - 1), np.zeros(DIM + 1), np.zeros((1, DIM)), np.zeros(DIM, np.int64),
     np.array([0.0, np.inf, 0.0, 0.0])],
)
def test_a_reference_center_must_be_d_finite_floats(source: Any, tmp_path: Path, center: np.ndarray) -> None:
    _refused(source, tmp_path, re.escape(f"reference center must be {DIM} finite floats, got shape {center.shape}"),
             reference_directions=np.eye(DIM, dtype=np.float32), alignment={"threshold": 0.5}, reference_center=center)


def test_one_reference_direction_and_an_integer_threshold_are_kept_read_only(source: Any, tmp_path: Path) -> None:
    direction = np.array([[0.0, 1.0, 0.0, 0.0]], np.float32)
    folder = _save(source, tmp_path / "out", reference_directions=direction, alignment={"threshold": 0})
    loaded = load_artifact(folder)
    assert loaded.reference_directions is not None and loaded.reference_center is not None
    assert np.array_equal(loaded.reference_directions, direction)
    assert np.array_equal(loaded.reference_center, np.zeros(DIM, np.float32))  # no centre given: the origin
    assert loaded.manifest.alignment is not None and loaded.manifest.alignment.n_reference == 1
    assert not loaded.reference_directions.flags.writeable and not loaded.reference_center.flags.writeable


def _reseal(folder: Path, field: str, key: str | None, value: int) -> None:
    def edit(manifest: dict[str, Any]) -> None:
        if key is None:
            manifest[field] = value
        else:
            manifest[field][key] = value
    edit_and_reseal(folder, edit)


def test_a_table_wider_than_router_json_says_is_refused(source: Any, tmp_path: Path) -> None:
    folder = _save(source, tmp_path / "out")
    _reseal(folder, "dim", None, DIM - 1)
    with pytest.raises(JeirtError, match=re.escape(f"LLM vectors have dimension {DIM}, router.json says {DIM - 1}")):
        load_artifact(folder)


@pytest.mark.parametrize("said", [1, 3])
def test_more_or_fewer_reference_directions_than_router_json_says_are_refused(
    source: Any, tmp_path: Path, said: int
) -> None:
    folder = _save(source, tmp_path / "out", reference_directions=np.eye(DIM, dtype=np.float32)[:2],
                   alignment={"threshold": 0.5, "top_k": 1})
    _reseal(folder, "alignment", "n_reference", said)
    with pytest.raises(JeirtError, match=re.escape(f"holds 2 reference directions, router.json's "
                                                   f"alignment.n_reference says {said}")):
        load_artifact(folder)


def test_reading_only_the_manifest_still_refuses_the_older_format(tiny_router_path: Path, tmp_path: Path) -> None:
    folder = copy_router(tiny_router_path, tmp_path / "old")
    _reseal(folder, "format_version", None, 1)
    with pytest.raises(JeirtError, match=r"format_version 1 .*`python -m jeirt_lite.migrate ROUTER_FOLDER`"):
        read_manifest(folder)


def test_a_changed_file_is_named_with_both_hashes(tiny_router_path: Path, tmp_path: Path) -> None:
    folder = copy_router(tiny_router_path, tmp_path / "r")
    expected = json.loads((folder / "router.json").read_text())["files"]["tokenizer"]["sha256"]
    with open(folder / "tokenizer.json", "a", encoding="utf-8") as handle:
        handle.write(" ")
    actual = sha256_of(folder / "tokenizer.json")
    with pytest.raises(JeirtError) as raised:
        load_artifact(folder)
    assert str(raised.value) == (
        f"{folder / 'tokenizer.json'}: sha256 {actual[:12]}… does not match router.json ({expected[:12]}…); "
        "the file is corrupt or belongs to another router"
    )


def test_a_missing_file_says_which_role_router_json_gave_it(tiny_router_path: Path, tmp_path: Path) -> None:
    folder = copy_router(tiny_router_path, tmp_path / "r")
    (folder / "llms.safetensors").unlink()
    with pytest.raises(JeirtError) as raised:
        load_artifact(folder)
    assert str(raised.value) == (f"{folder / 'llms.safetensors'}: missing or not a regular file "
                                 "(router.json lists it as the llms file)")
    (folder / "tokenizer.json").unlink()
    with pytest.raises(JeirtError) as raised:
        load_artifact(folder)  # the roles are checked in router.json's order: the tokenizer's comes first
    assert str(raised.value) == (f"{folder / 'tokenizer.json'}: missing or not a regular file "
                                 "(router.json lists it as the tokenizer file)")
    (folder / "router.json").unlink()
    with pytest.raises(JeirtError) as raised:
        load_artifact(folder)
    assert str(raised.value) == (f"{folder / 'router.json'}: missing or not a regular file "
                                 "(a router folder needs its manifest)")
