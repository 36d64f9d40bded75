"""experiments.residual_features: what a feature adds to the router's logit, fitted on one half of the questions and
scored on the other."""

from __future__ import annotations

import numpy as np

from experiments.residual_features import cross_fitted, per_llm, predicted_sources, source_groups


def _metrics(y: np.ndarray, p: np.ndarray) -> dict[str, float]:
    return {"log_loss": float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))}


def test_per_llm_puts_each_cells_values_in_its_llms_columns_group_by_group() -> None:
    out = per_llm(np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([2, 0]), 3)
    assert out.tolist() == [[0, 0, 1, 0, 0, 2], [3, 0, 0, 4, 0, 0]]
    assert per_llm(np.array([5.0]), np.array([1]), 2).tolist() == [[0, 5]]


def test_source_groups_keep_the_name_up_to_the_first_dash() -> None:
    assert source_groups(["ori_mmlu-business_ethics", "stemez-Physics-2", "theoremQA"]) == [
        "ori_mmlu", "stemez", "theoremQA"]


def test_a_feature_that_drives_the_answers_lowers_the_held_out_loss_and_noise_does_not() -> None:
    rng = np.random.default_rng(0)
    questions, per_question = 400, 5
    question = np.repeat(np.arange(questions), per_question)
    signal = rng.normal(size=questions)[question]
    logit = rng.normal(size=len(question))
    y = (rng.random(len(question)) < 1 / (1 + np.exp(-(logit + 2 * signal)))).astype(float)
    alone = cross_fitted(logit[:, None], y, question, 2, _metrics)
    informed = cross_fitted(np.column_stack([logit, signal]), y, question, 2, _metrics)
    noise = cross_fitted(np.column_stack([logit, rng.normal(size=questions)[question]]), y, question, 2, _metrics)
    assert len(alone) == 2
    for a, b, c in zip(alone, informed, noise):
        assert b["log_loss"] < a["log_loss"] - 0.05
        assert c["log_loss"] > a["log_loss"] - 0.002  # a feature of noise does not pass for a gain


def test_predicted_sources_learn_from_the_learned_questions_only() -> None:
    features = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9], [1.0, 0.0], [0.0, 1.0]])
    learned = np.array([True, True, True, True, False, False])
    # The held-out rows' labels are swapped: a classifier that saw them would be pulled the other way.
    groups = ["a", "a", "b", "b", "b", "a"]
    names, probabilities = predicted_sources(features, groups, learned)
    assert names == ["a", "b"] and probabilities.shape == (6, 2)
    assert probabilities[4, 0] > 0.5 and probabilities[5, 1] > 0.5
