"""Adapting an LLM the router already holds to a user's questions (`Router.update_llm`, jeirt_lite._update_llm)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from jeirt_lite import EncodedQuestions, JeirtError, Router
from jeirt_lite._correction_grid import LIKE_ROUTER_ALONE_PRIOR, base_logits
from jeirt_lite._ridge import sigmoid
from jeirt_lite._update_llm import fit_update

NAME = "gpt-4o-2024-05-13"  # an LLM of the shipped router
TEXTS = [f"Compute {a} * {b} + {a + b} and give the remainder modulo {b + 3}." for a in range(3, 11) for b in range(2, 9)]


@pytest.fixture(scope="module")
def shipped() -> Router:
    return Router.load(threads=1)


@pytest.fixture(scope="module")
def encoded(shipped: Router) -> EncodedQuestions:
    return shipped.encode(TEXTS, features=True)


def _full_logits(router: Router, name: str, encoded: EncodedQuestions) -> np.ndarray:
    """The LLM's logit as the router scores it, written out: calibration of (vector logit + votes + correction)."""
    j = router.llms.index(name)
    z = base_logits(encoded.vectors.astype(np.float64), router.llm_vectors[j].astype(np.float64))
    offsets = router._offsets(encoded.vectors, encoded.features, [name])
    z = z + (0.0 if offsets is None else offsets[:, 0])
    cal = router.calibration
    return z if cal is None else float(cal.scale[j]) * z + float(cal.bias[j])


def test_a_level_far_off_is_set_right_and_only_that_llm_changes(shipped: Router, encoded: EncodedQuestions) -> None:
    before = shipped.predict_proba(encoded)
    j = shipped.llms.index(NAME)
    labels = (np.arange(len(TEXTS)) % 8 == 0).astype(int)  # right on 1 in 8, where the router says 4 in 5
    updated = shipped.update_llm(NAME, encoded, labels)
    after = updated.predict_proba(encoded)
    assert updated.llms == shipped.llms
    assert abs(after[:, j].mean() - labels.mean()) < abs(before[:, j].mean() - labels.mean()) / 2
    np.testing.assert_array_equal(np.delete(after, j, axis=1), np.delete(before, j, axis=1))
    record = updated.manifest["onboarded"][-1]
    assert record["name"] == NAME and record["update"] is True and record["correction"] == "on"
    assert shipped.corrections is None and updated.corrections is not None and updated.corrections.llms == (NAME,)
    # Its refitted pair is its own now: the shipped calibration's one shared pair ("global") is no more.
    assert shipped.calibration is not None and shipped.calibration.kind == "global"
    assert updated.calibration is not None and updated.calibration.kind == "per_llm"


def test_the_stored_update_is_the_fitted_one_through_votes_calibration_and_a_save(
    shipped: Router, encoded: EncodedQuestions, tmp_path: Path
) -> None:
    # The fit is logit = s·z + f·w + b on the LLM's full logit z; the router stores it as the LLM's calibration and
    # correction, which route, score and serve apply as they apply add_llm's: they must give the same P(correct).
    labels = (np.arange(len(TEXTS)) % 3 != 0).astype(int)
    for router in (shipped, shipped.add_llm("new", encoded, 1 - labels)):  # votes and calibration; a correction too
        name = router.llms[-1] if router is not shipped else NAME
        z = _full_logits(router, name, encoded)
        updated = router.update_llm(name, encoded, labels)
        like_router = updated.manifest["onboarded"][-1]["like_router"]  # the alignment's gate, as add_llm's
        fit = fit_update(z, encoded.features.astype(np.float64), labels,
                         alone_prior=LIKE_ROUTER_ALONE_PRIOR if like_router else None)
        assert fit.weights is not None
        expected = sigmoid(fit.scale * z + encoded.features.astype(np.float64) @ fit.weights + fit.bias)
        column = updated.llms.index(name)
        np.testing.assert_allclose(updated.predict_proba(encoded)[:, column], expected, atol=2e-5)
        path = updated.save(tmp_path / f"updated-{column}")
        np.testing.assert_array_equal(Router.load(path).predict_proba(TEXTS), updated.predict_proba(TEXTS))


def test_answers_that_agree_with_the_router_or_are_too_few_leave_it_unchanged(
    shipped: Router, encoded: EncodedQuestions
) -> None:
    few = shipped.update_llm(NAME, encoded.rows(np.arange(8)), [1, 1, 1, 1, 1, 1, 0, 0])
    assert few.manifest["onboarded"][-1]["correction"].startswith("off: fewer than 5 answers of each kind")
    np.testing.assert_array_equal(few.predict_proba(encoded), shipped.predict_proba(encoded))
    assert few.corrections is None
    assert few.calibration is not None and few.calibration.kind == "global"  # every LLM keeps the one shared pair
    # Ten answers to one question: a fold would train on nothing, and the fit then rescaled the LLM everywhere.
    once = shipped.update_llm(NAME, [TEXTS[0]] * 10, [1, 0] * 5)
    assert once.manifest["onboarded"][-1]["correction"].startswith("off: the answers are all to one question")
    assert once.corrections is None


def test_a_level_shifted_by_a_constant_is_recovered() -> None:
    rng = np.random.default_rng(0)
    features = rng.normal(size=(800, 6))
    truth = features @ rng.normal(size=6) * 0.5 - 0.5
    correct = (rng.random(800) < sigmoid(truth)).astype(float)
    fit = fit_update(truth + 2.0, features, correct)  # the router over-forecasts by 2 logits everywhere
    assert fit.weights is not None
    adapted = sigmoid(fit.scale * (truth + 2.0) + features @ fit.weights + fit.bias)
    assert abs(adapted.mean() - correct.mean()) < 0.02 < abs(sigmoid(truth + 2.0).mean() - correct.mean()) - 0.1


def test_an_llm_the_router_lacks_or_questions_without_features_are_refused(
    shipped: Router, encoded: EncodedQuestions
) -> None:
    with pytest.raises(JeirtError, match="^LLM 'gpt-9' is not in this router, so it cannot be updated"):
        shipped.update_llm("gpt-9", encoded, [1, 0] * (len(TEXTS) // 2) + [1] * (len(TEXTS) % 2))
    with pytest.raises(JeirtError, match="fits a correction on the encoder's features"):
        shipped.update_llm(NAME, EncodedQuestions(encoded.vectors), [1, 0] * (len(TEXTS) // 2))
    with pytest.raises(JeirtError, match="labels"):
        shipped.update_llm(NAME, encoded, [1, 0])
    for few in (0, 1):  # as add_llm refuses them; none used to leave a record with NaN alignment scores
        with pytest.raises(JeirtError, match=f"^need at least 2 answers to update an LLM, got {few}$"):
            shipped.update_llm(NAME, encoded.rows(np.arange(few)), [1] * few)


def test_answers_on_questions_the_router_learned_from_are_left_out_and_it_says_so(shipped: Router) -> None:
    import csv

    with open(Path(__file__).resolve().parents[1] / "data" / "mmlu_pro" / "questions.csv", encoding="utf-8") as f:
        trained_on = [row["text"] for _, row in zip(range(20), csv.DictReader(f))]
    updated = shipped.update_llm(NAME, trained_on, [1, 0] * 10)
    record = updated.manifest["onboarded"][-1]
    assert record["on_training_questions"] == 20 and updated.corrections is None
    assert record["correction"].startswith("off: 20 of the 20 answers are on questions the router learned from")
    assert record["answers"] == 20 and record["correct"] == 10  # counted over every answer, as add_llm counts them
    # Too few answers of a kind even with those on its training questions: that is the reason given, as add_llm's.
    few = shipped.update_llm(NAME, trained_on[:8], [1, 1, 1, 1, 1, 1, 0, 0]).manifest["onboarded"][-1]
    assert few["on_training_questions"] == 8 and few["correction"] == "off: fewer than 5 answers of each kind"
