"""The questions a router did not train on: its test split, reproduced from what its manifest records.

A router trained by this project records its split's seed and sizes (manifest `training.split`). Drawing the split
again is the training library's (the `train` extra: the split groups identical texts with pandas): it is imported
only here, when a report asks for it, and the caller is told why there is no test part when it cannot be had.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional

TRAIN_EXTRA = 'reproducing the router\'s split needs the train extra (pip install "jeirt-lite[train]")'


def router_test_question_ids(manifest: Mapping[str, Any], data_dir: Path) -> tuple[Optional[list[str]], str]:
    """(question ids of the router's test split, how they were found) or (None, why not)."""
    try:
        from jeirt_lite_training.router_split import router_test_question_ids as drawn_again
    except ImportError:
        return None, TRAIN_EXTRA
    ids: Optional[list[str]]
    try:
        ids, how = drawn_again(manifest, data_dir)
    except ValueError as err:  # training's loader refuses what the report still reads (a folder without answers)
        return None, f"the router's split could not be drawn again ({err})"
    return ids, how
