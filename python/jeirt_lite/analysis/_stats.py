"""Small statistics written with NumPy only (the runtime has no scipy or sklearn): Spearman, k-means, silhouette,
adjusted Rand index, normalised mutual information, PCA, and (from `jeirt_lite._ranks`) ranks and ROC AUC. Tests
check each against scipy/sklearn.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from .._errors import JeirtError
from .._ranks import average_ranks
from .._ranks import roc_auc as roc_auc  # the report's, beside the other statistics


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman rank correlation (Pearson on average ranks); NaN when fewer than 3 pairs or a constant side."""
    a, b = np.asarray(x, dtype=np.float64).ravel(), np.asarray(y, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise JeirtError(f"spearman needs two arrays of one length, got {a.size} and {b.size}")
    keep = np.isfinite(a) & np.isfinite(b)
    a, b = a[keep], b[keep]
    if a.size < 3:
        return float("nan")
    ra, rb = average_ranks(a) - (a.size + 1) / 2.0, average_ranks(b) - (a.size + 1) / 2.0
    denom = np.sqrt((ra**2).sum() * (rb**2).sum())
    return float((ra * rb).sum() / denom) if denom > 0 else float("nan")


def kmeans(
    points: np.ndarray, k: int, *, seed: int = 0, n_init: int = 4, max_iter: int = 100
) -> tuple[np.ndarray, np.ndarray, float]:
    """Lloyd's k-means with k-means++ starts; returns (labels, centroids, inertia) of the best of `n_init` runs.

    Deterministic for a given seed. An emptied cluster is re-seeded at the point farthest from its centroid.
    """
    x = np.asarray(points, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] == 0:
        raise JeirtError(f"k-means needs a non-empty (N, d) array, got shape {x.shape}")
    if not 1 <= k <= x.shape[0]:
        raise JeirtError(f"k must be between 1 and the number of points ({x.shape[0]}), got {k}")
    rng = np.random.default_rng(seed)
    squared = (x**2).sum(axis=1)
    best: Optional[tuple[np.ndarray, np.ndarray, float]] = None
    for _ in range(n_init):
        centroids = _kmeans_plus_plus(x, squared, k, rng)
        labels = np.zeros(x.shape[0], dtype=np.int64)
        for iteration in range(max_iter):
            distances = _squared_distances(x, squared, centroids)
            new_labels = distances.argmin(axis=1)
            if iteration > 0 and np.array_equal(new_labels, labels):
                break
            labels = new_labels
            counts = np.bincount(labels, minlength=k)
            sums = np.zeros_like(centroids)
            np.add.at(sums, labels, x)
            for j in np.flatnonzero(counts == 0):  # re-seed an empty cluster at the worst-served point
                far = int(distances[np.arange(x.shape[0]), labels].argmax())
                sums[j], counts[j] = x[far], 1
                labels[far] = j
            centroids = sums / counts[:, None]
        inertia = float(_squared_distances(x, squared, centroids)[np.arange(x.shape[0]), labels].sum())
        if best is None or inertia < best[2]:
            best = (labels.copy(), centroids.copy(), inertia)
    assert best is not None
    return best


def _squared_distances(x: np.ndarray, squared: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    out: np.ndarray = np.maximum(squared[:, None] - 2.0 * x @ centroids.T + (centroids**2).sum(axis=1)[None, :], 0.0)
    return out


def _kmeans_plus_plus(x: np.ndarray, squared: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    centroids = np.empty((k, x.shape[1]))
    centroids[0] = x[rng.integers(x.shape[0])]
    closest = _squared_distances(x, squared, centroids[:1])[:, 0]
    for j in range(1, k):
        total = closest.sum()
        pick = int(rng.choice(x.shape[0], p=closest / total)) if total > 0 else int(rng.integers(x.shape[0]))
        centroids[j] = x[pick]
        closest = np.minimum(closest, _squared_distances(x, squared, centroids[j : j + 1])[:, 0])
    return centroids


def silhouette(points: np.ndarray, labels: np.ndarray) -> float:
    """Mean silhouette coefficient (Euclidean), as sklearn.metrics.silhouette_score; O(N^2) memory: sample first."""
    x = np.asarray(points, dtype=np.float64)
    lab = np.asarray(labels).ravel()
    names, lab = np.unique(lab, return_inverse=True)
    if not 2 <= len(names) <= x.shape[0] - 1:
        raise JeirtError(f"silhouette needs between 2 and N-1 clusters, got {len(names)} for {x.shape[0]} points")
    squared = (x**2).sum(axis=1)
    distances = np.sqrt(np.maximum(squared[:, None] - 2.0 * x @ x.T + squared[None, :], 0.0))
    counts = np.bincount(lab, minlength=len(names)).astype(np.float64)
    per_cluster = np.zeros((x.shape[0], len(names)))
    for j in range(len(names)):
        per_cluster[:, j] = distances[:, lab == j].sum(axis=1)
    own = counts[lab]
    a = per_cluster[np.arange(x.shape[0]), lab] / np.maximum(own - 1, 1)
    mean_other = per_cluster / counts[None, :]
    mean_other[np.arange(x.shape[0]), lab] = np.inf
    b = mean_other.min(axis=1)
    s = np.where(own > 1, (b - a) / np.maximum(np.maximum(a, b), 1e-300), 0.0)
    return float(s.mean())


def _contingency(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    _, ia = np.unique(np.asarray(a).ravel(), return_inverse=True)
    _, ib = np.unique(np.asarray(b).ravel(), return_inverse=True)
    if ia.size != ib.size:
        raise JeirtError(f"two labelings of different lengths: {ia.size} and {ib.size}")
    table = np.zeros((ia.max() + 1 if ia.size else 0, ib.max() + 1 if ib.size else 0))
    np.add.at(table, (ia, ib), 1.0)
    return table


def adjusted_rand_index(a: np.ndarray, b: np.ndarray) -> float:
    """Adjusted Rand index of two labelings (1 = identical partitions, about 0 = chance)."""
    table = _contingency(a, b)
    n = table.sum()

    def pairs(values: np.ndarray) -> float:
        return float((values * (values - 1) / 2.0).sum())

    index, rows, cols = pairs(table), pairs(table.sum(axis=1)), pairs(table.sum(axis=0))
    total = n * (n - 1) / 2.0
    expected = rows * cols / total if total > 0 else 0.0
    maximum = (rows + cols) / 2.0
    if maximum == expected:
        return 1.0
    return float((index - expected) / (maximum - expected))


def normalized_mutual_info(a: np.ndarray, b: np.ndarray) -> float:
    """Mutual information normalised by the arithmetic mean of the entropies (sklearn's default)."""
    table = _contingency(a, b)
    n = table.sum()
    pa, pb = table.sum(axis=1) / n, table.sum(axis=0) / n
    joint = table / n
    nz = joint > 0
    mi = float((joint[nz] * np.log(joint[nz] / np.outer(pa, pb)[nz])).sum())
    ha = float(-(pa[pa > 0] * np.log(pa[pa > 0])).sum())
    hb = float(-(pb[pb > 0] * np.log(pb[pb > 0])).sum())
    if ha == 0.0 and hb == 0.0:
        return 1.0
    return float(max(mi, 0.0) / ((ha + hb) / 2.0))


def pca(points: np.ndarray, n_components: int = 2) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """PCA by SVD: (projected points, components (c, d), mean (d,), explained variance ratio (c,))."""
    x = np.asarray(points, dtype=np.float64)
    mean = x.mean(axis=0)
    _, singular, vt = np.linalg.svd(x - mean, full_matrices=False)
    variance = singular**2
    ratio = variance[:n_components] / max(variance.sum(), 1e-300)
    # Fix the sign so that the largest-magnitude loading of each component is positive (reproducible plots).
    signs = np.sign(vt[np.arange(min(n_components, vt.shape[0])), np.abs(vt[:n_components]).argmax(axis=1)])
    components = vt[:n_components] * np.where(signs == 0, 1.0, signs)[:, None]
    return (x - mean) @ components.T, components, mean, ratio
