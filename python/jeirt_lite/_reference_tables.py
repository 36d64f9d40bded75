"""The alignment reference a router folder stores (reference.safetensors: unit directions of a sample of training
questions and the centre they are taken around): the checks both pass when a router is saved and when it is loaded,
and the manifest's alignment block saved with them."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional

import numpy as np

from ._artifact_files import read_tensors
from ._errors import JeirtError
from ._manifest import DEFAULT_ALIGNMENT_TOP_K, AlignmentSpec

REFERENCE_TENSOR = "reference_directions"
CENTER_TENSOR = "reference_center"


def saved_reference(
    reference: Optional[np.ndarray], alignment: Optional[Mapping[str, Any]], center: Optional[np.ndarray], dim: int,
    where: str,
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """The reference directions and their centre to save, checked, and the manifest's alignment block: `alignment`
    with the number of directions, and top_k DEFAULT_ALIGNMENT_TOP_K (at most that number) unless it gives one."""
    directions = validate_reference(reference, alignment, dim, where)
    centre = validate_center(center, dim, where)
    assert alignment is not None
    rows = int(directions.shape[0])
    return directions, centre, {"top_k": min(DEFAULT_ALIGNMENT_TOP_K, rows), **dict(alignment), "n_reference": rows}


def read_reference(path: Path, alignment: AlignmentSpec, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """A saved router's reference directions and centre (read-only), checked against its alignment block."""
    tables, _ = read_tensors(path, (REFERENCE_TENSOR, CENTER_TENSOR))
    reference = validate_reference(tables[REFERENCE_TENSOR], alignment.to_json(), dim, str(path))
    center = validate_center(tables[CENTER_TENSOR], dim, str(path))
    if reference.shape[0] != alignment.n_reference:
        raise JeirtError(
            f"{path}: holds {reference.shape[0]} reference directions, router.json's alignment.n_reference "
            f"says {alignment.n_reference}"
        )
    reference.setflags(write=False)
    center.setflags(write=False)
    return reference, center


def validate_reference(
    reference: Optional[np.ndarray], alignment: Optional[Mapping[str, Any]], dim: int, where: str
) -> np.ndarray:
    """Check the optional reference directions and their alignment block; return them as float32."""
    if reference is None or alignment is None:
        raise JeirtError(f"{where}: reference directions and the alignment block (threshold) go together")
    array = np.asarray(reference)
    if array.ndim != 2 or array.shape[0] < 1 or array.shape[1] != dim:
        raise JeirtError(f"{where}: reference directions must have shape (R >= 1, {dim}), got {array.shape}")
    if not np.issubdtype(array.dtype, np.floating) or not np.isfinite(array).all():
        raise JeirtError(f"{where}: reference directions must be finite floats")
    threshold = alignment.get("threshold") if isinstance(alignment, Mapping) else None
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not np.isfinite(threshold):
        raise JeirtError(f"{where}: alignment.threshold must be a finite number, got {threshold!r}")
    return np.ascontiguousarray(array, dtype=np.float32)


def validate_center(center: Optional[np.ndarray], dim: int, where: str) -> np.ndarray:
    if center is None:
        return np.zeros(dim, dtype=np.float32)
    array = np.asarray(center)
    if array.shape != (dim,) or not np.issubdtype(array.dtype, np.floating) or not np.isfinite(array).all():
        raise JeirtError(f"{where}: reference center must be {dim} finite floats, got shape {array.shape}")
    return np.ascontiguousarray(array, dtype=np.float32)
