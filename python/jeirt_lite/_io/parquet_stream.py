"""Whole Parquet files for the Ray engine (jeirt_lite.ray_engine), which streams Arrow tables rather than the rows
`writers.ParquetWriter` takes: a bank's row count and columns from its footer, and a stream of scored tables
written, in order, into one Parquet file that appears only when complete. No Ray here: the tables come as any
iterable."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .._errors import JeirtError
from .optional import require_pyarrow
from .outputs import atomic_output
from .records import check_unique_columns


def parquet_rows(path: Path) -> int:
    """The rows of the Parquet file at `path`, from its footer (nothing else is read)."""
    return int(_footer(path).num_rows)


def parquet_column_types(path: Path) -> dict[str, Any]:
    """The columns of the Parquet file at `path` and their Arrow types, in order, from its footer (nothing else is
    read); a column named twice is refused, as one machine's reader refuses it (a mapping would keep one of them)."""
    schema = _footer(path).schema.to_arrow_schema()
    check_unique_columns(path, schema.names)
    return dict(zip(schema.names, schema.types))


def _footer(path: Path) -> Any:
    pa = require_pyarrow()
    try:
        return pa.parquet.ParquetFile(str(path)).metadata
    except (pa.ArrowInvalid, OSError) as err:
        raise JeirtError(f"{path}: not a readable Parquet file ({err})") from err


def write_tables(tables: Iterable[Any], output: Path, drop: Sequence[str], schema: Any) -> int:
    """Write the Arrow `tables`, in order and without the columns `drop`, into one Parquet file at `output` (under
    a temporary name, renamed when complete); returns the rows written.

    `schema` is the tables' schema (before the drop), written alone when no table comes: whoever streams the
    tables may drop the empty ones (Ray Data does), so an empty bank, or one whose every row was skipped, comes as
    no table at all, and its output is a file of no rows, as `writers.ParquetWriter` writes one.
    """
    pa = require_pyarrow()
    rows = 0
    with atomic_output(output) as temporary:
        writer: Any = None
        try:
            for table in tables:
                if drop:
                    table = table.drop_columns(list(drop))
                if writer is None:
                    writer = pa.parquet.ParquetWriter(str(temporary), table.schema)
                if table.num_rows:
                    writer.write_table(table)
                rows += table.num_rows
            if writer is None:
                kept = [field for field in schema if field.name not in set(drop)]
                writer = pa.parquet.ParquetWriter(str(temporary), pa.schema(kept))
        finally:
            if writer is not None:
                writer.close()
    return rows
