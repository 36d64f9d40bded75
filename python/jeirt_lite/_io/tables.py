"""Whole tables in memory, every column, through the same record readers as `score`: the report's data folder
and training's tables."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._errors import SKIP_BAD, JeirtError, hinted_error
from .formats import check_input_file, table_format
from .vocabulary import columns_listed

# Rows per read: whole tables are in memory anyway, larger chunks only mean fewer Python-level batches.
TABLE_CHUNK = 1 << 16


@dataclass
class Table:
    """A table's columns as lists (CSV and TSV values are strings; JSONL and Parquet keep their types)."""

    path: Path
    columns: list[str]
    values: dict[str, list[Any]]
    rows: list[int]  # each kept row's data row number (1-based, header not counted)
    skipped: int = 0  # rows the format could not read, dropped with skip_bad
    problems: list[str] = field(default_factory=list)  # the first few of those, for a warning

    def __len__(self) -> int:
        return len(self.rows)

    def records(self) -> list[dict[str, Any]]:
        """The rows as dicts (column -> value)."""
        names = self.columns
        return [dict(zip(names, row)) for row in zip(*(self.values[name] for name in names))]


def read_table(path: Path, *, required: Sequence[str] = (), skip_bad: bool = False) -> Table:
    """Every row and column of a table file of any registered format.

    Raises:
        JeirtError: the file is missing or unreadable, lacks a `required` column, or has a row its format
            cannot read (with `skip_bad`, such rows are dropped and counted instead; a malformed CSV record
            still stops, as it ends what can be read).
    """
    path = Path(path)
    fmt = table_format(path)
    check_input_file(path, "table")
    try:
        records = fmt.records(path, TABLE_CHUNK)
    except OSError as err:
        raise JeirtError(f"{path}: cannot read it ({err.strerror or err})") from err
    table = Table(path, [], {}, [])
    try:
        _check_required(path, records.columns, required)
        for batch in records.batches(records.columns, required=required):
            keep = list(range(len(batch)))
            if batch.problems:
                for i, problem in batch.problems.items():
                    where = f"{path}: data row {batch.row(i)} ({records.row_note}{records.where(batch, i)})"
                    if i in batch.fatal:
                        raise JeirtError(f"{where} {problem}")
                    if not skip_bad:
                        raise hinted_error(f"{where}: {problem}", SKIP_BAD)
                    table.skipped += 1
                    if len(table.problems) < 3:
                        table.problems.append(f"{where}: {problem}")
                keep = [i for i in keep if i not in batch.problems]
            rows = range(batch.first_row, batch.first_row + len(batch)) if not batch.problems else [
                batch.row(i) for i in keep
            ]
            _append(table, batch.values, rows, keep, len(batch))
    finally:
        records.close()
    table.columns = list(records.columns or [])
    _check_required(path, table.columns, required)
    for name in table.columns:  # a table without rows still has its columns (a later JSONL column: see _append)
        table.values.setdefault(name, [])
    return table


def _append(table: Table, values: dict[str, Any], rows: Sequence[int], keep: list[int], size: int) -> None:
    """One batch's kept rows added to every column; a column first met in this batch (JSONL) gets None for the
    rows before it, and each batch carries every column met so far, so the columns stay as long as the rows."""
    for name, column in values.items():
        target = table.values.get(name)
        if target is None:
            target = table.values[name] = [None] * len(table.rows)
        target += column if len(keep) == size else [column[i] for i in keep]
    table.rows += rows


def _check_required(path: Path, columns: Any, required: Sequence[str]) -> None:
    if columns is None:  # a JSONL file checks its required fields row by row
        return
    missing = [name for name in required if name not in columns]
    if missing:
        raise JeirtError(f"{path}: no column {', '.join(missing)} ({columns_listed(missing, list(columns))})")
