"""Chunk-by-chunk writers for scored question banks (CSV, JSONL, Parquet).

Columns, in order: id, llm_1, p_1, ..., llm_k, p_k, difficulty, and with all probabilities one `p[<llm>]`
column per LLM in the router's table order, then with routing by a minimum probability the `fallback` column
(`vocabulary.score_columns`). Probabilities and difficulties are float32 values; the text formats print them with 7
significant digits (float32 carries about 7). A fallback is a bool in Parquet and JSONL (`true`/`false`) and the
same words in CSV and TSV: those `id_text` already writes for a bool id there, and the label vocabulary reads.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Optional

import numpy as np

from .. import _core
from .._errors import JeirtError
from .optional import require_pyarrow
from .vocabulary import score_columns


@dataclass
class ScoredChunk:
    """Scores for the rows of one chunk, in input order."""

    ids: list[Any]
    indices: np.ndarray  # (n, k) LLM table rows, best first
    probabilities: np.ndarray  # (n, k) float32
    difficulty: np.ndarray  # (n,) float32
    all_probabilities: Optional[np.ndarray] = None  # (n, K) float32, with --all
    # (n,) bool, with --min-probability: True where no LLM cleared it (`RouteResult.fallback`)
    fallback: Optional[np.ndarray] = None

    @classmethod
    def empty(cls, k: int, n_llms: int, all_probabilities: bool, fallback: bool = False) -> ScoredChunk:
        """The scores of no rows, with the shapes and types of any chunk's: written alone, they give an output
        its columns and types when no row is scored (an empty bank, or every row skipped)."""
        return cls(
            ids=[],
            indices=np.empty((0, k), dtype=np.int64),
            probabilities=np.empty((0, k), dtype=np.float32),
            difficulty=np.empty(0, dtype=np.float32),
            all_probabilities=np.empty((0, n_llms), dtype=np.float32) if all_probabilities else None,
            fallback=np.empty(0, dtype=bool) if fallback else None,
        )


def id_text(ident: Any) -> str:
    """An id as text, the same in every output: strings as they are, other JSON values as JSON (true, 1.5;
    an integer as Arrow casts it), anything else (a Parquet date) as str() gives it."""
    if isinstance(ident, str):
        return ident
    if ident is None or isinstance(ident, (bool, int, float, list, dict)):
        return json.dumps(ident, default=str)
    return str(ident)


def _floats(values: np.ndarray) -> list[str]:
    return [f"{x:.7g}" for x in values.tolist()]


def _booleans(values: np.ndarray) -> list[str]:
    """Bools as the text formats write them: JSON's `true` and `false` (see the module's docstring)."""
    return ["true" if value else "false" for value in values.tolist()]


class Writer:
    """Writes the scored chunks of one bank; `id_type` is the input's Arrow id type, when it has one; `fallback`:
    the chunks carry `ScoredChunk.fallback` (routing by a minimum probability), written as the last column."""

    def __init__(
        self, path: Path, k: int, llm_names: Sequence[str], all_probabilities: bool, id_type: Any = None,
        fallback: bool = False,
    ):
        self.path = path
        self.id_type_of_input = id_type
        self.k = k
        self.llm_names = list(llm_names)
        self.all_probabilities = all_probabilities
        self.fallback = fallback
        self.columns = score_columns(k, llm_names, all_probabilities, fallback)

    def write(self, chunk: ScoredChunk) -> None:
        raise NotImplementedError

    def _fallback_of(self, chunk: ScoredChunk) -> Optional[np.ndarray]:
        """The chunk's fallback flags, which it carries exactly when this writer's columns hold them."""
        if (chunk.fallback is not None) != self.fallback:
            raise ValueError(f"a chunk {'without' if self.fallback else 'with'} fallback flags for columns "
                             f"{'with' if self.fallback else 'without'} them")
        return chunk.fallback

    def close(self) -> None:
        raise NotImplementedError


class CsvWriter(Writer):
    """The header through Python's `csv.writer`; the rows formatted in Rust (`_core.format_score_rows`, the
    bytes `csv.writer` would write, floats as `_floats` prints them), which takes formatting off the thread
    that `score`'s encoding threads wait on."""

    delimiter = ","

    def __init__(
        self, path: Path, k: int, llm_names: Sequence[str], all_probabilities: bool, id_type: Any = None,
        fallback: bool = False,
    ):
        super().__init__(path, k, llm_names, all_probabilities, id_type, fallback)
        self.handle: IO[bytes] = open(path, "wb")  # noqa: SIM115 - closed by close()
        header = io.StringIO(newline="")
        csv.writer(header, delimiter=self.delimiter).writerow(self.columns)
        self.handle.write(header.getvalue().encode("utf-8"))

    def write(self, chunk: ScoredChunk) -> None:
        all_probabilities, fallback = chunk.all_probabilities, self._fallback_of(chunk)
        rows = _core.format_score_rows(
            [ident if type(ident) is str else "" if ident is None else id_text(ident) for ident in chunk.ids],
            self.llm_names,
            np.ascontiguousarray(chunk.indices, dtype=np.uint32),
            np.ascontiguousarray(chunk.probabilities, dtype=np.float32),
            np.ascontiguousarray(chunk.difficulty, dtype=np.float32),
            None if all_probabilities is None else np.ascontiguousarray(all_probabilities, dtype=np.float32),
            self.delimiter,
            None if fallback is None else np.ascontiguousarray(fallback, dtype=bool),
        )
        self.handle.write(rows)
        self.handle.flush()  # so the rows written so far are on disk at every chunk boundary

    def close(self) -> None:
        self.handle.close()


class TsvWriter(CsvWriter):
    delimiter = "\t"


class JsonlWriter(Writer):
    def __init__(
        self, path: Path, k: int, llm_names: Sequence[str], all_probabilities: bool, id_type: Any = None,
        fallback: bool = False,
    ):
        super().__init__(path, k, llm_names, all_probabilities, id_type, fallback)
        self.handle: IO[str] = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed by close()
        # Keys and LLM names are escaped once; each row is then plain string formatting.
        self.keys = [json.dumps(name) for name in self.columns]
        self.quoted_names = np.asarray([json.dumps(name) for name in self.llm_names], dtype=object)

    def write(self, chunk: ScoredChunk) -> None:
        # default=str: ids such as Parquet dates or decimals have no JSON form of their own.
        columns: list[list[str]] = [[json.dumps(ident, default=str) for ident in chunk.ids]]
        for rank in range(self.k):
            columns.append(self.quoted_names[chunk.indices[:, rank]].tolist())
            columns.append(_floats(chunk.probabilities[:, rank]))
        columns.append(_floats(chunk.difficulty))
        if chunk.all_probabilities is not None:
            columns += [_floats(chunk.all_probabilities[:, j]) for j in range(len(self.llm_names))]
        fallback = self._fallback_of(chunk)
        if fallback is not None:
            columns.append(_booleans(fallback))
        keys = self.keys
        lines = [
            "{" + ", ".join(f"{key}: {value}" for key, value in zip(keys, row)) + "}\n"
            for row in zip(*columns)
        ]
        self.handle.writelines(lines)
        self.handle.flush()

    def close(self) -> None:
        self.handle.close()


class ParquetWriter(Writer):
    """Appends one row group per chunk, under one schema decided the same way whatever the chunk size.

    The id column keeps the input's Arrow type when the input declares one (Parquet; a CSV or TSV id column is
    declared text, as its every cell is). Ids of no declared type (JSONL ids are any JSON value, row numbers are
    integers) are int64 when every id of the bank is an integer, else text: when a later chunk brings the first
    non-integer id, the row groups written so far are rewritten with their ids as text.
    """

    def __init__(
        self, path: Path, k: int, llm_names: Sequence[str], all_probabilities: bool, id_type: Any = None,
        fallback: bool = False,
    ):
        super().__init__(path, k, llm_names, all_probabilities, id_type, fallback)
        self.pa = require_pyarrow()
        self.writer: Any = None
        if id_type is not None and self.pa.types.is_large_string(id_type):
            id_type = self.pa.string()  # as the Ray engine writes it
        self.declared_type = id_type
        self.integer_ids = id_type is None  # schemaless ids: int64 until a non-integer id comes
        # Names are looked up with Arrow's `take` on the index column: much faster than converting Python
        # strings.
        self.name_array = self.pa.array(self.llm_names, type=self.pa.string())

    def _ids(self, ids: list[Any]) -> Any:
        pa = self.pa
        if self.declared_type is not None:
            try:
                return pa.array(ids, type=self.declared_type)
            except (pa.ArrowException, TypeError, ValueError, OverflowError) as err:
                raise JeirtError(f"{self.path}: ids do not fit the input's id type {self.declared_type}: {err}") from err
        if self.integer_ids:
            if all(ident is None or type(ident) is int for ident in ids):
                try:
                    return pa.array(ids, type=pa.int64())
                except (pa.ArrowException, OverflowError):  # an integer beyond int64
                    pass
            self._ids_become_text()
        return pa.array([None if ident is None else id_text(ident) for ident in ids], type=pa.string())

    def _ids_become_text(self) -> None:
        """Rewrites the row groups written so far with text ids; later chunks are written as text."""
        self.integer_ids = False
        if self.writer is None:
            return
        pa = self.pa
        self.writer.close()
        written = pa.parquet.ParquetFile(str(self.path))
        schema = written.schema_arrow.set(0, pa.field("id", pa.string()))
        widened = self.path.with_name(self.path.name + ".text-ids")
        try:
            self.writer = pa.parquet.ParquetWriter(str(widened), schema)
            for group in range(written.num_row_groups):
                table = written.read_row_group(group)
                self.writer.write_table(table.set_column(0, "id", table.column(0).cast(pa.string())))
            written.close()
            # The open writer keeps writing to the renamed file: the partial file now has text ids.
            os.replace(widened, self.path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                widened.unlink()
            raise

    def _table(self, chunk: ScoredChunk) -> Any:
        self._fallback_of(chunk)  # checked: the table's columns are this writer's
        return score_table(self.pa, self._ids(chunk.ids), chunk, self.name_array, self.columns)

    def write(self, chunk: ScoredChunk) -> None:
        table = self._table(chunk)
        if self.writer is None:
            self.writer = self.pa.parquet.ParquetWriter(str(self.path), table.schema)
        self.writer.write_table(table)

    def close(self) -> None:
        if self.writer is None:  # no rows at all: still a valid, empty file with the columns and types of any
            # other: the input's id type where it declares one (as the Ray engine writes it), else int64 (no id
            # that is not an integer came)
            empty = self._table(ScoredChunk.empty(self.k, len(self.llm_names), self.all_probabilities, self.fallback))
            self.writer = self.pa.parquet.ParquetWriter(str(self.path), empty.schema)
        self.writer.close()


def score_table(pa: Any, ids: Any, chunk: ScoredChunk, name_array: Any, columns: Sequence[str]) -> Any:
    """The Arrow table of one scored chunk in the output's column layout (see `vocabulary.score_columns`).

    `ids` is the id column as an Arrow array; `name_array` the LLM names as an Arrow string array. Shared by
    the Parquet writer and the Ray engine (jeirt_lite.ray_engine), so both write the same columns and types.
    """
    arrays = [ids]
    for rank in range(chunk.indices.shape[1]):
        arrays.append(name_array.take(pa.array(chunk.indices[:, rank])))
        arrays.append(pa.array(chunk.probabilities[:, rank], type=pa.float32()))
    arrays.append(pa.array(chunk.difficulty, type=pa.float32()))
    if chunk.all_probabilities is not None:
        arrays += [pa.array(chunk.all_probabilities[:, j], type=pa.float32()) for j in range(len(name_array))]
    if chunk.fallback is not None:
        arrays.append(pa.array(chunk.fallback, type=pa.bool_()))
    return pa.Table.from_arrays(arrays, names=list(columns))
