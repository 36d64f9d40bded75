"""A long or wide table of answers, read for the report as `train` reads it.

The runtime reads only data folders itself; a table (one row per answer, or one 0/1 column per LLM) is read by the
training library's loader (the `train` extra: pandas), with the same column names and rules, so that the report
sees the questions, LLMs and cells `train` saw, and can draw the router's test split again from them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Optional

import numpy as np

from .._errors import JeirtError
from .data import ResponseData


def read_answer_table(
    path: Path, manifest: Mapping[str, Any], columns: Optional[Mapping[str, str]],
    question_ids: Optional[Sequence[str]],
) -> tuple[ResponseData, Optional[Sequence[str]], str]:
    """(all of the table's questions; the ids to keep: those given, else the router's test split where it can be
    drawn again, else None for all; how they were chosen)."""
    try:
        from jeirt_lite_training.data import Columns, load_dataset
        from jeirt_lite_training.router_split import test_question_ids_of
    except ImportError:
        raise JeirtError(f'{path}: a table is read as train reads it, which needs the train extra (pip install '
                         '"jeirt-lite[train]"); a data folder needs nothing more') from None
    try:
        dataset = load_dataset(path, columns=Columns(**columns) if columns else None)
    except ValueError as err:  # the loader's DataError: a bad row or column, named
        raise JeirtError(str(err)) from None
    except OSError as err:
        raise JeirtError(f"{path}: cannot read it ({err.strerror or err})") from None
    how = "the question ids given"
    if question_ids is None:
        question_ids, how = test_question_ids_of(manifest, dataset, path)
    cells = dataset.responses
    data = ResponseData(list(map(str, dataset.question_ids)), list(dataset.texts),
                        np.asarray(dataset.subjects, dtype=object), list(dataset.llm_names),
                        np.asarray(cells.question, dtype=np.int64), np.asarray(cells.llm, dtype=np.int64),
                        np.asarray(cells.correct, dtype=np.float64))
    return data, question_ids, how
