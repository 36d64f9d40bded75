"""Whole Parquet files for the Ray engine (jeirt_lite.ray_engine), which streams Arrow tables rather than the rows
`writers.ParquetWriter` takes: a bank's row count from its footer, and a stream of scored tables written, in order,
into one Parquet file that appears only when complete. No Ray here: the tables come as any iterable."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .._errors import JeirtError
from .optional import require_pyarrow
from .outputs import atomic_output


def parquet_rows(path: Path) -> int:
    """The rows of the Parquet file at `path`, from its footer (nothing else is read)."""
    pa = require_pyarrow()
    try:
        return int(pa.parquet.ParquetFile(str(path)).metadata.num_rows)
    except (pa.ArrowInvalid, OSError) as err:
        raise JeirtError(f"{path}: not a readable Parquet file ({err})") from err


def write_tables(tables: Iterable[Any], output: Path, drop: Sequence[str]) -> int:
    """Write the Arrow `tables`, in order and without the columns `drop`, into one Parquet file at `output` (under
    a temporary name, renamed when complete); returns the rows written. No table at all is an error: there would be
    no schema to write."""
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
        finally:
            if writer is not None:
                writer.close()
        if writer is None:
            # Whoever streams the tables may drop the empty ones (Ray Data does): an empty bank, or one whose every
            # row was skipped, then comes as no table at all.
            raise JeirtError(f"no scored table came to write (an empty bank, or every row skipped): {output} not written")
    return rows
