"""jeirt_lite.analysis routing value: the rules on a hand-made answer matrix."""

from __future__ import annotations

import numpy as np
from jeirt_lite.analysis._routing_value import answer_matrix, routing_value


def test_rules_on_a_small_matrix() -> None:
    nan = np.nan
    answers = np.array([[1, 0, 0], [0, 1, nan], [0, 0, 1], [1, 1, 0]], dtype=float)
    probabilities = np.array([[0.9, 0.2, 0.1], [0.3, 0.8, 0.5], [0.2, 0.3, 0.7], [0.6, 0.95, 0.1]])
    value = routing_value(probabilities, answers, ["a", "b", "c"], {"a": 1.0, "b": 10.0})
    assert value.n_questions == 4 and value.router == 1.0 and value.oracle == 1.0
    assert value.best_single_name in {"a", "b"} and value.best_single == 0.5
    assert value.n_priced == 2 and set(value.single) == {"a", "b"}  # "c" has no cost: never a candidate
    first = value.curve[0]
    assert first[0] == "max P − λ·cost" and first[1] == 0.0
    assert first[2] == 0.75  # among a and b only, question 3 goes to b (wrong) instead of c
    cheapest = [row for row in value.curve if row[0] == "cheapest with P ≥ t" and row[1] == 0.5][0]
    assert cheapest[3] == np.mean([1.0, 10.0, 10.0, 1.0])  # a where it clears 0.5, else the most likely priced


def test_answer_matrix_places_cells_by_column() -> None:
    y = answer_matrix(np.array([0, 1, 1]), np.array([2, 0, 2]), np.array([1.0, 0.0, 1.0]), 2, [2, -1, 0])
    np.testing.assert_array_equal(np.isnan(y), [[False, True, True], [False, True, False]])
    assert y[0, 0] == 1.0 and y[1, 0] == 1.0 and y[1, 2] == 0.0
