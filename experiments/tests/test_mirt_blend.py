import numpy as np

from experiments.mirt_blend import blended


def test_the_weight_picks_each_side_and_averages_logits_between() -> None:
    router, other = np.array([0.8, 0.3, 0.5]), np.array([0.2, 0.9, 0.6])
    np.testing.assert_allclose(blended(router, other, 1.0), router)
    np.testing.assert_allclose(blended(router, other, 0.0), other)
    # logit(0.8) = -logit(0.2): their even average is 0, P = 0.5; not the average of the probabilities
    np.testing.assert_allclose(blended(router, other, 0.5)[0], 0.5)
    odds = (0.3 / 0.7) ** 0.25 * (0.9 / 0.1) ** 0.75
    np.testing.assert_allclose(blended(router, other, 0.25)[1], odds / (1 + odds))


def test_certain_probabilities_stay_finite() -> None:
    p = blended(np.array([0.0, 1.0]), np.array([1.0, 0.0]), 0.5)
    assert np.all(np.isfinite(p)) and np.allclose(p, 0.5)
