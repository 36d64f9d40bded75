"""The forecast per group of questions on Ray (`score --forecast-by COLUMN --engine ray`, `forecast_by_dataset`):
the workers carry each row's group value beside its scores (`GROUP_COLUMN`), each batch is summed where it is, per
group and LLM (`batch_group_sums`), and the driver adds those few rows as they arrive (`expected_accuracy_by`), so
the N x K matrix of P(correct) never reaches it. The sums are `_group_forecast.GroupSums`' on both sides, so the
groups, their order, the MAX_GROUPS bound and its words are those of one machine."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Optional

import numpy as np

from .._errors import column_hint, hinted_error
from .._group_forecast import GroupForecast, GroupSums
from .._io.optional import require_pyarrow
from .._io.vocabulary import column_missing, probability_column

# Each scored row's group value, as text, while the scores travel to the driver; never written to the output. A
# name of its own: the group column may be the id column, or be named like a score column.
GROUP_COLUMN = "__jeirt_group__"
COUNT_COLUMN = "count"


def check_group_column(names: Sequence[str], group_column: Optional[str]) -> None:
    """Refuse a group column the bank of columns `names` does not hold, in the single-machine reader's words."""
    if group_column is not None and group_column not in names:
        raise hinted_error(column_missing("group", group_column, list(names)), column_hint("forecast_by"))


def batch_group_sums(batch: Any, llms: Sequence[str]) -> Any:
    """One row per group of a scored batch: the group, its row count and each LLM's sum of P(correct) in float64,
    added row by row as one machine adds them."""
    pa = require_pyarrow()
    columns = [probability_column(name) for name in llms]
    probabilities = np.zeros((batch.num_rows, len(columns)), dtype=np.float64)
    for j, name in enumerate(columns):
        probabilities[:, j] = batch.column(name).to_numpy(zero_copy_only=False)
    sums = GroupSums(llms, GROUP_COLUMN, max_groups=None)  # bounded where every batch's groups meet: the driver
    sums.add(batch.column(GROUP_COLUMN).to_pylist(), probabilities)
    partial = sums.partial_sums()
    table = {GROUP_COLUMN: pa.array([group for group, _, _ in partial], pa.string()),
             COUNT_COLUMN: pa.array([count for _, _, count in partial], pa.int64())}
    for j, name in enumerate(columns):
        table[name] = pa.array([float(totals[j]) for _, totals, _ in partial], pa.float64())
    return pa.table(table)


def expected_accuracy_by(
    scored: Any, llms: Sequence[str], column: str, on_rows: Optional[Callable[[int], None]] = None
) -> GroupForecast:
    """Each LLM's mean P(correct) on the whole scored Dataset and on each group of its rows (`column` names the
    bank's column, for the table and the errors). The Dataset holds the `p[<llm>]` columns and `GROUP_COLUMN`.

    Each batch's sums per group are computed where the batch is; the driver adds them as they arrive, refusing more
    than MAX_GROUPS groups as one machine does, and calls `on_rows` with each batch group's row count.
    """
    columns = [probability_column(name) for name in llms]
    partials = scored.map_batches(batch_group_sums, fn_kwargs={"llms": list(llms)}, batch_format="pyarrow")
    sums = GroupSums(llms, column)
    for row in partials.iter_rows():
        count = int(row[COUNT_COLUMN])
        sums.add_sums(str(row[GROUP_COLUMN]), [row[name] for name in columns], count)
        if on_rows is not None:
            on_rows(count)
    return sums.result()
