"""Chunk-by-chunk writers for scored question banks (CSV, JSONL, Parquet), and the write-then-rename guard.

Columns, in order: id, llm_1, p_1, ..., llm_k, p_k, difficulty, and with all probabilities one `p[<llm>]`
column per LLM in the router's table order. Probabilities and difficulties are float32 values; the text formats print
them with 7 significant digits (float32 carries about 7).
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Optional

import numpy as np

from ._errors import JeirtError
from .readers import format_of, require_pyarrow


@dataclass
class ScoredChunk:
    """Scores for the rows of one chunk, in input order."""

    ids: list[Any]
    indices: np.ndarray  # (n, k) LLM table rows, best first
    probabilities: np.ndarray  # (n, k) float32
    difficulty: np.ndarray  # (n,) float32
    all_probabilities: Optional[np.ndarray] = None  # (n, K) float32, with --all


def column_names(k: int, llm_names: Sequence[str], all_probabilities: bool) -> list[str]:
    columns = ["id"]
    for rank in range(1, k + 1):
        columns += [f"llm_{rank}", f"p_{rank}"]
    columns.append("difficulty")
    if all_probabilities:
        columns += [f"p[{name}]" for name in llm_names]
    return columns


def _floats(values: np.ndarray) -> list[str]:
    return [f"{x:.7g}" for x in values.tolist()]


class Writer:
    def __init__(self, path: Path, k: int, llm_names: Sequence[str], all_probabilities: bool):
        self.path = path
        self.k = k
        self.llm_names = list(llm_names)
        self.names = np.asarray(self.llm_names, dtype=object)
        self.all_probabilities = all_probabilities
        self.columns = column_names(k, llm_names, all_probabilities)

    def write(self, chunk: ScoredChunk) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class CsvWriter(Writer):
    def __init__(self, path: Path, k: int, llm_names: Sequence[str], all_probabilities: bool):
        super().__init__(path, k, llm_names, all_probabilities)
        self.handle: IO[str] = open(path, "w", encoding="utf-8", newline="")  # noqa: SIM115 - closed by close()
        self.writer = csv.writer(self.handle)
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


class JsonlWriter(Writer):
    def __init__(self, path: Path, k: int, llm_names: Sequence[str], all_probabilities: bool):
        super().__init__(path, k, llm_names, all_probabilities)
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

    def __init__(self, path: Path, k: int, llm_names: Sequence[str], all_probabilities: bool):
        super().__init__(path, k, llm_names, all_probabilities)
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
                fields += [pa.field(f"p[{name}]", pa.float32()) for name in self.llm_names]
            self.writer = pa.parquet.ParquetWriter(str(self.path), pa.schema(fields))
        self.writer.close()


def score_table(pa: Any, ids: Any, chunk: ScoredChunk, name_array: Any, columns: Sequence[str]) -> Any:
    """The Arrow table of one scored chunk in the output's column layout (see `column_names`).

    `ids` is the id column as an Arrow array; `name_array` the LLM names as an Arrow string array. Shared by the
    Parquet writer and the Ray engine (jeirt_lite.ray_engine), so both write the same columns and types.
    """
    arrays = [ids]
    for rank in range(chunk.indices.shape[1]):
        arrays.append(name_array.take(pa.array(chunk.indices[:, rank])))
        arrays.append(pa.array(chunk.probabilities[:, rank], type=pa.float32()))
    arrays.append(pa.array(chunk.difficulty, type=pa.float32()))
    if chunk.all_probabilities is not None:
        arrays += [pa.array(chunk.all_probabilities[:, j], type=pa.float32()) for j in range(len(name_array))]
    return pa.Table.from_arrays(arrays, names=list(columns))


def open_writer(path: Path, fmt: str, k: int, llm_names: Sequence[str], all_probabilities: bool) -> Writer:
    writer_class = {"csv": CsvWriter, "jsonl": JsonlWriter, "parquet": ParquetWriter}[fmt]
    return writer_class(path, k, llm_names, all_probabilities)


def check_output_path(output: Path, inputs: Sequence[Path]) -> str:
    """The output's format; refuses an output that would replace an input or has nowhere to go."""
    fmt = format_of(output, "output")
    if output.is_dir():
        raise JeirtError(f"{output}: is a folder; give a file name such as {output / 'scores.parquet'}")
    if not output.parent.is_dir():
        raise JeirtError(f"{output.parent}: no such folder for the output")
    for source in inputs:
        if source.exists() and output.exists() and os.path.samefile(source, output):
            raise JeirtError(f"{output}: is also the input; write the scores to another file")
    return fmt


def partial_path(output: Path) -> Path:
    return output.parent / f".{output.name}.partial-{os.getpid()}"


@contextlib.contextmanager
def atomic_output(output: Path) -> Iterator[Path]:
    """Yield a temporary path next to `output`; rename it into place on success, delete it on any failure.

    Readers of `output` therefore see either nothing (or the previous file) or the complete new file, never
    half of one, even when the run is interrupted.
    """
    temporary = partial_path(output)
    try:
        yield temporary
        os.replace(temporary, output)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        raise
