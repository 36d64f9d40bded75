"""The router folder: round trip, atomic save, and a clear error for each kind of broken folder."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from jeirt_lite import JeirtError, Router, artifact
from jeirt_lite._artifact_files import write_tensors
from jeirt_lite.artifact import load_artifact, save_artifact
from safetensors import safe_open
from tiny_router import build_tiny_router, copy_router, edit_and_reseal


def _edit_manifest(folder: Path, **changes: object) -> None:
    path = folder / "router.json"
    manifest = json.loads(path.read_text())
    manifest.update(changes)
    path.write_text(json.dumps(manifest))


def test_round_trip_keeps_names_table_and_hashes(tmp_path: Path) -> None:
    folder = build_tiny_router(tmp_path / "r", n_llms=3, dim=5, llm_names=["a", "b", "c"])
    loaded = load_artifact(folder)
    assert loaded.llm_names == ("a", "b", "c")
    assert loaded.llm_vectors.shape == (3, 5) and loaded.llm_vectors.dtype == np.float32
    assert loaded.dim == 5
    manifest = json.loads((folder / "router.json").read_text())
    assert manifest["format"] == "jeirt-lite-router" and manifest["format_version"] == 2
    assert manifest["files"]["encoder"]["sha256"] == artifact.sha256_of(folder / "encoder.onnx")
    assert sorted(p.name for p in folder.iterdir()) == [
        "encoder.onnx", "llms.safetensors", "router.json", "tokenizer.json",
    ]
    assert not loaded.llm_vectors.flags.writeable


def test_missing_folder_and_manifest(tmp_path: Path) -> None:
    with pytest.raises(JeirtError, match="no router folder"):
        load_artifact(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(JeirtError, match="router.json: missing"):
        load_artifact(tmp_path / "empty")


def test_corrupt_manifest_json(tiny_router_path: Path, tmp_path: Path) -> None:
    folder = copy_router(tiny_router_path, tmp_path / "r")
    (folder / "router.json").write_text("{not json")
    with pytest.raises(JeirtError, match="router.json: not readable JSON"):
        load_artifact(folder)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"format": "something-else"}, "format is 'something-else'"),
        ({"format_version": 99}, "format_version 99 is not supported"),
        ({"dim": "four"}, "field 'dim' must be an integer"),
        ({"llms": "a,b"}, "field 'llms' must be an array"),
        ({"encoder": {"name": "x"}}, "encoder lacks max_seq_length"),
    ],
)
def test_bad_manifest_fields(tiny_router_path: Path, tmp_path: Path, changes: dict, message: str) -> None:
    folder = copy_router(tiny_router_path, tmp_path / "r")
    _edit_manifest(folder, **changes)
    with pytest.raises(JeirtError, match=message):
        load_artifact(folder)


def test_tampered_file_fails_its_hash(tiny_router_path: Path, tmp_path: Path) -> None:
    folder = copy_router(tiny_router_path, tmp_path / "r")
    with open(folder / "encoder.onnx", "ab") as handle:
        handle.write(b"\0")
    with pytest.raises(JeirtError, match=r"encoder.onnx: sha256 .* does not match"):
        load_artifact(folder)


def test_missing_file_is_named(tiny_router_path: Path, tmp_path: Path) -> None:
    folder = copy_router(tiny_router_path, tmp_path / "r")
    (folder / "llms.safetensors").unlink()
    with pytest.raises(JeirtError, match=r"llms.safetensors: missing"):
        load_artifact(folder)


def test_corrupt_table_with_matching_hash(tiny_router_path: Path, tmp_path: Path) -> None:
    folder = copy_router(tiny_router_path, tmp_path / "r")
    (folder / "llms.safetensors").write_bytes(b"garbage that is not safetensors")
    manifest = json.loads((folder / "router.json").read_text())
    manifest["files"]["llms"]["sha256"] = artifact.sha256_of(folder / "llms.safetensors")
    (folder / "router.json").write_text(json.dumps(manifest))
    with pytest.raises(JeirtError, match="llms.safetensors: not a readable safetensors file"):
        load_artifact(folder)


def test_manifest_and_table_disagree(tiny_router_path: Path, tmp_path: Path) -> None:
    folder = copy_router(tiny_router_path, tmp_path / "r")
    names = json.loads((folder / "router.json").read_text())["llms"]
    _edit_manifest(folder, llms=names[:-1])
    with pytest.raises(JeirtError, match="lists 4 LLMs but llms.safetensors has 5"):
        load_artifact(folder)
    folder2 = copy_router(tiny_router_path, tmp_path / "r2")
    _edit_manifest(folder2, dim=7)
    with pytest.raises(JeirtError, match="content differs from the router.json saved with llms.safetensors"):
        load_artifact(folder2)
    edit_and_reseal(folder2)  # consistent but wrong: the table's own shape still gives it away
    with pytest.raises(JeirtError, match="dimension 4, router.json says 7"):
        load_artifact(folder2)


@pytest.mark.parametrize(
    ("names", "table", "message"),
    [
        (["a", "a"], np.zeros((2, 3)), "appears twice"),
        (["a", ""], np.zeros((2, 3)), "must be a non-empty string"),
        ([], np.zeros((0, 3)), "at least one LLM"),
        (["a"], np.zeros(3), "must be 2-D"),
        (["a", "b"], np.array([[0.0, 1.0], [np.nan, 0.0]]), r"LLM row 1 \('b'\) contains NaN"),
        (["a"], np.zeros((1, 3), dtype=np.int64), "must be floating point"),
    ],
)
def test_save_rejects_bad_tables(
    tiny_router_path: Path, tmp_path: Path, names: list, table: np.ndarray, message: str
) -> None:
    source = load_artifact(tiny_router_path)
    with pytest.raises(JeirtError, match=message):
        save_artifact(
            tmp_path / "out", llm_names=names, llm_vectors=table, tokenizer_json=source.tokenizer_path,
            encoder_onnx=source.encoder_path, encoder=source.encoder,
        )
    assert not (tmp_path / "out").exists()


def test_save_refuses_to_overwrite_unless_asked(tiny_router_path: Path, tmp_path: Path) -> None:
    source = load_artifact(tiny_router_path)
    kwargs = dict(
        llm_names=["x"], llm_vectors=np.ones((1, source.dim)), tokenizer_json=source.tokenizer_path,
        encoder_onnx=source.encoder_path, encoder=source.encoder,
    )
    save_artifact(tmp_path / "out", **kwargs)
    with pytest.raises(JeirtError, match="already exists"):
        save_artifact(tmp_path / "out", **kwargs)
    kwargs["llm_names"] = ["y"]
    save_artifact(tmp_path / "out", overwrite=True, **kwargs)
    assert load_artifact(tmp_path / "out").llm_names == ("y",)
    assert sorted(os.listdir(tmp_path)) == ["out"]  # no staging or retired folders left behind


def test_overwrite_replaces_only_a_router_folder_or_an_empty_one(tiny_router_path: Path, tmp_path: Path) -> None:
    router = Router.load(tiny_router_path, threads=1)
    project = tmp_path / "project"
    router.save(project / "router")
    (project / "notes.txt").write_text("mine")
    with pytest.raises(JeirtError, match=r"project is not a router folder \(it holds no router.json\)"):
        Router.load(project / "router", threads=1).save(project, overwrite=True)
    assert (project / "notes.txt").read_text() == "mine" and (project / "router" / "router.json").is_file()
    (tmp_path / "afile").write_text("x")
    with pytest.raises(JeirtError, match="afile is not a folder; overwrite replaces only a router folder"):
        router.save(tmp_path / "afile", overwrite=True)
    (tmp_path / "link").symlink_to(project / "router", target_is_directory=True)
    with pytest.raises(JeirtError, match="link is a symbolic link; overwrite replaces only a router folder"):
        router.save(tmp_path / "link", overwrite=True)
    assert (tmp_path / "afile").read_text() == "x" and (tmp_path / "link").is_symlink()
    (tmp_path / "empty").mkdir()
    router.save(tmp_path / "empty", overwrite=True)  # an empty folder, as a user may make before saving
    router.save(project / "router", overwrite=True)  # a router folder, its own source included
    assert Router.load(project / "router", threads=1).llms == Router.load(tmp_path / "empty", threads=1).llms
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "empty", "link", "project"]


def test_a_folder_that_cannot_be_written_is_named_as_asked_for(tiny_router_path: Path, tmp_path: Path) -> None:
    # A parent that is a file ended in FileExistsError: 'afile' (a traceback, and the wrong problem named).
    router = Router.load(tiny_router_path, threads=1)
    (tmp_path / "afile").write_text("x")
    for target in (tmp_path / "afile" / "router", tmp_path / "afile" / "deeper" / "router"):
        with pytest.raises(JeirtError, match=re.escape(f"{target}: cannot write the router folder "
                                                       f"({tmp_path / 'afile'} is a file, not a folder)")):
            router.save(target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


def test_a_file_copied_in_that_cannot_be_read_is_named_not_the_folder_written(
    tiny_router_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An unreadable tokenizer was reported as the target's fault ('cannot write the router folder (Permission
    # denied)'): the user would look at the folder they asked for, which is fine.
    router = Router.load(tiny_router_path, threads=1)
    real_copy = artifact.shutil.copyfile

    def unreadable_tokenizer(source: Path, destination: Path) -> Any:
        if Path(source).name == "tokenizer.json":
            raise PermissionError(13, os.strerror(13), str(source))
        return real_copy(source, destination)

    monkeypatch.setattr(artifact.shutil, "copyfile", unreadable_tokenizer)
    target = tmp_path / "router"
    tokenizer = tiny_router_path / "tokenizer.json"
    with pytest.raises(JeirtError, match=re.escape(f"{target}: cannot save, {tokenizer} cannot be read "
                                                   f"({os.strerror(13)})")):
        router.save(target)
    assert list(tmp_path.iterdir()) == []


def test_a_router_saved_twice_is_the_same_folder_byte_for_byte(tiny_router_path: Path, tmp_path: Path) -> None:
    # llms.safetensors' metadata (the binding) came out in a new order from one save to the next, and router.json
    # with it (it holds the table's hash).
    router = Router.load(tiny_router_path)
    for name in ("a", "b", "c"):
        router.save(tmp_path / name)
    files = sorted(p.name for p in (tmp_path / "a").iterdir())
    for name in ("b", "c"):
        assert sorted(p.name for p in (tmp_path / name).iterdir()) == files
        for file in files:
            assert (tmp_path / name / file).read_bytes() == (tmp_path / "a" / file).read_bytes(), file


def test_written_tensors_follow_from_their_content(tmp_path: Path) -> None:
    tensors = {"b": np.arange(5, dtype=np.float32), "a": np.ones((2, 3), dtype=np.float16)}
    metadata = {f"key{i}": f"value {i} é" for i in (7, 3, 9, 1, 5, 2)}
    write_tensors(tmp_path / "first", tensors, metadata)
    written = (tmp_path / "first").read_bytes()
    for round_ in range(6):  # each save builds a new hash map, so an unsorted order shows within a few
        write_tensors(tmp_path / str(round_), tensors, dict(reversed(list(metadata.items()))))
        assert (tmp_path / str(round_)).read_bytes() == written
    header_size = int.from_bytes(written[:8], "little")
    assert header_size % 8 == 0  # the data starts aligned
    assert list(json.loads(written[8 : 8 + header_size])["__metadata__"]) == sorted(metadata)
    with safe_open(str(tmp_path / "first"), framework="numpy") as handle:
        assert handle.metadata() == metadata
        assert all(np.array_equal(handle.get_tensor(name), table) for name, table in tensors.items())


def test_written_tensors_get_the_umasks_permissions(tmp_path: Path) -> None:
    # safetensors' save_file makes files owner-only, unreadable to other users of a router installed system-wide.
    previous = os.umask(0o022)
    try:
        write_tensors(tmp_path / "t", {"x": np.zeros(2, dtype=np.float32)})
    finally:
        os.umask(previous)
    assert (tmp_path / "t").stat().st_mode & 0o777 == 0o644


def test_interrupted_save_leaves_nothing(
    tiny_router_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = load_artifact(tiny_router_path)

    def interrupted(path: Path, tensors: dict, metadata: object = None) -> None:
        (path).write_bytes(b"half")
        raise KeyboardInterrupt

    monkeypatch.setattr(artifact, "write_tensors", interrupted)
    with pytest.raises(KeyboardInterrupt):
        save_artifact(
            tmp_path / "out", llm_names=["x"], llm_vectors=np.ones((1, source.dim)),
            tokenizer_json=source.tokenizer_path, encoder_onnx=source.encoder_path, encoder=source.encoder,
        )
    assert os.listdir(tmp_path) == []


def test_metrics_with_numpy_scalars_and_nan_are_stored_as_json(tiny_router_path: Path, tmp_path: Path) -> None:
    source = load_artifact(tiny_router_path)
    save_artifact(
        tmp_path / "out", llm_names=["x"], llm_vectors=np.ones((1, source.dim)),
        tokenizer_json=source.tokenizer_path, encoder_onnx=source.encoder_path, encoder=source.encoder,
        metrics={"auc": np.float32(0.75), "ece": float("nan"), "per_subject": {"law": np.float64(0.6)}},
    )
    metrics = json.loads((tmp_path / "out" / "router.json").read_text())["metrics"]
    assert metrics == {"auc": pytest.approx(0.75), "ece": None, "per_subject": {"law": 0.6}}


def test_a_swap_that_fails_puts_the_router_it_was_replacing_back(tiny_router_path: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    router = Router.load(tiny_router_path, threads=1)
    target = router.save(tmp_path / "router")
    before = {f.name: f.read_bytes() for f in target.iterdir()}
    real_replace = os.replace

    def refuse_moving_in(source: os.PathLike[str] | str, destination: os.PathLike[str] | str) -> None:
        if ".tmp-" in Path(source).name:  # the new folder onto the name, after the old one was moved aside
            raise OSError(5, "Input/output error")
        real_replace(source, destination)

    monkeypatch.setattr(artifact.os, "replace", refuse_moving_in)
    with pytest.raises(JeirtError, match=r"router: cannot write the router folder \(Input/output error\)"):
        router.save(target, overwrite=True)
    assert {f.name: f.read_bytes() for f in target.iterdir()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["router"]
