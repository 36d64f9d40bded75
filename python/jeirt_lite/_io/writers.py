"""Chunk-by-chunk writers for scored question banks (CSV, JSONL, Parquet).

Columns, in order: id, llm_1, p_1, ..., llm_k, p_k, difficulty, and with all probabilities one `p[<llm>]`
column per LLM in the router's table order (`vocabulary.score_columns`). Probabilities and difficulties are
float32 values; the text formats print them with 7 significant digits (float32 carries about 7).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Optional

import numpy as np

from .._errors import JeirtError
from .optional import require_pyarrow
from .vocabulary import probability_column, score_columns


@dataclass
class ScoredChunk:
    """Scores for the rows of one chunk, in input order."""

    ids: list[Any]
    indices: np.ndarray  # (n, k) LLM table rows, best first
    probabilities: np.ndarray  # (n, k) float32
    difficulty: np.ndarray  # (n,) float32
    all_probabilities: Optional[np.ndarray] = None  # (n, K) float32, with --all


def _floats(values: np.ndarray) -> list[str]:
    return [f"{x:.7g}" for x in values.tolist()]


class Writer:
    """Writes the scored chunks of one bank; `id_type` is the input's Arrow id type, when it has one."""

    def __init__(
        self, path: Path, k: int, llm_names: Sequence[str], all_probabilities: bool, id_type: Any = None
    ):
        self.path = path
        self.id_type_of_input = id_type
        self.k = k
        self.llm_names = list(llm_names)
        self.names = np.asarray(self.llm_names, dtype=object)
        self.all_probabilities = all_probabilities
        self.columns = score_columns(k, llm_names, all_probabilities)

    def write(self, chunk: ScoredChunk) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class CsvWriter(Writer):
    delimiter = ","

    def __init__(
        self, path: Path, k: int, llm_names: Sequence[str], all_probabilities: bool, id_type: Any = None
    ):
        super().__init__(path, k, llm_names, all_probabilities, id_type)
        self.handle: IO[str] = open(path, "w", encoding="utf-8", newline="")  # noqa: SIM115 - closed by close()
        self.writer = csv.writer(self.handle, delimiter=self.delimiter)
        self.writer.writerow(self.columns)

    def write(self, chunk: ScoredChunk) -> None:
        columns: list[list[Any]] = [["" if ident is None else ident for ident in chunk.ids]]
        for rank in range(self.k):
            columns.append(self.names[chunk.indices[:, rank]].tolist())
            columns.append(_floats(chunk.probabilities[:, rank]))
        columns.append(_floats(chunk.difficulty))
        if chunk.all_probabilities is not None:
            columns += [_floats(chunk.all_probabilities[:, j]) for j in range(len(self.llm_names))]
        self.writer.writerows(zip(*columns))
        self.handle.flush()  # so the rows written so far are on disk at every chunk boundary

    def close(self) -> None:
        self.handle.close()


class TsvWriter(CsvWriter):
    delimiter = "\t"


class JsonlWriter(Writer):
    def __init__(
        self, path: Path, k: int, llm_names: Sequence[str], all_probabilities: bool, id_type: Any = None
    ):
        super().__init__(path, k, llm_names, all_probabilities, id_type)
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
    """Appends one row group per chunk. The id column's type comes from the first chunk (text when mixed)."""

    def __init__(
        self, path: Path, k: int, llm_names: Sequence[str], all_probabilities: bool, id_type: Any = None
    ):
        super().__init__(path, k, llm_names, all_probabilities, id_type)
        self.pa = require_pyarrow()
        self.writer: Any = None
        self.id_type: Any = None
        # Names are looked up with Arrow's `take` on the index column: much faster than converting Python
        # strings.
        self.name_array = self.pa.array(self.llm_names, type=self.pa.string())

    def _ids(self, ids: list[Any]) -> Any:
        pa = self.pa
        if self.id_type is None:
            try:
                array = pa.array(ids)
            except (pa.ArrowException, TypeError, ValueError):  # mixed kinds, e.g. numbers and strings
                array = pa.array([None if ident is None else str(ident) for ident in ids], type=pa.string())
            if pa.types.is_null(array.type):
                array = array.cast(pa.string())
            self.id_type = array.type
            return array
        try:
            return pa.array(ids, type=self.id_type)
        except (pa.ArrowException, TypeError, ValueError) as err:
            if pa.types.is_string(self.id_type):
                return pa.array([None if ident is None else str(ident) for ident in ids], type=pa.string())
            raise JeirtError(
                f"{self.path}: the id column changes type part way through "
                f"(first rows were {self.id_type}): {err}"
            ) from err

    def _table(self, chunk: ScoredChunk) -> Any:
        return score_table(self.pa, self._ids(chunk.ids), chunk, self.name_array, self.columns)

    def write(self, chunk: ScoredChunk) -> None:
        table = self._table(chunk)
        if self.writer is None:
            self.writer = self.pa.parquet.ParquetWriter(str(self.path), table.schema)
        self.writer.write_table(table)

    def close(self) -> None:
        if self.writer is None:  # no rows at all: still a valid, empty file with the right columns
            pa = self.pa
            fields = [pa.field("id", pa.string())]
            for rank in range(1, self.k + 1):
                fields += [pa.field(f"llm_{rank}", pa.string()), pa.field(f"p_{rank}", pa.float32())]
            fields.append(pa.field("difficulty", pa.float32()))
            if self.all_probabilities:
                fields += [pa.field(probability_column(name), pa.float32()) for name in self.llm_names]
            self.writer = pa.parquet.ParquetWriter(str(self.path), pa.schema(fields))
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
    return pa.Table.from_arrays(arrays, names=list(columns))
