"""The measures of the per-question discrimination the plain geometry holds (experiments.discrimination_eval): the
share of a question's direction in the span of the centred LLM vectors, the spread of its abilities over the LLMs,
their correlation with an ability scale, and bad vectors named."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("torch")  # the 2PL beside the measures trains with it

from experiments.discrimination_eval import discrimination_measures, row_correlations, span_basis


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
