"""Tampered and inconsistent router folders are refused, naming the file and the field; the typed manifest.

Two kinds of damage: router.json edited by hand (caught by its binding to llms.safetensors: the LLM names in
table order and a digest of router.json's content live in the table's metadata), and folders that are
consistent but wrong (re-sealed with `edit_and_reseal`, as a buggy writer would leave them: caught by the
manifest's own validation).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
from jeirt_lite import JeirtError, Router
from jeirt_lite._manifest import Manifest
from jeirt_lite.artifact import LLM_TENSOR, load_artifact, read_manifest, sha256_of
from tiny_router import build_tiny_router, copy_router, edit_and_reseal

REPO = Path(__file__).resolve().parents[1]


def _edit(folder: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    path = folder / "router.json"
    manifest = json.loads(path.read_text())
    edit(manifest)
    path.write_text(json.dumps(manifest))


def _swap(items: list[Any], i: int = 0, j: int = 1) -> None:
    items[i], items[j] = items[j], items[i]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda m: _swap(m["llms"]), r"lists LLM 0 as 'llm-1', but row 0 of llms.safetensors belongs to 'llm-0'"),
        (lambda m: m["llms"].append("llm-9"), "lists 6 LLMs but llms.safetensors has 5"),
        (lambda m: _swap(m["encoder"]["input_names"]), "content differs from the router.json saved"),
        (lambda m: m["encoder"].update(max_seq_length=8), "content differs"),
        (lambda m: m.update(label="relabelled"), "content differs"),
        (lambda m: m.update(costs={"llm-0": 1.0}), "content differs"),
    ],
)
def test_a_hand_edited_router_json_is_refused(
    tiny_router_path: Path, tmp_path: Path, edit: Callable[[dict[str, Any]], None], message: str
) -> None:
    folder = copy_router(tiny_router_path, tmp_path / "r")
    _edit(folder, edit)
    with pytest.raises(JeirtError, match=message):
        load_artifact(folder)
    with pytest.raises(JeirtError, match=message):
        read_manifest(folder)  # the cheap read checks the binding too


def test_router_json_of_another_router_is_refused(tiny_router_path: Path, tmp_path: Path) -> None:
    other = build_tiny_router(tmp_path / "other", seed=1)  # same names and shapes, other weights and files
    folder = copy_router(tiny_router_path, tmp_path / "r")
    (folder / "router.json").write_bytes((other / "router.json").read_bytes())
    with pytest.raises(JeirtError, match="sha256 .* does not match"):
        load_artifact(folder)
    # The table of another router with the same names: hashes match router.json, the digest does not.
    (folder / "router.json").write_bytes((tiny_router_path / "router.json").read_bytes())
    (folder / "llms.safetensors").write_bytes((other / "llms.safetensors").read_bytes())
    edit = json.loads((folder / "router.json").read_text())
    edit["files"]["llms"]["sha256"] = sha256_of(folder / "llms.safetensors")
    (folder / "router.json").write_text(json.dumps(edit))
    with pytest.raises(JeirtError, match="content differs"):
        load_artifact(folder)


def _set_alignment(top_k: int) -> Callable[[dict[str, Any]], None]:
    return lambda m: m["alignment"].update(top_k=top_k)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda m: m.update(dim=0), r"dim must be in 1\.\.65536, got 0"),
        (lambda m: m.update(dim=True), "field 'dim' must be an integer"),
        (lambda m: m["encoder"].update(max_seq_length=10**9), r"encoder.max_seq_length must be in 1\.\.32768"),
        (lambda m: m["encoder"].update(max_seq_length=0), r"encoder.max_seq_length must be in 1\.\."),
        (lambda m: m["encoder"].update(input_names=["a", "b", "c"]), "must name two inputs"),
        (lambda m: m["encoder"].update(output_name="input_ids"), "input and output names must be distinct"),
        (lambda m: m["encoder"].update(batch_size=0), r"encoder.batch_size must be in 1\.\."),
        (lambda m: m["encoder"].update(name=""), "encoder.name must be a non-empty string"),
        (lambda m: m.update(llms=["llm-0", "llm-1", "llm-2", "llm-3", "llm\n4"]), "holds a control character"),
        (lambda m: m.update(label=7), "label must be a string or null"),
        (lambda m: m.update(calibration={"kind": "per_llm", "scale": [1.0] * 4, "bias": [0.0] * 5}),
         "calibration.scale must be a list of 5 numbers"),
        (lambda m: m.update(calibration={"kind": "per_llm", "scale": {"llm-0": 1.0}, "bias": [0.0] * 5}),
         r"calibration.scale must be a list of 5 numbers \(one per LLM\), got an object$"),
        (lambda m: m.update(costs=[1.0] * 5), "costs must map LLM names to numbers, got an array$"),
        (lambda m: m.update(calibration={"kind": "per_llm", "scale": [1.0] * 5, "bias": [0.0] * 4 + ["x"]}),
         r"calibration.bias\[4\] must be a finite number"),
        (lambda m: m.update(costs={"llm-0": -3.0}), "finite and >= 0"),
        (lambda m: m["files"].update(extra={"path": "x", "sha256": "0" * 64}), "files has unknown entries"),
        (lambda m: m.update(training=[1, 2]), "training must be an object or null"),
    ],
)
def test_every_manifest_field_is_validated(
    tiny_router_path: Path, tmp_path: Path, edit: Callable[[dict[str, Any]], None], message: str
) -> None:
    folder = copy_router(tiny_router_path, tmp_path / "r")
    edit_and_reseal(folder, edit)
    with pytest.raises(JeirtError, match=message):
        load_artifact(folder)


@pytest.mark.parametrize("name", ["../tokenizer.json", "/etc/hostname", "sub/tokenizer.json", "..", "", "a\\b"])
def test_file_paths_outside_the_folder_are_refused(tiny_router_path: Path, tmp_path: Path, name: str) -> None:
    folder = copy_router(tiny_router_path, tmp_path / "r")
    edit_and_reseal(folder, lambda m: m["files"]["tokenizer"].update(path=name))
    with pytest.raises(JeirtError, match="files.tokenizer.path must be a plain file name inside the router"):
        load_artifact(folder)


def test_a_symlink_leading_out_of_the_folder_is_refused(tiny_router_path: Path, tmp_path: Path) -> None:
    folder = copy_router(tiny_router_path, tmp_path / "r")
    outside = tmp_path / "elsewhere.json"
    outside.write_bytes((folder / "tokenizer.json").read_bytes())
    (folder / "tokenizer.json").unlink()
    os.symlink(outside, folder / "tokenizer.json")  # same bytes, same hash: only the link gives it away
    with pytest.raises(JeirtError, match="tokenizer.json: a link"):
        load_artifact(folder)


def test_file_hashes_must_be_hex(tiny_router_path: Path, tmp_path: Path) -> None:
    folder = copy_router(tiny_router_path, tmp_path / "r")
    _edit(folder, lambda m: m["files"]["tokenizer"].update(sha256="XYZ"))
    with pytest.raises(JeirtError, match="files.tokenizer.sha256 must be 64 lowercase hex digits"):
        load_artifact(folder)


def test_alignment_settings_are_bounded(tiny_router_path: Path, tmp_path: Path) -> None:
    from test_router_alignment import _with_reference

    dim = load_artifact(tiny_router_path).dim
    aligned = _with_reference(tiny_router_path, tmp_path / "aligned", np.eye(3, dim))
    assert Router.load(aligned).manifest.alignment.top_k == 3  # the default 10, capped at R = 3
    for top_k, message in ((0, r"alignment.top_k must be in 1\.\.3, got 0"), (10**9, r"1\.\.3, got 1000000000")):
        folder = copy_router(aligned, tmp_path / f"k{top_k}")
        _edit(folder, _set_alignment(top_k))
        with pytest.raises(JeirtError, match=message):
            load_artifact(folder)
    folder = copy_router(aligned, tmp_path / "k2")
    _edit(folder, _set_alignment(2))  # in range, but not what was saved
    with pytest.raises(JeirtError, match="content differs"):
        load_artifact(folder)
    folder = copy_router(aligned, tmp_path / "threshold")
    edit_and_reseal(folder, lambda m: m["alignment"].update(threshold=3.0))
    with pytest.raises(JeirtError, match=r"alignment.threshold must be in \[-1, 1\]"):
        load_artifact(folder)
    folder = copy_router(aligned, tmp_path / "rows")
    edit_and_reseal(folder, lambda m: m["alignment"].update(n_reference=4, top_k=4))
    with pytest.raises(JeirtError, match="holds 3 reference directions, router.json's alignment.n_reference says 4"):
        load_artifact(folder)


def test_encoder_inputs_swapped_consistently_are_refused_by_the_graph_check(
    tiny_router_path: Path, tmp_path: Path
) -> None:
    folder = copy_router(tiny_router_path, tmp_path / "r")
    edit_and_reseal(folder, lambda m: m["encoder"].update(input_names=["input_ids", "token_type_ids"]))
    with pytest.raises(JeirtError, match="has no input 'token_type_ids'"):
        Router.load(folder)


def test_read_manifest_does_not_hash_or_load_the_encoder(tiny_router_path: Path, tmp_path: Path) -> None:
    folder = copy_router(tiny_router_path, tmp_path / "r")
    with open(folder / "encoder.onnx", "ab") as handle:
        handle.write(b"\0")  # a full load hashes it and refuses; the cheap read does not look at it
    assert read_manifest(folder).llms == tuple(f"llm-{i}" for i in range(5))
    with pytest.raises(JeirtError, match="encoder.onnx: sha256"):
        load_artifact(folder)


def test_the_manifest_is_typed_frozen_and_a_read_only_mapping(tiny_router_path: Path) -> None:
    router = Router.load(tiny_router_path, threads=1)
    manifest = router.manifest
    assert isinstance(manifest, Manifest)
    assert manifest.dim == 4 and manifest.encoder.max_seq_length == 16 and manifest.llms == router.llms
    assert manifest["encoder"]["max_seq_length"] == 16 and manifest.get("costs") is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        manifest.dim = 5  # type: ignore[misc]
    manifest["llms"].append("intruder")  # a copy: the router is unchanged
    assert router.manifest.llms == router.llms and "intruder" not in router.manifest["llms"]
    # Copies go through the constructor and share the loaded encoder.
    sub = router.with_costs({"llm-0": 2.0}).select_llms(["llm-3", "llm-0"])
    assert sub.manifest.llms == ("llm-3", "llm-0") and sub.manifest.costs == {"llm-0": 2.0}
    assert sub._encoder is router._encoder and type(sub) is Router


def _make_format_1(folder: Path) -> None:
    """What format 1 looked like: no binding metadata in the table."""
    from safetensors import safe_open
    from safetensors.numpy import save

    with safe_open(str(folder / "llms.safetensors"), framework="numpy") as handle:
        table = handle.get_tensor(LLM_TENSOR)
    (folder / "llms.safetensors").write_bytes(save({LLM_TENSOR: table}))
    manifest = json.loads((folder / "router.json").read_text())
    manifest["format_version"] = 1
    manifest["files"]["llms"]["sha256"] = sha256_of(folder / "llms.safetensors")
    (folder / "router.json").write_text(json.dumps(manifest))


def test_a_format_1_folder_is_refused_with_the_migration_command_which_converts_it(
    tiny_router_path: Path, tmp_path: Path
) -> None:
    folder = copy_router(tiny_router_path, tmp_path / "old")
    _make_format_1(folder)
    with pytest.raises(JeirtError, match=r"format_version 1 .*`python -m jeirt_lite.migrate ROUTER_FOLDER`"):
        Router.load(folder)
    before = Router.load(tiny_router_path, threads=1).predict_proba(["what is the price of a market"])
    done = subprocess.run(
        [sys.executable, "-m", "jeirt_lite.migrate", str(folder)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "converted to format 2" in done.stdout
    after = Router.load(folder, threads=1)
    np.testing.assert_array_equal(after.predict_proba(["what is the price of a market"]), before)
    again = subprocess.run([sys.executable, "-m", "jeirt_lite.migrate", str(folder)], capture_output=True,
                           text=True, check=False)
    assert again.returncode == 0 and "already in format 2" in again.stdout


def test_the_shipped_router_is_in_the_current_format() -> None:
    manifest = read_manifest(REPO / "python" / "jeirt_lite" / "default_router")
    assert manifest.format_version == 2 and len(manifest.llms) >= 2
