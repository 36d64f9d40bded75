"""Onboarding with a correction on the encoder's features: the fit, the kernels' offsets and the router folder."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from jeirt_lite import EncodedQuestions, JeirtError, Router, _correction_grid, kernels
from jeirt_lite._correction_grid import (
    INTERCEPT_COLUMN,
    MIN_WEIGHT,
    VECTOR_ALONE,
    base_logits,
    evidence_weights,
    like_the_routers_share,
    standardised_design,
    stratified_folds,
)
from jeirt_lite._corrections import OnboardingFit, fit_onboarding
from jeirt_lite._feature_offsets import FeatureCorrections, parse_corrections
from jeirt_lite._onboard_router import check_features, onboarding_record
from jeirt_lite._onboarding import fit_llm_vector
from jeirt_lite._ridge import ridge_logistic, ridge_path
from tiny_router import refusals_of_an_optional_table


def _auc(y: np.ndarray, s: np.ndarray) -> float:
    pos, neg = s[y == 1], s[y == 0]
    return float((pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean())


def _problem(seed: int, n: int, feature_effect: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Questions (n, 8), features (n, 16), the true per-question logit and sampled answers."""
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(n, 8)) * 0.5
    f = rng.normal(size=(n, 16))
    f /= np.linalg.norm(f, axis=1, keepdims=True)
    w = np.zeros(16)
    w[:3] = feature_effect
    logit = base_logits(q, rng.normal(size=8)) + f @ w
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(np.float64)
    return q, f, logit, y


def test_a_feature_effect_is_learned_and_predicts_unseen_questions_better() -> None:
    q, f, logit, y = _problem(0, 1600, 6.0)
    train, test = slice(0, 400), slice(400, None)
    fit = fit_onboarding(q[train], f[train], y[train], prior_mean=np.zeros(8))
    assert fit.weights is not None and fit.report["correction"] == "on"
    assert fit.report["cv_auc"] > fit.report["cv_auc_vector_only"]  # type: ignore[operator]
    corrected = base_logits(q[test], fit.vector.astype(np.float64)) + f[test] @ fit.weights + fit.bias
    alone = base_logits(q[test], fit_llm_vector(q[train], y[train]).astype(np.float64))
    assert _auc(y[test], corrected) > _auc(y[test], alone) + 0.05
    assert np.corrcoef(f[test] @ fit.weights, f[test][:, :3].sum(axis=1))[0, 1] > 0.8


def test_without_a_feature_effect_the_fit_stays_close_to_the_vector_alone() -> None:
    q, f, _, y = _problem(1, 400, 0.0)
    fit = fit_onboarding(q, f, y, prior_mean=np.zeros(8))
    plain = fit_llm_vector(q, y)
    np.testing.assert_allclose(fit.vector, plain, atol=1e-6)
    offsets = np.zeros(len(y)) if fit.weights is None else f @ fit.weights + fit.bias
    assert np.std(offsets) < 0.15  # switched off, or shrunk to almost nothing


def test_too_few_answers_of_one_kind_leave_the_correction_off() -> None:
    q, f, _, _ = _problem(2, 40, 3.0)
    y = np.zeros(40)
    y[:3] = 1
    fit = fit_onboarding(q, f, y, prior_mean=np.zeros(8))
    assert fit.weights is None and "fewer than" in str(fit.report["correction"])


def test_answers_all_to_one_question_fit_the_vector_with_the_correction_off() -> None:
    # The folds hold a question's answers together: one of them would fit the vector on no answer, which was
    # refused as "need at least 2 answers to fit an LLM, got 0" whatever the answers given.
    q, f, _, _ = _problem(3, 1, 0.0)
    fit = fit_onboarding(np.repeat(q, 12, axis=0), np.repeat(f, 12, axis=0), np.tile([1.0, 0.0], 6),
                         prior_mean=np.zeros(8))
    assert fit.weights is None and fit.report["correction"] == _correction_grid.ONE_QUESTION
    assert fit.report["answers"] == 12 and np.isfinite(fit.vector).all()


def test_kernels_add_offsets_before_the_calibration() -> None:
    rng = np.random.default_rng(3)
    q, m = rng.normal(size=(37, 5)).astype(np.float32), rng.normal(size=(4, 5)).astype(np.float32)
    offsets = rng.normal(size=(37, 4)).astype(np.float32)
    scale, bias = np.array([1.0, 0.5, 2.0, 1.5], np.float32), np.array([0.0, 0.1, -0.2, 0.3], np.float32)
    norms = np.linalg.norm(q, axis=1, keepdims=True)
    want = 1 / (1 + np.exp(-(scale * ((q @ m.T) / norms - norms + offsets) + bias)))
    got = kernels.probabilities(q, m, scale=scale, bias=bias, offsets=offsets)
    np.testing.assert_allclose(got, want, atol=1e-5)
    np.testing.assert_allclose(kernels.mean_probability(q, m, offsets=offsets), (
        1 / (1 + np.exp(-((q @ m.T) / norms - norms + offsets)))).mean(axis=0), atol=1e-5)
    index, _ = kernels.top_k(q, m, 1, offsets=offsets)
    np.testing.assert_array_equal(index[:, 0], np.argmax((q @ m.T) / norms - norms + offsets, axis=1))
    with pytest.raises(JeirtError, match=r"offsets must have shape \(37, 4\)"):
        kernels.probabilities(q, m, offsets=offsets[:3])
    offsets[5, 2] = np.nan
    with pytest.raises(JeirtError, match="question row 5, LLM 2"):
        kernels.probabilities(q, m, offsets=offsets)


@pytest.fixture(scope="module")
def grown() -> tuple[Router, np.ndarray, np.ndarray]:
    """The shipped router plus an LLM whose answers follow the encoder's features more than the router's space."""
    router = Router.load(threads=1).with_neighbours(None)  # the corrections alone (votes: test_neighbours.py)
    rng = np.random.default_rng(4)
    texts = [f"question {i} about {w} and {v}" for i, (w, v) in enumerate(rng.choice(
        ["enzyme", "integral", "court", "market", "circuit", "poem", "python", "war"], size=(300, 2)))]
    vectors, features = router.encode(texts, features=True)
    assert features is not None and features.shape == (300, router.manifest["encoder"]["feature_dim"])
    direction = rng.normal(size=features.shape[1])
    signal = (features - features.mean(axis=0)) @ direction
    y = (signal > np.median(signal)).astype(int)
    return router.add_llm("feature-llm", EncodedQuestions(vectors, features), y, cost=3.0), vectors, features


def test_the_router_applies_the_correction_everywhere(grown: tuple[Router, np.ndarray, np.ndarray]) -> None:
    router, vectors, features = grown
    assert router.corrections is not None and router.corrections.llms == ("feature-llm",)
    record = router.manifest["onboarded"][-1]
    assert record["correction"] == "on" and record["cv_auc"] > record["cv_auc_vector_only"]
    assert 0.0 <= record["alignment"]["in_distribution_share"] <= 1.0
    p = router.predict_proba(EncodedQuestions(vectors, features))
    corrections = router.corrections
    new_logit = base_logits(vectors.astype(np.float64), router.llm_vectors[-1].astype(np.float64)) + (
        features @ corrections.weights[0] + corrections.bias[0])
    assert router.calibration is not None and router.calibration.bias[-1] == 0.0
    scale = router.calibration.scale[-1]  # the fit's router scale s̄, kept as the new LLM's calibration
    assert scale == pytest.approx(record["router_scale"])
    np.testing.assert_allclose(p[:, -1], 1 / (1 + np.exp(-scale * new_logit)), atol=1e-4)
    without = router.select_llms(router.llms[:-1])
    assert without.corrections is None
    np.testing.assert_allclose(p[:, :-1], without.predict_proba(EncodedQuestions(vectors)), atol=1e-6)
    np.testing.assert_allclose(
        list(router.forecast(EncodedQuestions(vectors, features)).values()), p.mean(axis=0), atol=1e-5
    )
    best = router.route(EncodedQuestions(vectors, features), k=1).indices[:, 0]
    np.testing.assert_array_equal(best, np.argmax(p, axis=1))
    with pytest.raises(JeirtError, match="need the encoder.s features"):
        router.predict_proba(EncodedQuestions(vectors))


def test_corrections_survive_save_and_load_and_are_hash_checked(
    grown: tuple[Router, np.ndarray, np.ndarray], tmp_path: Path
) -> None:
    router, vectors, features = grown
    path = router.save(tmp_path / "grown")
    loaded = Router.load(path, threads=1)
    assert loaded.corrections is not None and loaded.corrections.llms == ("feature-llm",)
    np.testing.assert_array_equal(
        loaded.predict_proba(EncodedQuestions(vectors, features)), router.predict_proba(EncodedQuestions(vectors, features))
    )
    texts = ["What is the derivative of x**3?", "Which court hears appeals?"]
    np.testing.assert_allclose(
        loaded.predict_proba(texts), loaded.predict_proba(EncodedQuestions(*loaded.encode(texts, features=True))), atol=1e-6
    )
    assert loaded.remove_llm("feature-llm").corrections is None
    (path / "corrections.safetensors").write_bytes(b"not a tensor file")
    with pytest.raises(JeirtError, match="corrections.safetensors: sha256"):
        Router.load(path)


def test_a_renamed_llm_keeps_its_correction_and_record_and_saves(
    grown: tuple[Router, np.ndarray, np.ndarray], tmp_path: Path
) -> None:
    router, vectors, features = grown
    renamed = router.rename_llms({"feature-llm": "feature-model"})
    assert renamed.corrections is not None and renamed.corrections.llms == ("feature-model",)
    assert renamed.manifest["onboarded"][-1]["name"] == "feature-model"
    assert router.manifest["onboarded"][-1]["name"] == "feature-llm"  # the original is unchanged
    encoded = EncodedQuestions(vectors, features)
    np.testing.assert_array_equal(renamed.predict_proba(encoded), router.predict_proba(encoded))
    loaded = Router.load(renamed.save(tmp_path / "renamed"), threads=1)
    np.testing.assert_array_equal(loaded.predict_proba(encoded), router.predict_proba(encoded))
    assert loaded.costs["feature-model"] == 3.0


def test_a_second_corrected_llm_keeps_the_first_ones_correction(
    grown: tuple[Router, np.ndarray, np.ndarray], tmp_path: Path
) -> None:
    router, vectors, features = grown
    y = (features[:, 1] > np.median(features[:, 1])).astype(int)
    twice = router.add_llm("feature-llm-2", EncodedQuestions(vectors, features), y)
    assert twice.corrections is not None and twice.corrections.llms == ("feature-llm", "feature-llm-2")
    assert twice.manifest["onboarded"][-1]["correction"] == "on"
    np.testing.assert_array_equal(twice.corrections.weights[0], router.corrections.weights[0])  # type: ignore[union-attr]
    before = router.predict_proba(EncodedQuestions(vectors, features))
    after = Router.load(twice.save(tmp_path / "twice"), threads=1).predict_proba(EncodedQuestions(vectors, features))
    np.testing.assert_allclose(after[:, :-1], before, atol=1e-6)


def _parsed(weights: np.ndarray, bias: np.ndarray, names: tuple[str, ...] = ("a", "b")) -> FeatureCorrections:
    return parse_corrections({"llms": list(names), "feature_dim": 3}, {"weights": weights, "bias": bias},
                             ["a", "b", "c"], 3, "corrections.safetensors")


def test_stored_corrections_are_read_only_and_checked() -> None:
    parsed = _parsed(np.ones((2, 3), np.float32), np.zeros(2, np.float32))
    assert not parsed.weights.flags.writeable and not parsed.bias.flags.writeable
    bad = {
        "one row per corrected LLM": [(np.ones((1, 3), np.float32), np.zeros(2, np.float32)),
                                      (np.ones((3, 3), np.float32), np.zeros(2, np.float32)),
                                      (np.ones((2, 3), np.float32), np.zeros(1, np.float32)),
                                      (np.ones((2, 3), np.float32), np.zeros((2, 1), np.float32)),
                                      (np.ones((2, 3, 1), np.float32), np.zeros(2, np.float32)),
                                      (np.ones(2, np.float32), np.zeros(2, np.float32))],
        "must be float32": [(np.ones((2, 3)), np.zeros(2, np.float32)), (np.ones((2, 3), np.float32), np.zeros(2)),
                            (np.ones((2, 3), np.float16), np.zeros(2, np.float32)),
                            (np.ones((2, 3), np.float32), np.zeros(2, np.float16))],
        "must be finite": [(np.full((2, 3), np.nan, np.float32), np.zeros(2, np.float32)),
                           (np.ones((2, 3), np.float32), np.array([0.0, np.inf], np.float32))],
    }
    for message, cases in bad.items():
        for weights, bias in cases:
            with pytest.raises(JeirtError, match=message):
                _parsed(weights, bias)


def test_features_of_the_wrong_shape_or_with_nan_are_named() -> None:
    corrections = _parsed(np.ones((2, 3), np.float32), np.zeros(2, np.float32))
    wrong = [np.ones((4, 2)), np.ones((4, 4)), np.ones((3, 3)), np.ones((5, 3)), np.ones(12), np.ones((4, 3, 1)),
             np.full((4, 3), "x")]
    for features in wrong:
        with pytest.raises(JeirtError, match=r"features must have shape \(4, 3\)"):
            corrections.offsets(features, ["a", "b", "c"], 4)
    features = np.ones((4, 3))
    features[1, 0], features[3, 2] = np.nan, np.inf
    with pytest.raises(JeirtError, match="features row 1 contains NaN or inf"):
        corrections.offsets(features, ["a", "b", "c"], 4)


def test_the_corrections_block_and_file_go_together_and_a_bad_table_is_named(
    grown: tuple[Router, np.ndarray, np.ndarray], tmp_path: Path
) -> None:
    router, _, _ = grown
    path = router.save(tmp_path / "grown")
    said = refusals_of_an_optional_table(path, "corrections", tmp_path)
    together = f"{path.parent}/corrections-%s: router.json's corrections block and files.corrections go together"
    assert said["block"] == together % "block"
    assert said["file"] == together % "file"
    assert said["garbage"].startswith(f"{path.parent}/corrections-garbage/corrections.safetensors: not a readable safetensors file (")


def test_score_file_streams_an_onboarded_router_with_its_correction(
    grown: tuple[Router, np.ndarray, np.ndarray], tmp_path: Path
) -> None:
    from jeirt_lite.batch import ScoreOptions, score_file

    router, _, _ = grown
    texts = [f"question {i}: which enzyme or court or integral is it" for i in range(30)]
    bank = tmp_path / "bank.csv"
    bank.write_text("text\n" + "\n".join(texts) + "\n")
    options = ScoreOptions(k=2, chunk_size=7, forecast=True)
    summary = score_file(router, input_path=bank, output=tmp_path / "scores.csv", options=options)
    assert summary.rows == 30 and summary.forecast is not None
    want = router.predict_proba(texts).mean(axis=0)
    np.testing.assert_allclose(list(summary.forecast.values()), want, atol=1e-5)
    vectors = tmp_path / "vectors.npy"
    np.save(vectors, router.encode(texts, features=False).vectors)
    with pytest.raises(JeirtError, match="score the question texts instead"):
        score_file(router, vectors_path=vectors, output=tmp_path / "v.csv", options=ScoreOptions())
    assert not (tmp_path / "v.csv").exists()


def _noisy_router_problem(seed: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Answers that follow the features only, under a router whose logit varies a lot and says nothing about them
    (question norms, the router's difficulty, drawn independently of the answers)."""
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(n, 8)) * rng.uniform(0.2, 3.0, size=(n, 1))
    f = rng.normal(size=(n, 16))
    f /= np.linalg.norm(f, axis=1, keepdims=True)
    logit = 8.0 * f[:, :2].sum(axis=1) - 0.5
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(np.float64)
    return q, f, y


def _log_loss(y: np.ndarray, logit: np.ndarray) -> float:
    return float(np.mean(np.logaddexp(0.0, logit) - y * logit))


def test_a_router_logit_that_says_nothing_is_turned_down() -> None:
    q, f, y = _noisy_router_problem(5, 2400)
    train, test = slice(0, 600), slice(600, None)
    stacked = fit_onboarding(q[train], f[train], y[train], prior_mean=np.zeros(8))
    plain = fit_onboarding(q[train], f[train], y[train], prior_mean=np.zeros(8), router_scales=(1.0,))
    assert stacked.weights is not None and plain.weights is not None
    assert stacked.router_scale < 1.0 and plain.router_scale == 1.0
    assert stacked.report["router_scale"] == stacked.router_scale
    assert stacked.report["cv_log_loss"] < plain.report["cv_log_loss"]  # type: ignore[operator]

    def logit(fit: object) -> np.ndarray:
        base = base_logits(q[test], fit.vector.astype(np.float64))  # type: ignore[attr-defined]
        return fit.router_scale * (base + f[test] @ fit.weights + fit.bias)  # type: ignore[attr-defined,no-any-return]

    assert _auc(y[test], logit(stacked)) > _auc(y[test], logit(plain)) + 0.02
    assert _log_loss(y[test], logit(stacked)) < _log_loss(y[test], logit(plain)) - 0.02


def test_a_router_that_explains_the_answers_keeps_its_whole_logit() -> None:
    q, f, _, y = _problem(6, 600, 0.0)
    fit = fit_onboarding(q, f, y, prior_mean=np.zeros(8))
    assert fit.router_scale == 1.0


def test_router_scales_outside_zero_to_one_and_strengths_not_above_zero_are_refused() -> None:
    q, f, _, y = _problem(7, 200, 1.0)
    for scales in ((1.0, 0.0), (1.0, 1.5), (1.0, -0.5), ()):
        with pytest.raises(JeirtError, match=r"router scales must be numbers in \(0, 1\]"):
            fit_onboarding(q, f, y, prior_mean=np.zeros(8), router_scales=scales)
    for strengths in ((np.inf, 0.0), (np.inf, -1.0), (np.inf, float("nan")), ()):
        with pytest.raises(JeirtError, match="correction strengths must be positive numbers"):
            fit_onboarding(q, f, y, prior_mean=np.zeros(8), strengths=strengths)
    small = fit_onboarding(q, f, y, prior_mean=np.zeros(8), strengths=(np.inf, 0.5), router_scales=(0.5,))
    assert {entry["strength"] for entry in small.report["averaged_fits"]} <= {None, 0.5}  # type: ignore[union-attr]


@pytest.mark.parametrize("calibrated", [True, False])
def test_the_router_keeps_the_scale_as_the_new_llms_calibration(calibrated: bool, tmp_path: Path) -> None:
    router = Router.load(threads=1).with_neighbours(None)  # the corrections alone (votes: test_neighbours.py)
    if not calibrated:
        router = router._with_llms(router.llms, router.llm_vectors, calibration=None)
        assert router.calibration is None
    rng = np.random.default_rng(8)
    q, small_f, y = _noisy_router_problem(8, 700)
    vectors = np.hstack([q, 0.1 * rng.normal(size=(700, router.llm_vectors.shape[1] - 8))]).astype(np.float32)
    features = np.hstack([small_f, np.zeros((700, router.manifest["encoder"]["feature_dim"] - 16))])
    grown = router.add_llm("noisy-router-llm", EncodedQuestions(vectors, features.astype(np.float32)), y)
    scale = grown.manifest["onboarded"][-1]["router_scale"]
    assert grown.calibration is not None and 0 < scale < 1
    assert grown.calibration.scale[-1] == pytest.approx(scale) and grown.calibration.bias[-1] == 0
    n = len(router.llms)
    if calibrated:
        np.testing.assert_array_equal(grown.calibration.scale[:n], router.calibration.scale)  # type: ignore[union-attr]
    else:
        np.testing.assert_array_equal(grown.calibration.scale[:n], np.ones(n, np.float32))
    corrections = grown.corrections
    assert corrections is not None
    base = base_logits(vectors.astype(np.float64), grown.llm_vectors[-1].astype(np.float64))
    want = 1 / (1 + np.exp(-scale * (base + features @ corrections.weights[0] + corrections.bias[0])))
    p = grown.predict_proba(EncodedQuestions(vectors, features))
    np.testing.assert_allclose(p[:, -1], want, atol=1e-4)
    np.testing.assert_allclose(p[:, :n], router.predict_proba(EncodedQuestions(vectors)), atol=1e-6)
    loaded = Router.load(grown.save(tmp_path / "grown"), threads=1)
    np.testing.assert_array_equal(loaded.predict_proba(EncodedQuestions(vectors, features)), p)


def test_an_uncalibrated_router_stays_so_when_the_new_llm_keeps_its_whole_logit() -> None:
    router = Router.load(threads=1).with_neighbours(None)
    router = router._with_llms(router.llms, router.llm_vectors, calibration=None)
    q, _, y = _noisy_router_problem(9, 200)
    vectors = np.hstack([q, np.zeros((200, router.llm_vectors.shape[1] - 8))]).astype(np.float32)
    grown = router.add_llm("vector-alone", EncodedQuestions(vectors), y)  # no features: no correction, scale 1
    assert grown.manifest["onboarded"][-1]["correction"].startswith("off")
    assert grown.calibration is None and grown.corrections is None


@pytest.mark.parametrize(
    ("percentile", "share", "like_router"),
    [
        (40.0, 0.7, True),  # the router flags 40% of its own questions: 70% in distribution is like them
        (49.9, 0.7, True),
        (50.0, 0.7, False),  # 50% and above is no flag rate: the default 5% applies
        (60, 0.7, False),
        (-1.0, 0.96, True),  # no flag rate either: the default's 5%, so 96% in distribution is like them
        (0.0, 0.96, False),  # flagging none of its own questions: 96% in distribution is below them
        (5.0, 0.96, True),
    ],
)
def test_the_routers_own_flag_rate_decides_whether_the_questions_are_like_its_own(
    percentile: float, share: float, like_router: bool
) -> None:
    from dataclasses import replace

    from jeirt_lite._alignment import AlignmentResult
    from jeirt_lite._manifest import freeze
    from jeirt_lite._onboard_router import with_new_llm

    router = Router.load(threads=1).with_neighbours(None)
    spec = router.manifest.alignment
    assert spec is not None
    router = router._with_llms(router.llms, router.llm_vectors,
                               alignment=replace(spec, details=freeze({"percentile": percentile})))
    n = 700
    q, small_f, y = _noisy_router_problem(10, n)
    vectors = np.hstack([q, np.zeros((n, router.llm_vectors.shape[1] - 8))]).astype(np.float32)
    features = np.hstack([small_f, np.zeros((n, router.manifest["encoder"]["feature_dim"] - 16))]).astype(np.float32)
    inside = np.arange(n) < round(share * n)
    alignment = AlignmentResult(np.where(inside, 0.9, 0.1).astype(np.float32), inside, 0.5)
    grown = with_new_llm(router, "new", vectors, y, features=features, l2=1.0, cost=None, alignment=alignment)
    assert grown.manifest["onboarded"][-1]["like_router"] is like_router


def test_fits_are_weighted_by_their_held_out_likelihood() -> None:
    y = np.array([1.0, 0.0, 1.0, 1.0])
    held_out = {
        (1.0, float("inf")): np.zeros(4),  # log-likelihood 4 log ½
        (1.0, 100.0): np.array([1.0, -1.0, 1.0, 1.0]),  # 4 log σ(1): better
        (0.5, 10.0): np.array([-9.0, 9.0, -9.0, -9.0]),  # hopeless: its weight falls below MIN_WEIGHT
    }
    weights = evidence_weights(y, held_out)
    assert set(weights) == {(1.0, float("inf")), (1.0, 100.0)}
    ratio = np.exp(4 * (np.log(1 / (1 + np.exp(-1.0))) - np.log(0.5)))
    assert weights[(1.0, 100.0)] / weights[(1.0, float("inf"))] == pytest.approx(ratio)
    assert sum(weights.values()) == pytest.approx(1.0)
    held_out[(1.0, float("inf"))] = np.array([9.0, -9.0, 9.0, 9.0])  # the vector alone far ahead: it alone is left
    held_out[(1.0, 100.0)] = np.array([-3.0, 3.0, -3.0, -3.0])
    assert evidence_weights(y, held_out) == {(1.0, float("inf")): 1.0}
    assert MIN_WEIGHT < 0.01


def test_the_stored_correction_is_exactly_the_weighted_average_of_the_fits() -> None:
    q, f, _, y = _problem(10, 300, 2.0)
    fit = fit_onboarding(q, f, y, prior_mean=np.zeros(8))
    fits = fit.report["averaged_fits"]
    assert fit.weights is not None and len(fits) > 1  # type: ignore[arg-type]
    assert sum(entry["weight"] for entry in fits) == pytest.approx(1.0, abs=1e-3)  # type: ignore[union-attr]
    design, _, _ = standardised_design(f, len(y))
    base = base_logits(q, fit.vector.astype(np.float64))
    want = np.zeros(len(y))
    for entry in fits:  # type: ignore[union-attr]
        s, strength, weight = entry["router_scale"], entry["strength"], entry["weight"]
        corrected = np.zeros(design.shape[1]) if strength is None else ridge_logistic(design, y, s * base, strength)
        want += weight * (s * base + design @ corrected)
    got = fit.router_scale * (base + f @ fit.weights + fit.bias)
    np.testing.assert_allclose(got, want, atol=5e-3)  # the report rounds the weights to 4 decimals
    assert fit.router_scale == pytest.approx(sum(e["weight"] * e["router_scale"] for e in fits), abs=1e-3)  # type: ignore[union-attr]


def _alone_weight(fit: OnboardingFit) -> float:
    fits = fit.report["averaged_fits"]
    return sum(e["weight"] for e in fits if e["strength"] is None)  # type: ignore[union-attr,misc]


def test_questions_like_the_routers_start_the_average_with_most_of_the_prior_on_the_vector_alone() -> None:
    # Equal evidence: the weights are the prior itself.
    y = np.ones(50)
    held_out = {VECTOR_ALONE: np.zeros(50), (1.0, 100.0): np.zeros(50), (0.5, 100.0): np.zeros(50)}
    assert evidence_weights(y, held_out) == pytest.approx({c: 1 / 3 for c in held_out})
    assert evidence_weights(y, held_out, 0.9) == pytest.approx(
        {VECTOR_ALONE: 0.9, (1.0, 100.0): 0.05, (0.5, 100.0): 0.05})
    for bad in (0.0, 1.0, 1.5, -0.5, float("nan")):
        with pytest.raises(ValueError, match="prior weight must be in"):
            evidence_weights(y, held_out, bad)

    q, f, _, y = _problem(1, 400, 0.0)  # no feature effect: the prior decides how much the vector alone keeps
    assert like_the_routers_share(400) == pytest.approx(0.95 - 2 * np.sqrt(0.95 * 0.05 / 400))  # 0.928
    flags = np.ones(400, dtype=bool)
    flags[:20] = False  # 95% in distribution, as the router's own questions
    own = fit_onboarding(q, f, y, prior_mean=np.zeros(8), in_distribution=flags)
    flags[:40] = False  # 90%: significantly below 95%
    unlike = fit_onboarding(q, f, y, prior_mean=np.zeros(8), in_distribution=flags)
    assert own.report["like_router"] is True and unlike.report["like_router"] is False
    assert _alone_weight(own) > 0.8 and _alone_weight(unlike) < 0.2, (_alone_weight(own), _alone_weight(unlike))
    # A router whose threshold flags 10% of its own questions counts 90% as its own kind.
    again = fit_onboarding(q, f, y, prior_mean=np.zeros(8), in_distribution=flags, percentile=10.0)
    assert again.report["like_router"] is True and _alone_weight(again) == _alone_weight(own)

    q, f, _, y = _problem(0, 400, 6.0)  # a strong feature effect: the answers outweigh the prior
    strong = fit_onboarding(q, f, y, prior_mean=np.zeros(8), in_distribution=np.ones(400, dtype=bool))
    assert strong.report["like_router"] is True and strong.weights is not None and _alone_weight(strong) == 0.0


def test_answers_on_the_routers_training_questions_fit_the_vector_but_never_the_correction() -> None:
    q, f, _, y = _problem(7, 600, 6.0)
    learned = np.zeros(600, dtype=bool)
    learned[::2] = True
    fit = fit_onboarding(q, f, y, prior_mean=np.zeros(8), learned=learned)
    assert fit.report["on_training_questions"] == 300 and fit.report["cv_answers"] == 300
    assert fit.report["correction"] == "on" and fit.weights is not None
    np.testing.assert_allclose(fit.vector, fit_llm_vector(q, y), atol=1e-6)  # m: every answer
    # The correction never reads the features of the learned questions: scrambling them changes nothing.
    scrambled = f.copy()
    scrambled[learned] = np.random.default_rng(8).normal(size=(300, 16))
    again = fit_onboarding(q, scrambled, y, prior_mean=np.zeros(8), learned=learned)
    np.testing.assert_array_equal(again.weights, fit.weights)
    assert again.bias == fit.bias and again.report == fit.report


def test_when_every_answer_is_on_a_training_question_the_fit_is_the_vector_alone() -> None:
    q, f, _, y = _problem(9, 400, 6.0)
    fit = fit_onboarding(q, f, y, prior_mean=np.zeros(8), learned=np.ones(400, dtype=bool))
    assert fit.weights is None and fit.bias == 0.0 and fit.router_scale == 1.0
    assert "400 of the 400 answers are on questions the router learned from" in str(fit.report["correction"])
    np.testing.assert_allclose(fit.vector, fit_llm_vector(q, y), atol=1e-6)
    # How well the vector alone fits is still cross-validated on every answer.
    assert fit.report["cv_answers"] == 400 and fit.report["cv_auc"] == fit.report["cv_auc_vector_only"]
    unknown = fit_onboarding(q, f, y, prior_mean=np.zeros(8))
    assert unknown.report["on_training_questions"] is None and unknown.report["correction"] == "on"
    none_seen = fit_onboarding(q, f, y, prior_mean=np.zeros(8), learned=np.zeros(400, dtype=bool))
    np.testing.assert_array_equal(none_seen.weights, unknown.weights)
    assert none_seen.report == {**unknown.report, "on_training_questions": 0}


def test_a_learned_mask_of_the_wrong_shape_or_type_is_refused() -> None:
    q, f, _, y = _problem(10, 50, 1.0)
    for bad in (np.ones(49, dtype=bool), np.ones(51, dtype=bool), np.ones((50, 1), dtype=bool),
                np.ones(50, dtype=np.int64), np.ones(50, dtype=np.float64)):
        with pytest.raises(JeirtError, match=r"learned must be a \(50,\) bool array"):
            fit_onboarding(q, f, y, prior_mean=np.zeros(8), learned=bad)


def test_the_reported_auc_counts_ties_as_half_and_is_none_for_answers_of_one_kind() -> None:
    rng = np.random.default_rng(3)
    y = (rng.random(300) < 0.4).astype(np.float64)
    tied = rng.integers(0, 5, 300).astype(np.float64) + y  # few distinct scores: many ties across the classes
    spread = rng.normal(size=300) + y
    for scores in (tied, spread, -spread):
        assert _correction_grid._auc(y, scores) == pytest.approx(_auc(y, scores), abs=1e-12)
    assert _correction_grid._auc(np.ones(6), np.arange(6.0)) is None
    assert _correction_grid._auc(np.zeros(6), np.arange(6.0)) is None


def test_the_design_centres_the_features_and_gives_their_rows_a_mean_square_norm_of_their_count() -> None:
    f = np.random.default_rng(4).normal(size=(50, 7)) * 3.0 + 2.0
    design, center, scale = standardised_design(f, 50)
    np.testing.assert_allclose(center, f.mean(axis=0))
    np.testing.assert_allclose(design[:, :-1], (f - center) * scale)
    np.testing.assert_allclose(design[:, :-1].mean(axis=0), 0.0, atol=1e-12)
    assert np.mean(np.sum(design[:, :-1] ** 2, axis=1)) == pytest.approx(7.0)
    np.testing.assert_array_equal(design[:, -1], INTERCEPT_COLUMN)
    design, center, scale = standardised_design(np.full((4, 3), 2.5), 4)  # no spread: nothing to scale
    assert scale == 1.0 and not design[:, :-1].any()


def test_a_fit_without_a_correction_has_no_offset_and_keeps_the_routers_whole_logit() -> None:
    q, f, _, y = _problem(0, 120, 0.0)  # noise features and a nearly unpenalised fit: cross-validation drops it
    fit = fit_onboarding(q, f, y, prior_mean=np.zeros(8), strengths=(np.inf, 0.01), router_scales=(1.0,))
    assert fit.report["correction"] == "off: cross-validation prefers the vector alone"
    assert fit.weights is None and fit.bias == 0.0 and fit.router_scale == 1.0 and fit.report["router_scale"] == 1.0
    # The average is the vector alone: its cross-validated scores are the vector's own.
    assert fit.report["cv_log_loss"] == fit.report["cv_log_loss_vector_only"] > 0.0  # type: ignore[operator]
    assert fit.report["cv_auc"] == fit.report["cv_auc_vector_only"]
    y[3:] = 0  # too few answers of one kind
    few = fit_onboarding(q, f, y, prior_mean=np.zeros(8))
    assert few.weights is None and few.bias == 0.0 and few.router_scale == 1.0


def test_the_report_lists_the_averaged_fits_heaviest_first() -> None:
    q, f, _, y = _problem(10, 300, 2.0)
    fits = fit_onboarding(q, f, y, prior_mean=np.zeros(8)).report["averaged_fits"]
    weights = [entry["weight"] for entry in fits]  # type: ignore[union-attr]
    assert len(weights) > 2 and weights == sorted(weights, reverse=True) and weights[0] > weights[-1]
    assert all(weight == round(weight, 4) for weight in weights)  # to 4 decimals, as the report says


def test_features_given_with_answers_are_checked_and_the_first_bad_row_is_named() -> None:
    good = np.ones((6, 3), np.float64)
    checked = check_features(good, 6, 3)
    assert checked.dtype == np.float32 and checked.shape == (6, 3)
    bad = good.copy()
    bad[2, 1], bad[4, 0] = np.nan, np.inf
    with pytest.raises(JeirtError, match=r"^features row 2 contains NaN or inf$"):
        check_features(bad, 6, 3)
    for shape in ((6, 4), (6, 2), (5, 3), (7, 3)):
        with pytest.raises(JeirtError, match=re.escape(f"features must be a numeric (6, 3) array, got shape {shape}")):
            check_features(np.ones(shape), 6, 3)
    assert check_features(np.ones((6, 1)), 6, 1).shape == (6, 1)  # one feature is enough
    with pytest.raises(JeirtError, match="exposes no features"):
        check_features(good, 6, 0)


def test_the_design_refuses_features_that_are_not_finite_rows_of_the_answers() -> None:
    for bad, rows in ((np.ones((4, 3, 1)), 4), (np.ones((5, 3)), 4), (np.ones((3, 3)), 4), (np.ones(4), 4)):
        with pytest.raises(JeirtError, match=rf"features must be a finite \({rows}, p\) array"):
            standardised_design(bad, rows)
    features = np.ones((4, 3))
    features[2, 1] = np.nan
    with pytest.raises(JeirtError, match=r"features must be a finite \(4, p\) array"):
        standardised_design(features, 4)


def test_folds_are_stratified_by_answer_and_seeded() -> None:
    y = np.array([1.0] * 23 + [0.0] * 17)
    fold = stratified_folds(y, 5, seed=4)
    assert set(fold.tolist()) == set(range(5))
    for label in (0.0, 1.0):
        counts = np.bincount(fold[y == label], minlength=5)
        assert counts.max() - counts.min() <= 1, (label, counts)
    np.testing.assert_array_equal(fold, stratified_folds(y, 5, seed=4))
    assert not np.array_equal(fold, stratified_folds(y, 5, seed=5))


def test_folds_keep_each_questions_answers_together() -> None:
    y = np.array([1.0] * 23 + [0.0] * 17)
    # Every answer its own question: the folds are those over answers, so results without repeats are unchanged.
    np.testing.assert_array_equal(stratified_folds(y, 5, 4, groups=np.arange(40)[::-1] * 3),
                                  stratified_folds(y, 5, 4))
    question = np.repeat(np.arange(20), 3)  # 20 questions, each answered three times
    labels = np.repeat((np.arange(20) % 3 == 0).astype(np.float64), 3)
    labels[1] = 1.0 - labels[1]  # questions answered both ways: their majority label stratifies them
    labels[3 * 4] = labels[3 * 7] = labels[3 * 8 + 1] = 1.0
    fold = stratified_folds(labels, 5, 2, groups=np.array([f"q{i}" for i in question]))
    for i in range(20):
        assert len(set(fold[question == i].tolist())) == 1, i
    majority = (np.arange(20) % 3 == 0)
    np.testing.assert_array_equal(fold[::3], stratified_folds(majority.astype(np.float64), 5, 2))
    for label in (False, True):
        counts = np.bincount(fold[::3][majority == label], minlength=5)
        assert counts.max() - counts.min() <= 1, (label, counts)
    # A question answered once each way counts as answered right (its share is not below one half).
    tie = stratified_folds(np.array([1.0, 0.0, 0.0, 0.0]), 2, 0, groups=np.array([0, 0, 1, 2]))
    np.testing.assert_array_equal(tie, stratified_folds(np.array([1.0, 0.0, 0.0]), 2, 0)[[0, 0, 1, 2]])


def test_answers_repeated_do_not_let_the_cross_validation_reward_memory() -> None:
    # Answers unrelated to the features, each question answered three times with its one label: folds over
    # answers score each fold on questions its fit read, so a weak ridge "predicts" them.
    rng = np.random.default_rng(5)
    q, f = rng.normal(size=(120, 8)) * 0.5, rng.normal(size=(120, 100))
    y = (rng.random(120) < 0.5).astype(np.float64)
    rows = np.repeat(np.arange(120), 3)
    grouped = fit_onboarding(q[rows], f[rows], y[rows], prior_mean=np.zeros(8), router_scales=(1.0,))
    # (equal question vectors: one question's answers)
    over_answers = fit_onboarding(q[rows], f[rows], y[rows], prior_mean=np.zeros(8), router_scales=(1.0,),
                                  groups=np.arange(360))
    assert over_answers.report["cv_auc"] > 0.9  # what the folds over answers reported: memory
    assert grouped.report["cv_auc"] < 0.65, grouped.report
    texts = np.array([f"t{i}" for i in rows])
    by_text = fit_onboarding(q[rows], f[rows], y[rows], prior_mean=np.zeros(8), router_scales=(1.0,), groups=texts)
    assert by_text.report["cv_auc"] == grouped.report["cv_auc"]
    for wrong in (np.arange(10), np.arange(400)):
        with pytest.raises(JeirtError, match=r"one key per answer \(360\)"):
            fit_onboarding(q[rows], f[rows], y[rows], prior_mean=np.zeros(8), groups=wrong)


def test_the_ridge_fits_reach_the_penalised_optimum() -> None:
    rng = np.random.default_rng(11)
    design = np.hstack([rng.normal(size=(200, 5)), np.full((200, 1), INTERCEPT_COLUMN)])
    offset = rng.normal(size=200)
    y = (rng.random(200) < 1 / (1 + np.exp(-(offset + design[:, :5] @ np.array([1.5, -1.0, 0.5, 0.0, 2.0]))))).astype(
        np.float64)

    def gradient(w: np.ndarray, strength: float) -> np.ndarray:
        return design.T @ (1 / (1 + np.exp(-(design @ w + offset))) - y) + strength * w

    for strength in (0.3, 3.0, 30.0):
        exact = ridge_logistic(design, y, offset, strength)
        assert np.max(np.abs(gradient(exact, strength))) < 1e-6
    path = ridge_path(design, y, offset, [30.0, 3.0, 0.3])
    for strength, w in path.items():  # the path's frozen-Hessian steps approximate the same optimum
        np.testing.assert_allclose(w, ridge_logistic(design, y, offset, strength), rtol=5e-3, atol=1e-3)


def test_the_alone_prior_of_a_grid_of_one_fit_is_the_whole_weight() -> None:
    y = np.array([1.0, 0.0, 1.0])
    assert evidence_weights(y, {VECTOR_ALONE: np.zeros(3)}, 0.9) == {VECTOR_ALONE: 1.0}


@pytest.mark.parametrize(("share", "mostly_out"), [(0.4, True), (0.5, False), (0.6, False)])
def test_the_record_says_the_questions_are_mostly_out_of_distribution_below_half(share: float, mostly_out: bool) -> None:
    flags = np.arange(10) < round(share * 10)
    alignment = SimpleNamespace(in_distribution=flags, scores=np.linspace(0.0, 1.0, 10))
    fit = OnboardingFit(np.zeros(8, np.float32), None, 0.0, {"answers": 10})
    record = onboarding_record("new", 2.0, fit, alignment)
    assert record["name"] == "new" and record["l2"] == 2.0 and record["answers"] == 10
    assert record["alignment"] == {
        "mean_score": pytest.approx(0.5), "in_distribution_share": pytest.approx(share),
        "mostly_out_of_distribution": mostly_out,
    }
    assert "alignment" not in onboarding_record("new", 2.0, fit, None)


def test_the_router_logit_is_zero_for_a_zero_question_and_exact_for_short_ones() -> None:
    questions = np.array([[0.0, 0.0], [0.3, 0.4], [3.0, 4.0]])
    np.testing.assert_allclose(base_logits(questions, np.array([1.0, 2.0])), [0.0, 1.1 / 0.5 - 0.5, 11.0 / 5.0 - 5.0])


def test_the_share_like_the_routers_is_defined_for_one_question_or_none() -> None:
    one = 0.95 - 2.0 * np.sqrt(0.95 * 0.05)
    assert like_the_routers_share(1) == pytest.approx(one) and like_the_routers_share(0) == pytest.approx(one)
    assert like_the_routers_share(100, percentile=10.0) == pytest.approx(0.9 - 2.0 * np.sqrt(0.9 * 0.1 / 100))


def test_the_correction_is_cross_validated_on_5_folds_and_needs_5_answers_of_each_kind() -> None:
    q, f, _, y = _problem(12, 60, 3.0)  # as docs/guide/add-llm.md says
    y[:] = 0.0
    y[:5] = 1.0
    five = fit_onboarding(q, f, y, prior_mean=np.zeros(8))
    assert five.report["folds"] == 5 and "fewer than" not in str(five.report["correction"])
    y[4] = 0.0
    four = fit_onboarding(q, f, y, prior_mean=np.zeros(8))
    assert four.report["correction"] == "off: fewer than 5 answers of each kind"


def test_the_alone_prior_of_two_fits_splits_the_prior_between_them() -> None:
    y = np.ones(20)
    held_out = {VECTOR_ALONE: np.zeros(20), (1.0, 100.0): np.zeros(20)}  # equal evidence: the prior decides
    assert evidence_weights(y, held_out, 0.9) == pytest.approx({VECTOR_ALONE: 0.9, (1.0, 100.0): 0.1})
    assert evidence_weights(y, held_out, 0.3) == pytest.approx({VECTOR_ALONE: 0.3, (1.0, 100.0): 0.7})


def test_a_correction_beside_the_vector_alone_in_the_average_stays_on() -> None:
    q, f, _, y = _problem(0, 300, 0.0)  # questions like the router's: the vector alone takes most of the weight
    fit = fit_onboarding(q, f, y, prior_mean=np.zeros(8), in_distribution=np.ones(300, dtype=bool))
    assert 0.5 < _alone_weight(fit) < 1.0
    assert fit.report["correction"] == "on" and fit.weights is not None


def test_features_moved_by_a_constant_give_the_same_offsets() -> None:
    q, f, _, y = _problem(13, 300, 3.0)  # the design centres the features: the bias takes the shift back
    fit = fit_onboarding(q, f, y, prior_mean=np.zeros(8))
    moved = fit_onboarding(q, f + 3.0, y, prior_mean=np.zeros(8))
    assert fit.weights is not None and moved.weights is not None
    np.testing.assert_allclose(f @ fit.weights + fit.bias, (f + 3.0) @ moved.weights + moved.bias, atol=1e-4)


def test_too_few_wrong_answers_leave_the_correction_off_too() -> None:
    q, f, _, _ = _problem(14, 60, 3.0)
    y = np.ones(60)
    y[:4] = 0.0
    fit = fit_onboarding(q, f, y, prior_mean=np.zeros(8))
    assert fit.weights is None and fit.report["correction"] == "off: fewer than 5 answers of each kind"


def test_a_grid_without_the_vector_alone_averages_corrections_only_and_still_reports_the_vector() -> None:
    q, f, _, y = _problem(0, 200, 3.0)
    fit = fit_onboarding(q, f, y, prior_mean=np.zeros(8), strengths=(100.0, 10.0))
    strengths = {entry["strength"] for entry in fit.report["averaged_fits"]}  # type: ignore[union-attr]
    assert fit.report["correction"] == "on" and fit.weights is not None and strengths <= {100.0, 10.0}
    with_alone = fit_onboarding(q, f, y, prior_mean=np.zeros(8), strengths=(np.inf, 100.0, 10.0))
    assert fit.report["cv_auc_vector_only"] == with_alone.report["cv_auc_vector_only"]  # the same folds
    assert fit.report["cv_log_loss_vector_only"] == with_alone.report["cv_log_loss_vector_only"]
