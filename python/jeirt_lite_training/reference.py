"""What a router needs for alignment scores: reference directions of training questions and a threshold set on
validation questions (see jeirt_lite._alignment). Used by the export so new routers carry it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._runtime import alignment


def alignment_reference(
    train_vectors: np.ndarray, val_vectors: np.ndarray, *, percentile: float | None = None, seed: int = 0
) -> tuple[np.ndarray | None, np.ndarray | None, dict[str, Any] | None]:
    """(reference directions, center, alignment block) from question vectors of the train and validation parts."""
    pct = alignment.DEFAULT_PERCENTILE if percentile is None else percentile
    reference, center = alignment.reference_directions(train_vectors, seed=seed)
    # A question's alignment averages its top_k nearest directions; the router refuses a top_k above their number
    # (a data set of a few questions leaves fewer than alignment.TOP_K).
    top_k = min(alignment.TOP_K, reference.shape[0])
    threshold = alignment.validation_threshold(val_vectors, reference, pct, top_k, center=center)
    block = {
        "threshold": threshold,
        "percentile": pct,
        "top_k": top_k,
        "reference": f"unit directions of {reference.shape[0]} training questions (seeded sample)",
        "threshold_from": f"{pct:g}th percentile of {len(val_vectors)} validation questions' alignment",
    }
    return reference, center, block
