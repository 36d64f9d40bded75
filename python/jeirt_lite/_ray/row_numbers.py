"""A Parquet bank without an id column, read on Ray Data with each row's data row number, the id one machine gives
it: the driver takes the row groups' sizes from the file's footer, so each read task knows the number of the first
row it reads, and the numbers go to the workers with the texts."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import ray
import ray.data

from .._io.optional import require_pyarrow

# The numbers' column while the rows travel to the workers, beside the text; the output calls it `id`, as for any
# bank. A bank whose text column has this very name is not numbered: it needs an id column.
ROW_NUMBER_COLUMN = "__jeirt_data_row__"
ROW_TYPE = require_pyarrow().int64()


def read_numbered(path: Path, text_column: str, batch_size: int, also: Sequence[str] = ()) -> Any:
    """The Dataset of the bank at `path`: its `text_column` (and the columns `also`, such as `--forecast-by`'s) and
    each row's data row number (1-based, int64), in the file's order, read `batch_size` rows at a time. Ray Data
    knows its columns only once a read ran: asking for its schema (as `score_dataset` does) reads the first batch."""
    groups = row_groups(path)
    read = partial(read_row_groups, path=str(path), text_column=text_column, batch_size=batch_size, also=also)
    # One row group per call: the read tasks spread over the row groups.
    return ray.data.from_items(groups, override_num_blocks=len(groups)).map_batches(
        read, batch_size=1, batch_format="pyarrow"
    )


def row_groups(path: Path) -> list[dict[str, int]]:
    """Each row group of the Parquet file at `path` with the data row number of its first row, from the footer; a
    file of no row group gives group -1, none, whose read gives the empty bank's columns."""
    metadata = require_pyarrow().parquet.ParquetFile(str(path)).metadata
    groups, first = [], 1
    for group in range(metadata.num_row_groups):
        groups.append({"group": group, "first": first})
        first += metadata.row_group(group).num_rows
    return groups or [{"group": -1, "first": 1}]


def read_row_groups(
    groups: Any, path: str, text_column: str, batch_size: int, also: Sequence[str] = ()
) -> Iterator[Any]:
    """The numbered texts (and columns `also`) of the row groups in `groups` (a table of `group` and its `first`
    row's number), one table per `batch_size` rows; a group of no rows (or -1, none) gives one empty table, which
    still tells Ray Data the columns."""
    pa = require_pyarrow()
    bank = pa.parquet.ParquetFile(path)
    columns = list(dict.fromkeys([text_column, *also]))
    for group, first in zip(groups.column("group").to_pylist(), groups.column("first").to_pylist()):
        batches = bank.iter_batches(batch_size=batch_size, row_groups=[group], columns=columns) if group >= 0 else ()
        empty = True
        for batch in batches:
            yield _numbered(pa, batch.columns, first, columns)
            first += batch.num_rows
            empty = False
        if empty:
            yield _numbered(pa, [pa.array([], bank.schema_arrow.field(name).type) for name in columns], first, columns)


def _numbered(pa: Any, values: Sequence[Any], first: int, columns: Sequence[str]) -> Any:
    numbers = pa.array(range(first, first + len(values[0])), type=ROW_TYPE)
    return pa.table({ROW_NUMBER_COLUMN: numbers, **dict(zip(columns, values))})
