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


# -- edges a mutation round found untested (docs/research/mutation.md) ------------------------------------------


def test_spearman_refuses_two_lengths_and_reads_only_the_pairs_finite_on_both_sides() -> None:
    with pytest.raises(JeirtError, match="two arrays of one length, got 3 and 4"):
        stats.spearman(np.arange(3.0), np.arange(4.0))
    with pytest.raises(JeirtError, match="got 4 and 3"):
        stats.spearman(np.arange(4.0), np.arange(3.0))
    x = np.array([1.0, 2.0, np.nan, 4.0, 5.0, 6.0])
    y = np.array([2.0, 1.0, 3.0, np.inf, 6.0, 5.0])
    assert stats.spearman(x, y) == pytest.approx(spearmanr([1, 2, 5, 6], [2, 1, 6, 5]).statistic, abs=1e-12)
    assert np.isnan(stats.spearman([1.0, 2.0, np.nan], [2.0, 1.0, 3.0]))  # two pairs: no correlation to tell


def test_silhouette_matches_sklearn_below_unit_distances_and_on_a_pair() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(40, 3)) * 0.01  # every distance below 1
    labels = np.repeat([0, 1, 2, 3], [1, 2, 3, 34])  # a singleton, a pair, a triple
    rng.shuffle(labels)
    assert stats.silhouette(x, labels) == pytest.approx(silhouette_score(x, labels), abs=1e-10)


def test_silhouette_needs_between_two_and_n_minus_one_clusters() -> None:
    x = np.arange(10.0).reshape(5, 2)
    with pytest.raises(JeirtError, match="between 2 and N-1 clusters, got 1 for 5 points"):
        stats.silhouette(x, np.zeros(5))
    with pytest.raises(JeirtError, match="got 5 for 5 points"):
        stats.silhouette(x, np.arange(5))
    with pytest.raises(JeirtError, match="got 6 for 6 points"):
        stats.silhouette(np.arange(12.0).reshape(6, 2), np.arange(6))
    assert stats.silhouette(x, [0, 1, 2, 3, 3]) == pytest.approx(silhouette_score(x, [0, 1, 2, 3, 3]), abs=1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_kmeans_plus_plus_starts_once_in_each_of_three_far_apart_groups(seed: int) -> None:
    centres = np.array([[0.0, 0.0], [100.0, 0.0], [0.0, 100.0]])
    x = np.repeat(centres, 10, axis=0) + np.random.default_rng(9).normal(size=(30, 2)) * 0.1
    starts = stats._kmeans_plus_plus(x, (x**2).sum(axis=1), 3, np.random.default_rng(seed))
    assert all(any(np.array_equal(start, row) for row in x) for start in starts)  # each start is a point
    assert sorted(np.linalg.norm(starts[:, None] - centres[None], axis=2).argmin(axis=1).tolist()) == [0, 1, 2]


def test_kmeans_reseeds_an_emptied_cluster_and_ends_with_k_finite_clusters() -> None:
    # Five equal points and one apart: the third start repeats a centroid, which leaves a cluster empty.
    x = np.array([[1.0, 1.0]] * 5 + [[10.0, 10.0]])
    for seed in range(6):
        labels, centroids, inertia = stats.kmeans(x, 3, seed=seed, n_init=1)
        assert np.isfinite(centroids).all() and inertia == 0.0
        assert sorted(set(labels.tolist())) == [0, 1, 2]


def test_kmeans_checks_its_points_and_k_and_takes_k_from_1_to_n() -> None:
    with pytest.raises(JeirtError, match=r"non-empty \(N, d\) array, got shape \(4,\)"):
        stats.kmeans(np.zeros(4), 2)
    with pytest.raises(JeirtError, match=r"got shape \(0, 2\)"):
        stats.kmeans(np.zeros((0, 2)), 1)
    with pytest.raises(JeirtError, match=r"got shape \(1, 2, 2\)"):
        stats.kmeans(np.zeros((1, 2, 2)), 1)
    x = np.random.default_rng(7).normal(size=(5, 2))
    with pytest.raises(JeirtError, match=r"k must be between 1 and the number of points \(5\), got 0"):
        stats.kmeans(x, 0)
    labels, centroids, inertia = stats.kmeans(x, 1)
    assert labels.tolist() == [0] * 5 and np.allclose(centroids, x.mean(axis=0))
    labels, _, inertia = stats.kmeans(x, 5)
    assert sorted(labels.tolist()) == [0, 1, 2, 3, 4] and inertia == pytest.approx(0.0, abs=1e-12)


def test_kmeans_returns_a_fixed_point_of_lloyds_iteration() -> None:
    # Uniform points take several iterations to settle: each label is then its nearest centroid, and each
    # centroid the mean of its points.
    x = np.random.default_rng(8).uniform(size=(200, 2))
    labels, centroids, inertia = stats.kmeans(x, 7, n_init=1)
    distances = ((x[:, None] - centroids[None]) ** 2).sum(axis=2)
    np.testing.assert_array_equal(labels, distances.argmin(axis=1))
    for j in range(7):
        np.testing.assert_allclose(centroids[j], x[labels == j].mean(axis=0), atol=1e-12)
    assert inertia == pytest.approx(distances.min(axis=1).sum(), rel=1e-12)


@pytest.mark.parametrize("seed", [2, 4, 5])  # seeds whose last start is not the best
def test_kmeans_keeps_the_start_of_least_inertia(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    x = np.random.default_rng(4).uniform(size=(60, 2))
    starts: list[np.ndarray] = []
    draw = stats._kmeans_plus_plus

    def recorded(*args: object) -> np.ndarray:
        starts.append(draw(*args))  # type: ignore[arg-type]
        return starts[-1]

    monkeypatch.setattr(stats, "_kmeans_plus_plus", recorded)
    best = stats.kmeans(x, 6, seed=seed, n_init=6)[2]
    each = []
    for start in list(starts):
        monkeypatch.setattr(stats, "_kmeans_plus_plus", lambda *args, start=start: start.copy())
        each.append(stats.kmeans(x, 6, n_init=1)[2])
    assert best == min(each) and each[-1] != best


def test_kmeans_keeps_its_best_start() -> None:
    x = np.random.default_rng(4).uniform(size=(60, 2))
    inertias = [stats.kmeans(x, 6, seed=s, n_init=1)[2] for s in range(3)]
    assert len(set(inertias)) > 1  # the starts reach different optima, so which is kept matters
    for seed in range(3):
        best = stats.kmeans(x, 6, seed=seed, n_init=6)[2]
        assert best <= stats.kmeans(x, 6, seed=seed, n_init=1)[2]  # its first start is that run's only one


def test_two_labelings_of_different_lengths_are_refused_either_way_round() -> None:
    for a, b in (([0, 1, 1], [0, 1]), ([0, 1], [0, 1, 1])):
        with pytest.raises(JeirtError, match="two labelings of different lengths"):
            stats.adjusted_rand_index(a, b)
        with pytest.raises(JeirtError, match="two labelings of different lengths"):
            stats.normalized_mutual_info(a, b)


def test_ari_and_nmi_of_two_items_and_of_constant_labelings_match_sklearn() -> None:
    for a, b in (([0, 1], [0, 0]), ([0, 1], [1, 0]), ([0, 0], [0, 0]), ([0, 0, 0], [1, 1, 1])):
        assert stats.adjusted_rand_index(a, b) == pytest.approx(adjusted_rand_score(a, b), abs=1e-12)
        assert stats.normalized_mutual_info(a, b) == pytest.approx(normalized_mutual_info_score(a, b), abs=1e-12)


def test_pca_defaults_to_two_components_and_takes_fewer_points_than_components() -> None:
    x = np.random.default_rng(5).normal(size=(30, 4))
    assert stats.pca(x)[1].shape == (2, 4)
    points, components, mean, ratio = stats.pca(x[:2], 3)  # two points span one direction
    assert components.shape == (2, 4) and points.shape == (2, 2) and ratio.shape == (2,)
    np.testing.assert_allclose(mean, x[:2].mean(axis=0))


def test_pca_on_a_small_scale_matches_sklearn_and_turns_each_largest_loading_positive() -> None:
    x = np.random.default_rng(6).normal(size=(50, 5)) @ np.diag([5, 3, 1, 0.5, 0.1]) * 1e-3
    points, components, _, ratio = stats.pca(x, 3)
    np.testing.assert_allclose(ratio, PCA(3).fit(x).explained_variance_ratio_, rtol=1e-9)
    for row in components:
        assert row[np.abs(row).argmax()] > 0
    np.testing.assert_allclose(points, (x - x.mean(axis=0)) @ components.T, atol=1e-15)
