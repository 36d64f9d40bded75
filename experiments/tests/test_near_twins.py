"""experiments.near_twins: each test question's most similar training question, and how alike the LLMs answered."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.near_twins import band_rows, exact_repeats, nearest_training
from experiments.routing_eval import answer_matrix


def test_the_twin_is_the_most_similar_training_question_whatever_its_length() -> None:
    features = np.array([[1.0, 0.0], [0.0, 5.0], [3.0, 0.3], [0.1, 1.0]])
    learned = np.array([True, True, False, False])
    test, twin, similarity = nearest_training(features, learned)
    assert test.tolist() == [2, 3] and twin.tolist() == [0, 1]
    assert similarity[0] == pytest.approx(3.0 / np.hypot(3.0, 0.3))


def test_a_router_that_learned_from_everything_is_refused() -> None:
    with pytest.raises(ValueError, match="learned from"):
        nearest_training(np.eye(3), np.ones(3, dtype=bool))


def test_bands_count_only_answers_on_both_questions_and_score_the_router_on_the_same_ones() -> None:
    answers = answer_matrix(np.array([0, 0, 1, 1, 2]), np.array([0, 1, 0, 1, 0]),
                            np.array([1.0, 0.0, 1.0, 1.0, 0.0]), np.arange(3), 2)
    assert np.isnan(answers[2, 1])
    # test questions 1 (twin 0, similarity 0.995) and 2 (twin 0, similarity 0.5); question 2's LLM 1 did not answer
    probabilities = np.array([[0.9, 0.2], [0.3, 0.8]])
    rows = band_rows(answers, probabilities, np.array([1, 2]), np.array([0, 0]), np.array([0.995, 0.5]))
    assert [r["similarity"] for r in rows] == [[0.99, 1.0], [-1.0, 0.80]]
    close, far = rows
    assert (close["answers"], close["twin_agreement"], close["router_accuracy"]) == (2, 0.5, 0.5)
    assert (far["answers"], far["twin_agreement"], far["router_accuracy"]) == (1, 0.0, 1.0)


def test_exact_repeats_compare_every_pair_of_copies_on_the_llms_that_answered_both() -> None:
    answers = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, np.nan], [0.0, 0.0]])
    out = exact_repeats(["a", "a", "a", "b"], answers)
    assert (out["groups"], out["questions"], out["answer_pairs"]) == (1, 3, 4)
    assert out["agreement"] == pytest.approx(3 / 4)
    assert np.isnan(exact_repeats(["a", "b"], answers[:2])["agreement"])
