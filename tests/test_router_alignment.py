"""The optional reference file: save/load, validation (missing, hash, shape), Router.alignment, old routers."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from jeirt_lite import EncodedQuestions, JeirtError, Router
from jeirt_lite.analysis import alignment_scores
from jeirt_lite.artifact import REFERENCE_FILE, load_artifact, save_artifact
from tiny_router import edit_and_reseal

TEXTS = ["what is the derivative of a function", "which court rules on a contract", "how many prime number"]


def _with_reference(source: Path, target: Path, reference: np.ndarray, threshold: float = 0.5,
                    center: np.ndarray | None = None) -> Path:
    artifact = load_artifact(source)
    return save_artifact(
        target, llm_names=artifact.llm_names, llm_vectors=artifact.llm_vectors,
        tokenizer_json=artifact.tokenizer_path, encoder_onnx=artifact.encoder_path, encoder=artifact.encoder,
        reference_directions=reference, alignment={"threshold": threshold, "percentile": 5.0},
        reference_center=center,
    )


@pytest.fixture()
def aligned_router(tiny_router_path: Path, tmp_path: Path) -> Path:
    router = Router.load(tiny_router_path, threads=1)
    center = np.full(router.dim, 0.25, dtype=np.float32)
    reference = router.encode(TEXTS[:2], features=False).vectors - center
    return _with_reference(tiny_router_path, tmp_path / "aligned",
                           reference / np.linalg.norm(reference, axis=1, keepdims=True), center=center)


def test_alignment_scores_and_flags(aligned_router: Path) -> None:
    router = Router.load(aligned_router, threads=1)
    assert router.has_alignment
    assert router.manifest["alignment"]["n_reference"] == 2
    vectors = router.encode(TEXTS, features=False).vectors
    result = router.alignment(TEXTS)
    center = router._artifact.reference_center
    assert center is not None and np.all(center == 0.25)
    want = alignment_scores(vectors, router._artifact.reference_directions, center=center)
    np.testing.assert_allclose(result.scores, want, rtol=1e-6)
    np.testing.assert_array_equal(result.in_distribution, result.scores >= 0.5)
    assert result.threshold == 0.5
    np.testing.assert_allclose(router.alignment(EncodedQuestions(vectors)).scores, result.scores)


def test_old_router_says_alignment_is_unavailable(tiny_router_path: Path) -> None:
    router = Router.load(tiny_router_path, threads=1)
    assert not router.has_alignment
    with pytest.raises(JeirtError, match="no reference directions"):
        router.alignment(TEXTS)


def test_router_save_keeps_the_reference(aligned_router: Path, tmp_path: Path) -> None:
    router = Router.load(aligned_router, threads=1)
    copy = Router.load(router.remove_llm(router.llms[0]).save(tmp_path / "copy"), threads=1)
    assert copy.has_alignment
    np.testing.assert_allclose(copy.alignment(TEXTS).scores, router.alignment(TEXTS).scores)
    assert copy.manifest["alignment"]["threshold"] == 0.5


def test_missing_reference_file(aligned_router: Path) -> None:
    (aligned_router / REFERENCE_FILE).unlink()
    with pytest.raises(JeirtError, match=f"{REFERENCE_FILE}: missing"):
        load_artifact(aligned_router)


def test_reference_hash_mismatch(aligned_router: Path, tiny_router_path: Path, tmp_path: Path) -> None:
    other = _with_reference(tiny_router_path, tmp_path / "other", np.ones((3, load_artifact(tiny_router_path).dim)))
    shutil.copyfile(other / REFERENCE_FILE, aligned_router / REFERENCE_FILE)
    with pytest.raises(JeirtError, match="sha256"):
        load_artifact(aligned_router)


def test_reference_of_wrong_shape_is_refused_on_save_and_load(aligned_router: Path, tiny_router_path: Path,
                                                               tmp_path: Path) -> None:
    dim = load_artifact(tiny_router_path).dim
    with pytest.raises(JeirtError, match=r"shape \(R >= 1"):
        _with_reference(tiny_router_path, tmp_path / "bad", np.ones((3, dim + 1)))
    # A file of the wrong width whose hash is recorded and bound: caught by the shape check on load.
    from safetensors.numpy import save

    wide = {"reference_directions": np.ones((2, dim + 2), np.float32), "reference_center": np.zeros(dim, np.float32)}
    (aligned_router / REFERENCE_FILE).write_bytes(save(wide))
    edit_and_reseal(aligned_router)
    with pytest.raises(JeirtError, match=re.escape(f"must have shape (R >= 1, {dim}), got (2, {dim + 2})")):
        load_artifact(aligned_router)


def test_alignment_block_without_file_and_bad_threshold(aligned_router: Path, tiny_router_path: Path,
                                                         tmp_path: Path) -> None:
    manifest = json.loads((aligned_router / "router.json").read_text())
    del manifest["files"]["reference"]
    (aligned_router / "router.json").write_text(json.dumps(manifest))
    with pytest.raises(JeirtError, match="the alignment block and files.reference go together"):
        load_artifact(aligned_router)
    with pytest.raises(JeirtError, match="threshold must be a finite number"):
        _with_reference(tiny_router_path, tmp_path / "nan", np.ones((2, load_artifact(tiny_router_path).dim)),
                        threshold=float("nan"))
