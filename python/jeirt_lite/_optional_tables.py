"""The optional tables of a router folder that go with a block of router.json (onboarded LLMs' corrections,
neighbour votes): both or neither must be there, and each is parsed against the router's LLMs and its encoder's
feature size (artifact.load_artifact calls these)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional

import numpy as np

from ._errors import JeirtError
from ._feature_offsets import FeatureCorrections, parse_corrections
from ._manifest import Manifest, thaw
from ._neighbours import NEIGHBOURS_ROLE, NeighbourVotes, parse_neighbours


def read_corrections(manifest: Manifest, files: Mapping[str, Path]) -> Optional[FeatureCorrections]:
    tensors = _optional_tensors(manifest.corrections, files, "corrections")
    if tensors is None:
        return None
    path = str(files["corrections"])
    width = manifest.encoder.features_width
    return parse_corrections(thaw(manifest.corrections), tensors, list(manifest.llms), width, path)


def read_neighbours(manifest: Manifest, files: Mapping[str, Path]) -> Optional[NeighbourVotes]:
    tensors = _optional_tensors(manifest.neighbours, files, NEIGHBOURS_ROLE)
    if tensors is None:
        return None
    path = str(files[NEIGHBOURS_ROLE])
    width = manifest.encoder.features_width
    return parse_neighbours(thaw(manifest.neighbours), tensors, list(manifest.llms), width, path)


def _optional_tensors(block: Any, files: Mapping[str, Path], role: str) -> Optional[dict[str, np.ndarray]]:
    """The tensors of an optional file that goes with router.json's block `role` (None when neither is there)."""
    if block is None and role not in files:
        return None
    if role not in files or block is None:
        raise JeirtError(f"{files['llms'].parent}: router.json's {role} block and files.{role} go together")
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    path = files[role]
    try:
        return dict(load_file(str(path)))
    except (SafetensorError, OSError, ValueError) as err:
        raise JeirtError(f"{path}: not a readable safetensors file ({err})") from err
