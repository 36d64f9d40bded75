"""Difficulty, taxonomy, probes and alignment on constructed cases whose answer is known."""

from __future__ import annotations

import numpy as np
import pytest
from jeirt_lite import JeirtError
from jeirt_lite.analysis import (
    align,
    alignment_scores,
    difficulty_vs_error,
    needs_calculation,
    probe_vectors,
    reference_directions,
    taxonomy,
    validation_threshold,
)


def test_difficulty_overall_and_within_subject() -> None:
    norms = np.arange(40, dtype=float)
    errors = norms / 40.0
    errors[20:] = 1.0 - errors[20:]  # subject b: harder questions have LOWER error (a reversed ranking)
    subjects = ["a"] * 20 + ["b"] * 20
    result = difficulty_vs_error(norms, errors, subjects)
    assert result.per_subject["a"] == (20, pytest.approx(1.0))
    assert result.per_subject["b"] == (20, pytest.approx(-1.0))
    assert result.n_questions == 40


def test_difficulty_skips_unobserved_questions_and_checks_lengths() -> None:
    result = difficulty_vs_error(np.array([1.0, 2, 3, 4]), np.array([0.1, np.nan, 0.3, 0.4]))
    assert result.n_questions == 3 and result.spearman == pytest.approx(1.0)
    with pytest.raises(JeirtError, match="one error rate per norm"):
        difficulty_vs_error(np.ones(3), np.ones(4))


def _planted(n_per: int = 60, k: int = 4, d: int = 16, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    axes = np.linalg.qr(rng.normal(size=(d, d)))[0][:k]
    truth = np.repeat(np.arange(k), n_per)
    # Directions carry the clusters; norms vary wildly and must not matter.
    vectors = (axes[truth] + 0.05 * rng.normal(size=(truth.size, d))) * rng.uniform(0.1, 50, size=(truth.size, 1))
    return vectors, truth


def test_taxonomy_recovers_planted_directions_and_chooses_k_by_silhouette() -> None:
    vectors, truth = _planted()
    subjects = [f"s{t}" for t in truth]
    tax = taxonomy(vectors, subjects, k_values=[2, 3, 4, 5, 6])
    assert tax.k == 4 and max(tax.silhouette_by_k, key=tax.silhouette_by_k.get) == 4
    assert tax.ari == pytest.approx(1.0) and tax.nmi == pytest.approx(1.0)
    for cluster in tax.clusters:
        assert cluster.subject_mix[0][1] == pytest.approx(1.0)
        assert len(cluster.typical) == 3
    np.testing.assert_allclose(np.linalg.norm(tax.centroids, axis=1), 1.0, rtol=1e-5)
    assert len(tax.describe([f"text {i}" for i in range(len(truth))])) == 4


def test_taxonomy_unrelated_to_random_subjects() -> None:
    vectors, _ = _planted(seed=1)
    subjects = np.random.default_rng(0).choice(["a", "b", "c", "d"], size=len(vectors))
    tax = taxonomy(vectors, list(subjects), k=4)
    assert abs(tax.ari) < 0.05


def test_probe_separates_groups_and_ignores_norm() -> None:
    rng = np.random.default_rng(0)
    axis = np.eye(8)[0]
    with_ = axis + 0.3 * rng.normal(size=(50, 8))
    without = -axis + 0.3 * rng.normal(size=(50, 8))
    fitted = probe_vectors(with_ * 10, without)  # norms differ between groups; directions carry the label
    assert fitted.direction @ axis > 0.9
    scores = fitted.score(np.vstack([axis * 100, -axis * 0.01]))
    assert scores[0] > 0 > scores[1]
    assert np.linalg.norm(fitted.direction) == pytest.approx(1.0)


def test_nan_vectors_are_refused_by_the_taxonomy_the_probe_s_score_and_the_alignment() -> None:
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(60, 8))
    vectors[5, 2] = np.nan
    with pytest.raises(JeirtError, match="vectors row 5 contains NaN or inf"):
        taxonomy(vectors, ["s"] * 60, k=4)  # it chose k=4 with NaN silhouettes and one cluster of 57
    for k in (3.0, True):
        with pytest.raises(JeirtError, match="k must be a whole number of clusters"):
            taxonomy(rng.normal(size=(60, 8)), None, k=k)  # type: ignore[arg-type]
    probe = probe_vectors(np.ones((2, 8)) * np.eye(8)[0], np.ones((2, 8)) * np.eye(8)[1])
    with pytest.raises(JeirtError, match="vectors row 5 contains NaN or inf"):
        probe.score(vectors)
    with pytest.raises(JeirtError, match="training question vectors row 5 contains NaN or inf"):
        reference_directions(vectors)
    reference, center = reference_directions(rng.normal(size=(100, 8)))
    with pytest.raises(JeirtError, match="question vectors row 5 contains NaN or inf"):
        validation_threshold(vectors, reference, center=center)  # a NaN threshold flagged every question
    with pytest.raises(JeirtError, match="question vectors row 5 contains NaN or inf"):
        align(vectors, reference, 0.1, center=center)


def test_probe_errors() -> None:
    with pytest.raises(JeirtError, match="at least one question"):
        probe_vectors(np.zeros((0, 3)), np.ones((2, 3)))
    with pytest.raises(JeirtError, match="same mean direction"):
        probe_vectors(np.ones((2, 3)), np.ones((2, 3)))
    with pytest.raises(JeirtError, match="shape"):
        probe_vectors(np.ones((2, 3)), np.ones((2, 3)) * [1, 0, 0]).score(np.ones((2, 4)))
    with pytest.raises(JeirtError, match="without_vectors row 1 contains NaN or inf"):
        probe_vectors(np.ones((2, 3)), np.array([[0.0, 1, 0], [np.nan, 0, 1]]))
    with pytest.raises(JeirtError, match="needs_calculation takes a question text, got None$"):
        needs_calculation(None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("What is the pH?\nA. 3.2\nB. 4.7\nC. 7\nD. 12.5 mol/L", True),
        ("Revenue?\nA. $1,200\nB. $3,400\nC. 15%\nD. $20", True),
        ("Who wrote it?\nA. Plato\nB. Kant\nC. 1788\nD. Hume", False),
        ("Calculate the derivative of x^3 at x = 2.", True),
        ("Why is the sky blue?", False),
    ],
)
def test_needs_calculation_rule(text: str, expected: bool) -> None:
    assert needs_calculation(text) is expected


def test_alignment_scores_threshold_and_flags() -> None:
    rng = np.random.default_rng(0)
    train = np.abs(rng.normal(size=(500, 6))) * [1, 1, 1, 0, 0, 0]  # training questions live in one orthant
    val = np.abs(rng.normal(size=(100, 6))) * [1, 1, 1, 0, 0, 0]
    reference, center = reference_directions(train, size=200)
    assert reference.shape == (200, 6) and reference.dtype == np.float32
    np.testing.assert_allclose(center, train.mean(axis=0), rtol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(reference, axis=1), 1.0, rtol=1e-5)
    threshold = validation_threshold(val, reference, percentile=5.0, center=center)
    assert np.mean(alignment_scores(val, reference, center=center) < threshold) == pytest.approx(0.05, abs=0.011)
    far = 10 * np.abs(rng.normal(size=(20, 6))) * [0, 0, 0, 1, 1, 1]  # mostly orthogonal to everything seen
    result = align(np.vstack([val[:20], far]), reference, threshold, center=center)
    assert result.in_distribution[:20].mean() >= 0.85 and not result.in_distribution[20:].any()
    assert np.all(result.scores[20:] < result.scores[:20].min())
    # Without centring, the shared component makes every training-like question look aligned (cosines near 1).
    assert alignment_scores(val, train[:200]).min() > 0.8
    # A question identical in direction to a reference row with top_k=1 scores exactly 1.
    assert alignment_scores(reference[:1] * 3, reference, top_k=1)[0] == pytest.approx(1.0, abs=1e-6)


def test_alignment_dimension_mismatch() -> None:
    with pytest.raises(JeirtError, match="dimension"):
        alignment_scores(np.ones((2, 3)), np.ones((4, 5)))


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_alignment_scores_are_the_mean_of_the_top_k_cosines_around_the_centre() -> None:
    """Brute force on more questions than one chunk of the loop holds (4096): centre, unit, every cosine, sort."""
    rng = np.random.default_rng(1)
    questions, reference, center = rng.normal(size=(5000, 8)), rng.normal(size=(600, 8)), rng.normal(size=8)
    cosines = _unit(questions - center) @ _unit(reference).T
    ranked = -np.sort(-cosines, axis=1)
    scores = alignment_scores(questions, reference, top_k=3, center=center)
    np.testing.assert_allclose(scores, ranked[:, :3].mean(axis=1), atol=1e-6)
    np.testing.assert_allclose(alignment_scores(questions, reference, top_k=0, center=center), ranked[:, 0], atol=1e-6)
    np.testing.assert_allclose(  # more neighbours asked for than there are: all of them
        alignment_scores(questions, reference, top_k=1000, center=center), ranked.mean(axis=1), atol=1e-6
    )


def test_alignment_refuses_what_it_cannot_compare() -> None:
    with pytest.raises(JeirtError, match="question vectors have dimension 5, reference directions 3"):
        alignment_scores(np.ones((2, 5)), np.ones((4, 3)))
    with pytest.raises(JeirtError, match="no reference directions"):
        alignment_scores(np.ones((2, 3)), np.ones((0, 3)))
    for shape in [(3,), (2, 3, 1)]:
        with pytest.raises(JeirtError, match="2-D"):
            alignment_scores(np.ones(shape), np.ones((4, 3)))
    for shape in [(0, 3), (3,), (2, 3, 1)]:
        with pytest.raises(JeirtError, match="non-empty"):
            reference_directions(np.ones(shape))


def test_reference_directions_sample_distinct_rows_in_order_and_keep_all_when_few() -> None:
    rng = np.random.default_rng(2)
    train = rng.normal(size=(10, 4))
    expected = _unit(train - train.mean(axis=0))
    for size in (10, 20):  # as many rows as asked for, or fewer
        everything, center = reference_directions(train, size=size)
        np.testing.assert_allclose(everything, expected, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(center, train.mean(axis=0), rtol=1e-5)
    sample, _ = reference_directions(train, size=8, seed=3)
    rows = [int(np.argmin(np.abs(expected - row).sum(axis=1))) for row in sample]
    np.testing.assert_allclose(sample, expected[rows], rtol=1e-5, atol=1e-6)
    assert len(set(rows)) == 8 and rows == sorted(rows)
    assert np.array_equal(reference_directions(train, size=8, seed=3)[0], sample)  # seeded


@pytest.mark.parametrize("percentile", [-0.5, 100.5])
def test_a_percentile_outside_0_to_100_is_refused(percentile: float) -> None:
    with pytest.raises(JeirtError, match="percentile"):
        validation_threshold(np.eye(3), np.eye(3), percentile=percentile)


def test_the_threshold_spans_the_validation_scores_and_a_score_on_it_is_in_distribution() -> None:
    rng = np.random.default_rng(4)
    val, reference = rng.normal(size=(30, 5)), rng.normal(size=(20, 5))
    scores = alignment_scores(val, reference)
    assert validation_threshold(val, reference, percentile=0.0) == pytest.approx(float(scores.min()))
    assert validation_threshold(val, reference, percentile=100.0) == pytest.approx(float(scores.max()))
    result = align(val, reference, float(scores[7]))
    assert result.in_distribution[7] and result.in_distribution.sum() == (scores >= scores[7]).sum()


def test_a_taxonomy_describes_each_cluster_by_size_top_subjects_and_its_most_typical_question() -> None:
    vectors, truth = _planted(n_per=30, k=2)
    mixed = ["bio"] * 3 + ["math"] * 15 + ["art"] * 5 + ["law"] * 7  # the first 30 questions, one direction
    subjects = mixed + ["law"] * 30
    tax = taxonomy(vectors, subjects, k=2)
    first = tax.clusters[int(tax.labels[0])]
    assert [name for name, _ in first.subject_mix] == ["math", "law", "art", "bio"]  # largest share first
    assert [share for _, share in first.subject_mix] == pytest.approx([0.5, 7 / 30, 1 / 6, 0.1])
    directions = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    for j, cluster in enumerate(tax.clusters):  # the members closest to the centroid, closest first
        members = np.flatnonzero(tax.labels == j)
        closeness = directions[members] @ tax.centroids[j]
        assert cluster.typical == members[np.argsort(-closeness)[:3]].tolist()
    texts = [f"question  {i}\n  about  something long enough to be cut" for i in range(len(truth))]
    lines = tax.describe(texts, width=20)
    j = int(tax.labels[0])
    assert lines[j] == (f"cluster {j}: 30 questions; math 50%, law 23%, art 17% | "
                        + " ".join(texts[first.typical[0]].split())[:20])
    assert tax.describe()[j] == f"cluster {j}: 30 questions; math 50%, law 23%, art 17%"


def test_a_taxonomy_chooses_k_among_4_to_20_by_default_and_is_seeded() -> None:
    vectors, truth = _planted(n_per=30, k=4)
    tax = taxonomy(vectors)
    assert sorted(tax.silhouette_by_k) == list(range(4, 21, 2)) and tax.k == 4
    np.testing.assert_array_equal(tax.labels, taxonomy(vectors, seed=0).labels)
    assert np.isnan(tax.ari) and np.isnan(tax.nmi) and all(cluster.subject_mix == [] for cluster in tax.clusters)


def test_a_taxonomy_needs_one_subject_per_question_and_a_usable_k() -> None:
    vectors, truth = _planted(n_per=5, k=2)
    for subjects in (["a"] * 9, ["a"] * 11):
        with pytest.raises(JeirtError, match=rf"one subject per question is needed, got {len(subjects)} for 10"):
            taxonomy(vectors, subjects, k=2)
    with pytest.raises(JeirtError, match=r"no usable k among \[1, 10, 11\] for 10 questions"):
        taxonomy(vectors, k_values=[1, 10, 11])  # k must be at least 2 and below the number of questions
    assert sorted(taxonomy(vectors, k_values=[2, 9, 10]).silhouette_by_k) == [2, 9]


@pytest.mark.parametrize("normalize", [True, False])
def test_a_probe_is_the_unit_difference_of_the_group_means_centred_halfway(normalize: bool) -> None:
    rng = np.random.default_rng(5)
    with_, without = rng.normal(size=(7, 4)) + 1.0, rng.normal(size=(5, 4)) * 3.0
    fitted = probe_vectors(with_, without, normalize=normalize)
    unit = (lambda x: x / np.linalg.norm(x, axis=1, keepdims=True)) if normalize else (lambda x: x)
    a, b = unit(with_).mean(axis=0), unit(without).mean(axis=0)
    np.testing.assert_allclose(fitted.direction, (a - b) / np.linalg.norm(a - b))
    assert fitted.midpoint == pytest.approx((a + b) @ fitted.direction / 2.0)
    assert (fitted.n_with, fitted.n_without, fitted.normalize) == (7, 5, normalize)
    new = rng.normal(size=(3, 4)) * 5.0
    np.testing.assert_allclose(fitted.score(new), unit(new) @ fitted.direction - fitted.midpoint)
    assert probe_vectors(with_, without).normalize is True  # directions only, unless asked


def test_a_probe_names_what_it_cannot_fit_or_score() -> None:
    good = np.eye(3)[:2]
    for a, b in ((np.ones(3), good), (good, np.ones(3)), (np.ones((2, 3, 1)), good), (good, np.ones((2, 3, 1))),
                 (np.ones((2, 4)), good), (np.ones((2, 2)), good)):
        with pytest.raises(JeirtError, match="both groups need vectors of one dimension, got shapes"):
            probe_vectors(a, b)
    for a, b in ((np.zeros((0, 3)), good), (good, np.zeros((0, 3)))):
        with pytest.raises(JeirtError, match="a probe needs at least one question in each group"):
            probe_vectors(a, b)
    assert probe_vectors(good[:1], good[1:]).n_without == 1  # one question a group is enough
    fitted = probe_vectors(good, -good)
    for vectors in (np.ones(3), np.ones((2, 4)), np.ones((2, 2)), np.ones((2, 3, 1))):
        with pytest.raises(JeirtError, match=r"vectors must have shape \(N, 3\), got"):
            fitted.score(vectors)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Q?\nA. 3\nB. 4\nC. 5\nD. Kant", True),  # 3 of 4 numeric: the 75% share is enough
        ("Q?\nA. 3\nB. Kant", False),  # two options, one numeric: 50%
        ("Q?\nA. 3\nB. 4", True),
        ("How many moons?\nA. Io", True),  # one option: the keywords decide
        ("Calculate it.\nA. Plato\nB. Kant", False),  # two options: the options decide, not the keyword
    ],
)
def test_needs_calculation_counts_numeric_options_from_two_on(text: str, expected: bool) -> None:
    assert needs_calculation(text) is expected


def test_difficulty_per_subject_needs_ten_questions_and_one_subject_each() -> None:
    norms = np.arange(30, dtype=float)
    errors = np.where(np.arange(30) % 2 == 0, norms, -norms)
    subjects = ["a"] * 10 + ["b"] * 9 + ["c"] * 11
    errors[25] = np.nan  # c keeps 10 answered questions
    result = difficulty_vs_error(norms, errors, subjects)
    assert sorted(result.per_subject) == ["a", "c"] and result.per_subject["c"][0] == 10
    assert result.n_questions == 29
    for bad in (subjects[:-1], subjects + ["a"]):
        with pytest.raises(JeirtError, match=rf"one subject per question is needed, got {len(bad)} subjects for 30"):
            difficulty_vs_error(norms, errors, bad)
    for e in (np.ones(29), np.ones(31)):
        with pytest.raises(JeirtError, match="one error rate per norm is needed"):
            difficulty_vs_error(norms, e)
    assert difficulty_vs_error(np.array([1.0, np.nan, 3, 4]), np.array([0.1, 0.2, 0.3, 0.4])).n_questions == 3
    # A question without a subject (None, or NaN from a table's empty cell) counts overall only, never a TypeError.
    unnamed = difficulty_vs_error(norms, errors, subjects[:-2] + [None, np.nan])  # type: ignore[list-item]
    assert unnamed.n_questions == 29 and sorted(unnamed.per_subject) == ["a"]  # c keeps 8: too few
    for empty in ((np.array([]), np.array([])), (np.array([np.nan]), np.array([0.5]))):
        with pytest.raises(JeirtError, match="no question has both a finite norm and an error rate"):
            difficulty_vs_error(*empty)
    with pytest.raises(JeirtError, match=r"both 1-D; got shapes \(2, 3\) and \(3, 2\)"):
        difficulty_vs_error(np.ones((2, 3)), np.ones((3, 2)))  # same size: paired cell by cell before


def test_a_probe_and_a_taxonomy_take_wide_vectors_and_large_sets() -> None:
    rng = np.random.default_rng(6)  # sizes beyond 256: a shape compared by identity would fail here
    with_, without = rng.normal(size=(300, 300)) + 0.5, rng.normal(size=(300, 300)) - 0.5
    assert probe_vectors(with_, without).score(with_).shape == (300,)
    vectors, truth = _planted(n_per=75, k=4)
    tax = taxonomy(vectors, [f"s{t}" for t in truth], k=4)
    assert tax.ari == pytest.approx(1.0) and sum(cluster.size for cluster in tax.clusters) == 300


def test_a_taxonomy_chooses_k_on_a_seeded_sample_of_a_large_set(monkeypatch: pytest.MonkeyPatch) -> None:
    from jeirt_lite.analysis import _taxonomy

    vectors, _ = _planted(n_per=15, k=4)
    directions = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    ks = [2, 3, 4]
    monkeypatch.setattr(_taxonomy, "SILHOUETTE_SAMPLE", 1000)
    whole = _taxonomy.choose_k(directions, ks, seed=3)
    monkeypatch.setattr(_taxonomy, "SILHOUETTE_SAMPLE", 60)  # exactly the sample's size: every question
    assert _taxonomy.choose_k(directions, ks, seed=3) == whole
    monkeypatch.setattr(_taxonomy, "SILHOUETTE_SAMPLE", 40)  # more: 40 distinct questions drawn with the seed
    sample = directions[np.random.default_rng(3).choice(60, 40, replace=False)]
    assert _taxonomy.choose_k(directions, ks, seed=3) == _taxonomy.choose_k(sample, ks, seed=3) != whole


def test_a_taxonomy_describes_its_typical_question_in_90_characters_by_default() -> None:
    vectors, truth = _planted(n_per=10, k=2)
    texts = ["word " * 40] * 20
    line = taxonomy(vectors, k=2).describe(texts)[0]
    assert line.endswith(" | " + ("word " * 40)[:90])
