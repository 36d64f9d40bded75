"""The questions a router did not train on: its test split, reproduced from what its manifest records.

A router trained by this project records its split's seed and sizes (manifest `training.split`). With the training
code at hand (the `train` extra: the split groups identical texts with pandas) the split is drawn again on the same
data and kept only if its sizes match the recorded ones; otherwise the caller is told why there is none.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional


def router_test_question_ids(manifest: Mapping[str, Any], data_dir: Path) -> tuple[Optional[list[str]], str]:
    """(question ids of the router's test split, how they were found) or (None, why not)."""
    split = (manifest.get("training") or {}).get("split") or {}
    sizes = ("n_train_questions", "n_val_questions", "n_test_questions")
    if "seed" not in split or not all(key in split for key in sizes):
        return None, "the router records no split"
    if int(split["n_test_questions"]) == 0:
        return None, "the router learned from every question of its data (no test part)"
    try:
        from jeirt_lite_training.data import load_dataset
        from jeirt_lite_training.splits import make_split
    except ImportError:
        return None, 'reproducing the router\'s split needs the train extra (pip install "jeirt-lite[train]")'
    dataset = load_dataset(data_dir)
    total = dataset.n_questions
    if total != sum(int(split[key]) for key in sizes):
        return None, f"{data_dir} has {total} questions, the router's split had {sum(int(split[k]) for k in sizes)}"
    wanted = [int(split[key]) for key in sizes]
    # The fractions are not recorded: the training defaults first, then the ones the sizes imply.
    for val_fraction, test_fraction in ((0.1, 0.2), (wanted[1] / total, wanted[2] / total)):
        drawn = make_split(dataset, seed=int(split["seed"]), val_fraction=val_fraction,
                                  test_fraction=test_fraction)
        if [len(drawn.train), len(drawn.val), len(drawn.test)] == wanted:
            ids = [dataset.question_ids[i] for i in drawn.test]
            return ids, f"the router's test split (seed {split['seed']}, drawn again: {len(ids)} questions)"
    return None, "drawing the router's split again gave other sizes (other fractions or data)"
