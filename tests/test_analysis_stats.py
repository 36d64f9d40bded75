"""The NumPy statistics of jeirt_lite.analysis against scipy / sklearn (available in tests only)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jeirt_lite import JeirtError
from jeirt_lite._alignment import unit_rows
from jeirt_lite.analysis import _stats as stats
from scipy.stats import spearmanr
from sklearn.cluster import KMeans
from sklearn.decomposition import PCA
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score, roc_auc_score, silhouette_score

values = st.lists(st.integers(-5, 5), min_size=4, max_size=60)


@settings(max_examples=60, deadline=None)
@given(values)
def test_spearman_matches_scipy_with_ties(xs: list[int]) -> None:
    rng = np.random.default_rng(len(xs))
    x = np.asarray(xs, dtype=float)
    y = x * rng.normal() + rng.integers(-3, 4, size=x.size)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns on a constant input; the NaN it returns is what we compare
        want = spearmanr(x, y).statistic
    got = stats.spearman(x, y)
    if np.isnan(want):
        assert np.isnan(got)
    else:
        assert got == pytest.approx(want, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 6)), min_size=2, max_size=80))
def test_auc_matches_sklearn(pairs: list[tuple[bool, int]]) -> None:
    y = np.array([p[0] for p in pairs])
    s = np.array([p[1] for p in pairs], dtype=float)
    if y.all() or not y.any():
        assert np.isnan(stats.roc_auc(y, s))
    else:
        assert stats.roc_auc(y, s) == pytest.approx(roc_auc_score(y, s), abs=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=2, max_size=50), st.integers(0, 1000))
def test_ari_and_nmi_match_sklearn(a: list[int], seed: int) -> None:
    b = np.random.default_rng(seed).integers(0, 3, size=len(a))
    assert stats.adjusted_rand_index(a, b) == pytest.approx(adjusted_rand_score(a, b), abs=1e-10)
    assert stats.normalized_mutual_info(a, b) == pytest.approx(normalized_mutual_info_score(a, b), abs=1e-10)


def test_silhouette_matches_sklearn() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(120, 5))
    labels = rng.integers(0, 4, size=120)
    labels[:1] = 5  # a singleton cluster scores 0, as in sklearn
    assert stats.silhouette(x, labels) == pytest.approx(silhouette_score(x, labels), abs=1e-10)


def test_kmeans_inertia_close_to_sklearn_and_finds_planted_clusters() -> None:
    rng = np.random.default_rng(1)
    centres = rng.normal(size=(5, 8)) * 10
    truth = rng.integers(0, 5, size=400)
    x = centres[truth] + rng.normal(size=(400, 8))
    labels, centroids, inertia = stats.kmeans(x, 5, seed=0)
    reference = KMeans(5, n_init=4, random_state=0).fit(x)
    assert inertia == pytest.approx(reference.inertia_, rel=1e-6)
    assert stats.adjusted_rand_index(labels, truth) == pytest.approx(1.0)
    assert centroids.shape == (5, 8)


def test_kmeans_rejects_bad_k() -> None:
    with pytest.raises(JeirtError, match="k must be"):
        stats.kmeans(np.zeros((3, 2)), 4)


def test_pca_matches_sklearn_up_to_sign() -> None:
    x = np.random.default_rng(2).normal(size=(50, 6)) @ np.diag([5, 3, 1, 1, 0.5, 0.1])
    points, components, _, ratio = stats.pca(x, 2)
    reference = PCA(2).fit(x)
    np.testing.assert_allclose(ratio, reference.explained_variance_ratio_, rtol=1e-10)
    np.testing.assert_allclose(np.abs(points), np.abs(reference.transform(x)), atol=1e-9)


def test_unit_rows_keeps_zero_rows() -> None:
    out = unit_rows(np.array([[3.0, 4.0], [0.0, 0.0]]))
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 0.0]])
