"""An LLM-centred taxonomy: k-means on the unit question directions, compared with the human subjects.

The direction of q says which LLMs tend to get a question right; clustering directions groups questions that LLMs
find alike, which need not follow the curriculum. ARI/NMI against the subjects measure how far it does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .._alignment import unit_rows
from .._errors import JeirtError
from .._limits import check_finite_rows
from ._stats import adjusted_rand_index, kmeans, normalized_mutual_info, silhouette

SILHOUETTE_SAMPLE = 2000  # silhouette is O(N^2): choose k on a seeded sample of this many questions
TYPICAL_PER_CLUSTER = 3


@dataclass(frozen=True)
class Cluster:
    size: int
    typical: list[int]  # question indices closest to the centroid, closest first
    subject_mix: list[tuple[str, float]]  # (subject, share), largest first


@dataclass(frozen=True)
class Taxonomy:
    """k-means on unit directions: the chosen k, how it was chosen, and how the clusters relate to subjects."""

    k: int
    labels: np.ndarray  # cluster per question
    centroids: np.ndarray  # (k, d), unit length
    silhouette_by_k: dict[int, float]  # the criterion: the k with the highest silhouette is chosen
    ari: float  # against the subjects (NaN without subjects)
    nmi: float
    clusters: list[Cluster]

    def describe(self, texts: Optional[Sequence[str]] = None, width: int = 90) -> list[str]:
        """One line per cluster: size, top subjects, and the start of its most typical question."""
        lines = []
        for j, cluster in enumerate(self.clusters):
            mix = ", ".join(f"{s} {share:.0%}" for s, share in cluster.subject_mix[:3])
            example = ""
            if texts is not None and cluster.typical:
                example = " | " + " ".join(str(texts[cluster.typical[0]]).split())[:width]
            lines.append(f"cluster {j}: {cluster.size} questions; {mix}{example}")
        return lines


def choose_k(directions: np.ndarray, k_values: Sequence[int], *, seed: int = 0) -> dict[int, float]:
    """Silhouette (Euclidean on unit directions, i.e. chordal distance) of k-means for each k, on a sample."""
    rng = np.random.default_rng(seed)
    sample = directions
    if directions.shape[0] > SILHOUETTE_SAMPLE:
        sample = directions[rng.choice(directions.shape[0], SILHOUETTE_SAMPLE, replace=False)]
    scores = {}
    for k in k_values:
        if 2 <= k < sample.shape[0]:
            labels, _, _ = kmeans(sample, k, seed=seed, n_init=2)
            if len(np.unique(labels)) >= 2:
                scores[int(k)] = silhouette(sample, labels)
    if not scores:
        raise JeirtError(f"no usable k among {list(k_values)} for {directions.shape[0]} questions")
    return scores


def taxonomy(
    vectors: np.ndarray,
    subjects: Optional[Sequence[str]] = None,
    *,
    k: Optional[int] = None,
    k_values: Sequence[int] = tuple(range(4, 21, 2)),
    seed: int = 0,
) -> Taxonomy:
    """Cluster question directions with k-means and compare the clusters with the subjects.

    Args:
        vectors: question vectors (N, d), learned or raw encoder embeddings; only their directions are used.
        subjects: a subject per question for ARI/NMI and each cluster's subject mix.
        k: fixed number of clusters; None chooses it among `k_values` by the highest silhouette on a sample.
        seed: for the k-means starts and the silhouette sample.
    """
    array = np.asarray(vectors, dtype=np.float64)
    if array.ndim == 2:
        check_finite_rows(array, "vectors")  # one NaN row would poison a centroid and every silhouette, silently
    if k is not None and (isinstance(k, bool) or not isinstance(k, (int, np.integer))):
        raise JeirtError(f"k must be a whole number of clusters, got {k!r}")
    directions = unit_rows(array)
    silhouettes: dict[int, float] = {}
    if k is None:
        silhouettes = choose_k(directions, k_values, seed=seed)
        k = max(silhouettes, key=lambda key: silhouettes[key])
    labels, centroids, _ = kmeans(directions, k, seed=seed)
    centroids = unit_rows(centroids)
    subject_array = None if subjects is None else np.asarray(list(subjects), dtype=object)
    if subject_array is not None and subject_array.size != directions.shape[0]:
        raise JeirtError(f"one subject per question is needed, got {subject_array.size} for {directions.shape[0]}")
    clusters = []
    for j in range(k):
        members = np.flatnonzero(labels == j)
        closeness = directions[members] @ centroids[j]
        typical = members[np.argsort(-closeness, kind="stable")[:TYPICAL_PER_CLUSTER]].tolist()
        mix: list[tuple[str, float]] = []
        if subject_array is not None and members.size:
            names, counts = np.unique(subject_array[members].astype(str), return_counts=True)
            order = np.argsort(-counts, kind="stable")
            mix = [(str(names[i]), float(counts[i] / members.size)) for i in order]
        clusters.append(Cluster(int(members.size), [int(i) for i in typical], mix))
    ari = nmi = float("nan")
    if subject_array is not None:
        ari = adjusted_rand_index(subject_array.astype(str), labels)
        nmi = normalized_mutual_info(subject_array.astype(str), labels)
    return Taxonomy(int(k), labels, centroids.astype(np.float32), silhouettes, ari, nmi, clusters)
