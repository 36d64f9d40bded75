"""The questions a router did not train on: its test split, reproduced from what its manifest records.

A router trained by this project records its split's seed and sizes (manifest `training.split`). Drawing the split
again is the training library's (the `train` extra: the split groups identical texts with pandas): it is imported
only here, when a report asks for it, and the caller is told why there is no test part when it cannot be had.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import numpy as np

from ._table_data import read_answer_table
from .data import ResponseData, only_questions, read_response_folder

if TYPE_CHECKING:
    from .._router import Router

# The fewest questions a report reads: below, its sections (AUC, calibration bins, a probe) mean nothing.
MIN_QUESTIONS = 3

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


def report_questions(
    router: Router, data_dir: Path, folder: bool, columns: Optional[Mapping[str, str]],
    question_ids: Optional[Sequence[str]],
) -> tuple[ResponseData, bool, str]:
    """(the questions a report reads: those given, else the router's test split where it can be drawn again, else
    those its record of training questions does not hold, else all; whether they are questions it did not learn
    from, as far as can be told (False: all, training questions among them); how they were chosen)."""
    given = question_ids is not None
    if folder:
        data, how = read_response_folder(data_dir), "the question ids given"
        if question_ids is None:
            question_ids, how = router_test_question_ids(router.manifest, data_dir)
    else:
        data, question_ids, how = read_answer_table(data_dir, router.manifest, columns, question_ids)
    if question_ids is not None:
        chosen = only_questions(data, question_ids, data_dir)
        # The split is drawn from the questions in the order the data lists them: the same answers in another row
        # order (or other data of the same size) give a split of the same sizes holding questions the router learned
        # from, which would pass for its test split. Its record of those questions tells.
        learned = None if given else router.learned_from(chosen.texts)
        if learned is None or not learned.any():
            return chosen, True, how
        how = (f"drawing the router's split again gave {int(learned.sum())} of its {len(learned)} test questions "
               "among those it learned from (its training_questions.npy): other data, or the same in another row order")
    return _not_learned_from(router, data, how)


def _not_learned_from(router: Router, data: ResponseData, how: str) -> tuple[ResponseData, bool, str]:
    """Without a test split: the questions the router's record of its training questions (training_questions.npy)
    does not hold, where there are any; else all, told as such (`how`: why there is no test split)."""
    learned = router.learned_from(data.texts)
    if learned is None or learned.all():
        return data, False, how
    unseen = np.flatnonzero(~learned)
    if unseen.size < MIN_QUESTIONS:  # too few to report on: all of them, told as such, not a refusal of the data
        return data, False, (f"{how}, and only {unseen.size} of these {len(learned)} questions are ones the router "
                             "did not learn from (its training_questions.npy), too few for a report")
    if not learned.any():
        return data, True, "none of these questions is among those the router learned from (its training_questions.npy)"
    return data.subset(unseen), True, (f"the {unseen.size} of these {len(learned)} questions the router did not learn "
                                        f"from (its training_questions.npy holds the others; {how})")
