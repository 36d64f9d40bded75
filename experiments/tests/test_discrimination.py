"""The per-question discrimination (JeirtConfig.discrimination, an evaluation setting) and the measures of the one
the plain geometry holds (experiments.discrimination_eval): off by default; on, the logit is s·q̂·m − ‖q‖ and is
also what the (d + 1)-wide question vectors score in the plain formula, the LLMs' appended coordinate stays 0, it
learns a scale a one-dimensional geometry cannot hold, and no router is written with it."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

import torch
from jeirt_lite_training.model import JeirtPredictor
from jeirt_lite_training.pipeline import export_trained
from jeirt_lite_training.types import Responses

from experiments.discrimination_eval import discrimination_measures, row_correlations, span_basis

K = 8


def _toy(n_q: int = 600, seed: int = 0) -> tuple[np.ndarray, Responses, Responses]:
    """A 2PL: abilities θ_k spread over the LLMs, each question's discrimination 0.1 or 4 by the sign of its first
    embedding coordinate, answers drawn from sigmoid(a_q·θ_k − b_q)."""
    rng = np.random.default_rng(seed)
    emb = rng.normal(size=(n_q, 6)).astype(np.float32)
    theta = np.linspace(-1.5, 1.5, K)
    a = np.where(emb[:, 0] > 0, 4.0, 0.1)
    b = 0.5 * emb[:, 1]
    question, llm = (v.ravel().astype(np.int64) for v in np.meshgrid(np.arange(n_q), np.arange(K), indexing="ij"))
    p = 1.0 / (1.0 + np.exp(-(a[question] * theta[llm] - b[question])))
    cells = Responses(question, llm, (rng.random(len(p)) < p).astype(np.float32))
    cut = int(0.75 * n_q)
    return emb, cells.subset(question < cut), cells.subset(question >= cut)


def _fit(emb: np.ndarray, train: Responses, val: Responses, **hyper: object) -> JeirtPredictor:
    settings = {"dim": 4, "dropout": 0.0, "seed": 0, "max_epochs": 40, "batch_size": 64, **hyper}
    return JeirtPredictor(**settings).fit(emb, train, val, K)


def test_there_is_no_discrimination_by_default() -> None:
    emb, train, val = _toy(n_q=80)
    predictor = _fit(emb, train, val, max_epochs=2)
    assert predictor.config.discrimination is False
    assert predictor.model is not None
    assert not any("discrimination" in key for key in predictor.model.state_dict())
    assert predictor.question_vectors(emb).shape[1] == predictor.llm_vectors.shape[1] == 4


def test_the_logit_is_the_scaled_ability_minus_the_difficulty_and_what_the_plain_formula_scores() -> None:
    emb, train, val = _toy()
    predictor = _fit(emb, train, val, discrimination=True, max_epochs=10)
    model = predictor.model
    assert model is not None
    m = predictor.llm_vectors.astype(np.float64)
    assert m.shape == (K, 5)
    assert np.all(m[:, -1] == 0.0)  # trained, yet no LLM moved along the question's own coordinate
    assert float(np.abs(m[:, :-1]).max()) > 0.1
    with torch.inference_mode():
        e = torch.from_numpy(emb)
        hidden = model.adapter.net[:-1](e)
        q = model.adapter.net[-1](hidden).double().numpy()
        s = np.cos(0.5 * math.pi / (1.0 + np.exp(-model.adapter.discrimination(hidden).double().numpy())))
    assert s.std() > 1e-3  # the head trained away from its start, differently per question
    norm = np.linalg.norm(q, axis=1, keepdims=True)
    expected = s * (q @ m[:, :-1].T) / norm - norm
    got = predictor.predict_logits(emb, val.question, val.llm)
    np.testing.assert_allclose(got, expected[val.question, val.llm], rtol=1e-4, atol=1e-4)
    wide = predictor.question_vectors(emb).astype(np.float64)  # (n, d + 1): what a router would store
    wide_norm = np.linalg.norm(wide, axis=1, keepdims=True)
    np.testing.assert_allclose(wide_norm, norm, rtol=1e-5)
    np.testing.assert_allclose(wide @ m.T / wide_norm - wide_norm, expected, rtol=1e-4, atol=1e-4)


def test_it_learns_a_scale_that_one_dimension_cannot_hold() -> None:
    emb, train, val = _toy()
    plain = _fit(emb, train, val, dim=1)
    with_scale = _fit(emb, train, val, dim=1, discrimination=True)
    assert with_scale.best_val_loss < plain.best_val_loss - 0.02


def test_no_router_is_written_with_it(tmp_path: Path) -> None:
    emb, train, val = _toy(n_q=80)
    predictor = _fit(emb, train, val, discrimination=True, max_epochs=2)
    with pytest.raises(ValueError, match="discrimination"):
        export_trained(None, predictor, tmp_path / "router", metrics={}, training={},  # type: ignore[arg-type]
                       reference_parts=(np.arange(3), np.arange(3)), learned_from=np.arange(3))
    assert not (tmp_path / "router").exists()


def test_the_share_in_the_llms_span_and_the_spread_of_abilities() -> None:
    m = np.array([[2.0, 0.0, 0.0], [0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])  # centred, they span the first axis only
    assert span_basis(m).shape == (1, 3)
    q = np.array([[3.0, 0.0, 0.0], [0.0, 5.0, 0.0], [1.0, 1.0, 0.0]])
    measures = discrimination_measures(q, m)
    np.testing.assert_allclose(measures["in_span"], [1.0, 0.0, 1 / math.sqrt(2)], atol=1e-12)
    np.testing.assert_allclose(measures["spread"], np.std([2.0, 0.0, 1.0]) * np.array([1.0, 0.0, 1 / math.sqrt(2)]))
    correlation = row_correlations(measures["ability"], np.array([1.0, -1.0, 0.0]))
    assert correlation[0] > 0 and correlation[1] == 0.0 and correlation[2] > 0
    assert row_correlations(measures["ability"], np.array([-1.0, 1.0, 0.0]))[0] < 0


@pytest.mark.parametrize(("q", "m", "problem"), [
    (np.ones((2, 3)), np.ones((4, 2)), "must be"),
    (np.zeros((1, 3)), np.ones((4, 3)), "zero"),
])
def test_bad_vectors_are_named(q: np.ndarray, m: np.ndarray, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        discrimination_measures(q, m)
