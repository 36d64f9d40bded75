"""New routers carry the alignment reference: exported from a short real run, loaded by the runtime, and the
threshold flags about the chosen share of validation questions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from jeirt_lite import Router  # noqa: E402
from jeirt_lite_training.pipeline import fit_and_export  # noqa: E402
from jeirt_lite_training.prepared import prepare  # noqa: E402
from jeirt_lite_training.reference import alignment_reference  # noqa: E402
from test_training_end_to_end import write_slice  # noqa: E402


def test_alignment_reference_threshold_is_the_validation_percentile() -> None:
    rng = np.random.default_rng(0)
    train = rng.normal(size=(300, 8)) + 3.0  # a common offset: directions are taken around the training mean
    reference, center, block = alignment_reference(train, rng.normal(size=(200, 8)) + 3.0, percentile=10.0)
    assert reference is not None and center is not None and block is not None
    np.testing.assert_allclose(center, train.mean(axis=0), rtol=1e-5)
    assert reference.shape == (300, 8) and block["percentile"] == 10.0
    from jeirt_lite.analysis import alignment_scores

    scores = alignment_scores(rng.normal(size=(200, 8)) + 3.0, reference, center=center)
    assert 0.0 < np.mean(scores < block["threshold"]) < 0.3


def test_alignment_reference_of_fewer_questions_than_top_k_loads() -> None:
    # A router of a few questions: a top_k above the directions' number is one the router refuses to load.
    from jeirt_lite._alignment import TOP_K
    from jeirt_lite._manifest import parse_alignment

    rng = np.random.default_rng(0)
    reference, _, block = alignment_reference(rng.normal(size=(TOP_K - 1, 8)), rng.normal(size=(3, 8)))
    assert reference is not None and block is not None
    assert block["top_k"] == TOP_K - 1
    assert parse_alignment({**block, "n_reference": len(reference)}, "router.json").top_k == TOP_K - 1


def test_exported_router_carries_alignment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, encoder_cache: str
) -> None:
    monkeypatch.setenv("JEIRT_CACHE", encoder_cache)
    torch.set_num_threads(2)
    prep = prepare(write_slice(tmp_path / "slice", 150), split_seed=0, progress=False)
    result = fit_and_export(prep, tmp_path / "router", progress=False, dim=16, max_epochs=3, seed=0)
    router = Router.load(result.router_path, threads=1)
    assert router.has_alignment
    block = router.manifest["alignment"]
    assert block["n_reference"] == len(prep.split.train) and block["percentile"] == 5.0
    val_texts = [prep.data.texts[i] for i in prep.split.val]
    flags = router.alignment(val_texts).in_distribution
    assert flags.mean() == pytest.approx(0.95, abs=1.5 / len(val_texts) + 1e-3)
    # The threshold is the validation questions' 5th percentile, as the router scores them (not the training ones').
    scores = router.alignment(val_texts).scores
    assert block["threshold"] == pytest.approx(float(np.percentile(scores, 5.0)), abs=1e-4)
