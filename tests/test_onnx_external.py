"""A static router's encoder.onnx reads its token table and adapter from static_encoder.safetensors (ONNX external
data): the shipped folder stores them once, gives the same answers as a folder whose graph embeds them, and any
pair of files that do not line up byte for byte (a rewritten, truncated or retyped static file, a location leading
elsewhere) is refused by name, at load and at save, before ONNX Runtime could read the wrong bytes."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
from jeirt_lite import JeirtError, Router
from jeirt_lite._onnx_external import external_tensors
from jeirt_lite.artifact import load_artifact
from tiny_router import copy_router, edit_and_reseal

REPO = Path(__file__).resolve().parents[1]
SHIPPED = REPO / "python" / "jeirt_lite" / "default_router"
STATIC = "static_encoder.safetensors"
TENSORS = {"table", "w1", "b1", "w2", "b2"}


def _texts(n: int) -> list[str]:
    csv.field_size_limit(1 << 30)
    with open(REPO / "data" / "mmlu_pro" / "questions.csv", newline="", encoding="utf-8") as handle:
        return [row["text"] for _, row in zip(range(n), csv.DictReader(handle))]


def test_the_shipped_graph_keeps_no_copy_of_the_table() -> None:
    found = {t.name: t for t in external_tensors(SHIPPED / "encoder.onnx")}
    assert set(found) == TENSORS
    assert all(t.entries["location"] == STATIC for t in found.values())
    assert (SHIPPED / "encoder.onnx").stat().st_size < 10_000
    load_artifact(SHIPPED)  # the references line up with the file


@pytest.fixture(scope="module")
def embedded_router(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped router as it was stored before: the same graph with its tensors inside encoder.onnx."""
    onnx = pytest.importorskip("onnx")
    scratch = tmp_path_factory.mktemp("embedded")
    model = onnx.load(str(SHIPPED / "encoder.onnx"))  # reads the external data in
    (scratch / "encoder.onnx").write_bytes(model.SerializeToString())
    assert external_tensors(scratch / "encoder.onnx") == []
    return Router.load(SHIPPED, threads=1).save(scratch / "router", encoder_onnx=scratch / "encoder.onnx")


@pytest.mark.parametrize("fast_path", [True, False])
def test_a_graph_reading_the_static_file_answers_bit_for_bit_as_one_embedding_it(
    embedded_router: Path, tmp_path: Path, fast_path: bool
) -> None:
    from jeirt_lite.batch import ScoreOptions, score_file

    texts = _texts(120)
    linked, embedded = (Router.load(p, threads=1, fast_path=fast_path) for p in (SHIPPED, embedded_router))
    assert type(linked._encoder) is type(embedded._encoder)
    for a, b in zip(linked.encode(texts, features=True), embedded.encode(texts, features=True)):
        assert a is not None and b is not None and np.array_equal(a, b)
    first, second = linked.route(texts, k=3), embedded.route(texts, k=3)
    assert np.array_equal(first.indices, second.indices)
    assert np.array_equal(first.probabilities, second.probabilities)
    assert linked.forecast(texts) == embedded.forecast(texts)
    answers = [i % 3 != 0 for i in range(40)]
    onboarded = [r.add_llm("new-llm", texts[:40], answers) for r in (linked, embedded)]
    assert np.array_equal(onboarded[0].predict_proba(texts), onboarded[1].predict_proba(texts))
    bank = tmp_path / "bank.csv"
    with open(bank, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([["text"], *([t] for t in texts)])
    options = ScoreOptions(k=2, all_probabilities=True, forecast=True)
    outputs = []
    for router, name in ((linked, "a.csv"), (embedded, "b.csv")):
        summary = score_file(router, input_path=bank, output=tmp_path / name, options=options)
        outputs.append(((tmp_path / name).read_bytes(), summary.forecast))
    assert outputs[0] == outputs[1]


def _rewrite_static(folder: Path, change: Callable[[dict[str, np.ndarray]], dict[str, Any]]) -> None:
    from safetensors.numpy import load_file, save

    tensors = load_file(str(folder / STATIC))
    settings = change(tensors)
    (folder / STATIC).write_bytes(save(tensors, **settings))


def _moved(tensors: dict[str, np.ndarray]) -> dict[str, Any]:
    return {"metadata": {"source": "rewritten with a longer header, so every tensor moves " + "x" * 64}}


def _retyped(tensors: dict[str, np.ndarray]) -> dict[str, Any]:
    tensors["table"] = tensors["table"].astype(np.float32)
    return {}


def _reshaped(tensors: dict[str, np.ndarray]) -> dict[str, Any]:
    tensors["table"] = tensors["table"][:-1]
    return {}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_moved, r"tensor '\w+': reads bytes \d+\.\.\d+ of static_encoder.safetensors, but the tensor lies at"),
        (_retyped, r"tensor 'table': is ONNX data type 10, but static_encoder.safetensors stores it as F32"),
        (_reshaped, r"tensor 'table': has shape \[30522, \d+\], but static_encoder.safetensors stores it as"),
    ],
)
def test_a_static_file_that_no_longer_lines_up_with_the_graph_is_refused(
    tmp_path: Path, change: Callable[[dict[str, np.ndarray]], dict[str, Any]], message: str
) -> None:
    folder = copy_router(SHIPPED, tmp_path / "r")
    _rewrite_static(folder, change)
    edit_and_reseal(folder)  # both files match router.json again: only the new check can tell
    for fast_path in (True, False):
        with pytest.raises(JeirtError, match="encoder.onnx: " + message):
            Router.load(folder, fast_path=fast_path)


def test_a_truncated_static_file_is_refused(tmp_path: Path) -> None:
    folder = copy_router(SHIPPED, tmp_path / "r")
    content = (folder / STATIC).read_bytes()
    (folder / STATIC).write_bytes(content[:-1000])
    edit_and_reseal(folder)
    with pytest.raises(JeirtError, match=r"static_encoder.safetensors: truncated or corrupt: tensor 'table' would end"):
        Router.load(folder)
    (folder / STATIC).write_bytes(content[:5])
    edit_and_reseal(folder)
    with pytest.raises(JeirtError, match=r"static_encoder.safetensors: truncated \(5 bytes"):
        Router.load(folder)


def test_saving_with_a_static_file_the_graph_does_not_read_writes_nothing(tmp_path: Path) -> None:
    other = copy_router(SHIPPED, tmp_path / "other")
    _rewrite_static(other, _moved)
    router = Router.load(SHIPPED, threads=1)
    with pytest.raises(JeirtError, match="reads bytes .* but the tensor lies at"):
        router.save(tmp_path / "saved", static_encoder=other / STATIC)
    assert not (tmp_path / "saved").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["other"]  # no staging folder left behind
    router.save(tmp_path / "saved")  # the router's own pair still saves, and loads
    assert Router.load(tmp_path / "saved").encode(["x"]).vectors.shape == (1, router.dim)


def _relocate(folder: Path, location: str, extra: tuple[tuple[str, str], ...] = ()) -> None:
    """Point the graph's table at `location` (and add further external-data entries), then re-seal the folder."""
    onnx = pytest.importorskip("onnx")
    model = onnx.load(str(folder / "encoder.onnx"), load_external_data=False)
    table = next(init for init in model.graph.initializer if init.name == "table")
    for entry in table.external_data:
        if entry.key == "location":
            entry.value = location
    for key, value in extra:
        table.external_data.add(key=key, value=value)
    (folder / "encoder.onnx").write_bytes(model.SerializeToString())
    edit_and_reseal(folder)


@pytest.mark.parametrize(
    "location", ["../static_encoder.safetensors", "/etc/passwd", "./static_encoder.safetensors", "tokenizer.json"]
)
def test_external_data_may_name_only_the_static_file(tmp_path: Path, location: str) -> None:
    folder = copy_router(SHIPPED, tmp_path / "r")
    _relocate(folder, location)
    with pytest.raises(JeirtError, match=f"tensor 'table': reads its data from '{location}'; only '{STATIC}'"):
        Router.load(folder, fast_path=False)


def test_external_data_with_keys_of_its_own_is_refused(tmp_path: Path) -> None:
    folder = copy_router(SHIPPED, tmp_path / "r")
    _relocate(folder, STATIC, (("checksum", "0"),))
    with pytest.raises(JeirtError, match=r"external data must give exactly \['location', 'offset', 'length'\]"):
        Router.load(folder)
    folder = copy_router(SHIPPED, tmp_path / "underscore")
    onnx = pytest.importorskip("onnx")
    model = onnx.load(str(folder / "encoder.onnx"), load_external_data=False)
    table = next(init for init in model.graph.initializer if init.name == "table")
    offset = next(entry for entry in table.external_data if entry.key == "offset")
    offset.value = offset.value[:-1] + "_" + offset.value[-1:]  # Python's int() would read it, ONNX Runtime not
    (folder / "encoder.onnx").write_bytes(model.SerializeToString())
    edit_and_reseal(folder)
    with pytest.raises(JeirtError, match="external offset/length must be plain decimal numbers"):
        Router.load(folder)
    folder = copy_router(SHIPPED, tmp_path / "twice")
    _relocate(folder, STATIC, (("location", "../elsewhere"),))  # one reader would take the first, another the last
    with pytest.raises(JeirtError, match="not a readable ONNX graph .*gives external data key 'location' twice"):
        Router.load(folder)


def test_a_graph_reading_external_data_without_a_static_file_is_refused(tmp_path: Path) -> None:
    folder = copy_router(SHIPPED, tmp_path / "r")
    (folder / STATIC).unlink()
    edit_and_reseal(folder, lambda manifest: manifest["files"].pop("static_encoder"))
    with pytest.raises(JeirtError, match="router.json lists no static encoder file"):
        Router.load(folder)


def test_external_data_anywhere_in_the_graph_is_found(tmp_path: Path) -> None:
    """Not only initializers: a Constant node's tensor inside a subgraph is an external reference too."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    value = numpy_helper.from_array(np.zeros(2, dtype=np.float32), "hidden")
    value.ClearField("raw_data")
    value.data_location = TensorProto.EXTERNAL
    value.external_data.add(key="location", value="../secret")
    branch = helper.make_graph(
        [helper.make_node("Constant", [], ["y"], value=value)], "branch", [],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    node = helper.make_node("If", ["c"], ["y"], then_branch=branch, else_branch=branch)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    path = tmp_path / "graph.onnx"
    path.write_bytes(helper.make_model(graph).SerializeToString())
    found = external_tensors(path)
    assert [(t.name, t.entries) for t in found] == [("hidden", {"location": "../secret"})] * 2
    assert onnx.load(str(path), load_external_data=False).graph.node[0].op_type == "If"
