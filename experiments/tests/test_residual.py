"""The per-LLM feature residual (JeirtConfig.feature_residual, an evaluation setting): off by default, its logits
are the joint geometry's plus w_k·(e − μ)/σ everywhere they are computed, a strong ridge leaves plain JE-IRT, it
learns per-LLM preferences a small d cannot hold, bad strengths are refused, and no router is written with one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

import torch
from jeirt_lite_training.fit import mean_bce
from jeirt_lite_training.model import JeirtPredictor
from jeirt_lite_training.router_writer import export_trained
from jeirt_lite_training.types import Responses

from experiments.ensemble_eval import logit_grid

K = 4


def _toy(n_q: int = 160, seed: int = 0) -> tuple[np.ndarray, Responses, Responses]:
    """LLM j is right when coordinate j of the question's embedding is positive: K directions, one per LLM."""
    rng = np.random.default_rng(seed)
    emb = rng.normal(size=(n_q, 8)).astype(np.float32)
    question, llm = (a.ravel().astype(np.int64) for a in np.meshgrid(np.arange(n_q), np.arange(K), indexing="ij"))
    cells = Responses(question, llm, (emb[question, llm] > 0).astype(np.float32))
    return emb, cells.subset(question < 120), cells.subset(question >= 120)


def _fit(emb: np.ndarray, train: Responses, val: Responses, **hyper: object) -> JeirtPredictor:
    settings = {"dim": 6, "dropout": 0.0, "seed": 0, "max_epochs": 8, "batch_size": 64, **hyper}
    return JeirtPredictor(**settings).fit(emb, train, val, K)


def test_there_is_no_residual_by_default() -> None:
    emb, train, val = _toy()
    predictor = _fit(emb, train, val)
    assert predictor.config.feature_residual is None
    assert predictor.model is not None and predictor.model.residual is None
    assert not any("residual" in key for key in predictor.model.state_dict())
    assert predictor.residual_offsets(emb) is None


def test_the_logits_are_the_geometry_plus_the_standardised_residual_everywhere() -> None:
    emb, train, val = _toy()
    predictor = _fit(emb, train, val, feature_residual=1.0)
    model = predictor.model
    assert model is not None and model.residual is not None
    weight = model.residual.weight.detach().numpy().astype(np.float64)
    assert np.abs(weight).max() > 1e-3  # it trained
    seen = emb[np.unique(train.question)].astype(np.float64)
    z = (emb - seen.mean(axis=0)) / (seen.std(axis=0, ddof=1) + 1e-6)
    q = predictor.question_vectors(emb).astype(np.float64)
    norm = np.linalg.norm(q, axis=1, keepdims=True)
    expected = q @ predictor.llm_vectors.astype(np.float64).T / norm - norm + z @ weight.T
    got = predictor.predict_logits(emb, val.question, val.llm)
    np.testing.assert_allclose(got, expected[val.question, val.llm], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(logit_grid(predictor, emb), expected, rtol=1e-4, atol=1e-4)
    p = 1.0 / (1.0 + np.exp(-got))
    own = -np.mean(val.correct * np.log(p) + (1 - val.correct) * np.log(1 - p))
    assert mean_bce(model, torch.from_numpy(emb), val) == pytest.approx(own, abs=1e-5)
    assert predictor.best_val_loss == pytest.approx(mean_bce(model, torch.from_numpy(emb), val), abs=1e-6)


def test_a_strong_ridge_leaves_plain_je_irt() -> None:
    emb, train, val = _toy()
    plain = _fit(emb, train, val)
    held = _fit(emb, train, val, feature_residual=1e9)
    assert held.model is not None and held.model.residual is not None
    assert float(held.model.residual.weight.detach().abs().max()) < 1e-4
    np.testing.assert_allclose(held.predict_logits(emb, val.question, val.llm),
                               plain.predict_logits(emb, val.question, val.llm), atol=1e-3)


def test_it_learns_per_llm_preferences_that_a_small_d_cannot_hold() -> None:
    emb, train, val = _toy()
    plain = _fit(emb, train, val, dim=1, max_epochs=30)
    with_residual = _fit(emb, train, val, dim=1, max_epochs=30, feature_residual=1.0)
    assert with_residual.best_val_loss < plain.best_val_loss - 0.05


@pytest.mark.parametrize("strength", [0.0, -1.0, float("inf"), float("nan")])
def test_bad_strengths_are_refused(strength: float) -> None:
    emb, train, val = _toy()
    with pytest.raises(ValueError, match="feature_residual"):
        _fit(emb, train, val, feature_residual=strength)


def test_no_router_is_written_with_a_residual(tmp_path: Path) -> None:
    emb, train, val = _toy()
    predictor = _fit(emb, train, val, feature_residual=1.0)
    with pytest.raises(ValueError, match="feature_residual"):
        export_trained(None, predictor, tmp_path / "router", metrics={}, training={},  # type: ignore[arg-type]
                       reference_parts=(np.arange(3), np.arange(3)), learned_from=np.arange(3))
    assert not (tmp_path / "router").exists()
