"""A router's test split drawn again from what its manifest records (`training.split`: the seed and the sizes), for
measuring a router on the questions it never saw (the report, the laboratory's calibration check)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional

from .data import load_dataset
from .splits import make_split
from .types import Dataset

SPLIT_SIZES = ("n_train_questions", "n_val_questions", "n_test_questions")


def recorded_split(manifest: Mapping[str, Any]) -> tuple[Optional[Mapping[str, Any]], str]:
    """(the manifest's split record, "") or (None, why there is no test part to draw)."""
    split = (manifest.get("training") or {}).get("split") or {}
    if "seed" not in split or not all(key in split for key in SPLIT_SIZES):
        return None, "the router records no split"
    if int(split["n_test_questions"]) == 0:
        return None, "the router learned from every question of its data (no test part)"
    return split, ""


def router_test_question_ids(manifest: Mapping[str, Any], data_dir: Path) -> tuple[Optional[list[str]], str]:
    """(question ids of the router's test split, how they were found) or (None, why not). The split is kept only
    if its sizes match the recorded ones."""
    split, why = recorded_split(manifest)
    if split is None:
        return None, why
    return test_question_ids_of(manifest, load_dataset(data_dir), data_dir)


def test_question_ids_of(manifest: Mapping[str, Any], dataset: Dataset,
                         data_dir: Path) -> tuple[Optional[list[str]], str]:
    """`router_test_question_ids` on a dataset already read from `data_dir`."""
    split, why = recorded_split(manifest)
    if split is None:
        return None, why
    total = dataset.n_questions
    wanted = [int(split[key]) for key in SPLIT_SIZES]
    if total != sum(wanted):
        return None, f"{data_dir} has {total} questions, the router's split had {sum(wanted)}"
    # The recorded fractions; a router made before they were recorded: the split's defaults, then the fractions its
    # sizes imply.
    tries = [(split["val_fraction"], split["test_fraction"])] if "test_fraction" in split else []
    tries += [(0.1, 0.2), (wanted[1] / total, wanted[2] / total)]
    for val_fraction, test_fraction in tries:
        drawn = make_split(dataset, seed=int(split["seed"]), val_fraction=val_fraction, test_fraction=test_fraction)
        if [len(drawn.train), len(drawn.val), len(drawn.test)] == wanted:
            ids = [dataset.question_ids[i] for i in drawn.test]
            return ids, f"the router's test split (seed {split['seed']}, drawn again: {len(ids)} questions)"
    return None, "drawing the router's split again gave other sizes (other fractions or data)"
