"""Streaming readers for question banks: CSV, JSONL and Parquet texts, and .npy question vectors.

Each reader yields chunks of at most `chunk_size` rows and never holds more than one chunk, so memory stays
flat whatever the file size. Rows are numbered from 1 over the data rows (a CSV header is not counted); a bad row
(no text, an empty or non-text value, bytes that are not UTF-8, a line that is not JSON) either stops the run with
an error naming that row, or, with `skip_bad`, is dropped and counted.
"""

from __future__ import annotations

import csv
import importlib
import io
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Optional, cast

import numpy as np

from ._errors import JeirtError

TEXT_SUFFIXES = {
    ".csv": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
}
# Tried in this order when the user names no id column.
DEFAULT_ID_COLUMNS = ("id", "question_id")
# MMLU-style texts carry the question and all options in one field; the csv module's 128 KiB default is too
# small for some banks. 2**31 - 1 is the largest value every platform's C long accepts.
CSV_FIELD_LIMIT = 2**31 - 1


def format_of(path: Path, what: str = "input") -> str:
    """'csv', 'jsonl' or 'parquet' from the file's suffix."""
    kind = TEXT_SUFFIXES.get(path.suffix.lower())
    if kind is None:
        known = ", ".join(sorted(TEXT_SUFFIXES))
        raise JeirtError(
            f"{path}: cannot tell the {what} format from the suffix {path.suffix!r} (use one of {known})"
        )
    return kind


def require_pyarrow() -> Any:
    """Import pyarrow (Parquet support is an optional extra)."""
    try:
        # import_module keeps the optional, untyped dependency out of mypy's import checks.
        pyarrow = importlib.import_module("pyarrow")
        importlib.import_module("pyarrow.parquet")  # makes pyarrow.parquet an attribute
    except ImportError as err:
        raise JeirtError(
            "Parquet files need pyarrow, which is not installed: pip install 'jeirt-lite[parquet]'"
        ) from err
    return pyarrow


@dataclass
class TextChunk:
    """Rows kept from one chunk of the input: their ids and texts, in input order."""

    ids: list[Any]
    texts: list[str]


def text_problem(value: Any) -> Optional[str]:
    """Why `value` cannot be a question text, or None when it can."""
    if value is None:
        return "has no text (missing or null)"
    if not isinstance(value, str):
        return f"text is a {type(value).__name__}, not a string"
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates: bytes that were not UTF-8, kept by surrogateescape
            return "text holds bytes that are not valid UTF-8"
    if not value.strip():
        return "text is empty"
    return None


class TextReader:
    """Base class: chunked iteration, bad-row policy and progress information."""

    # How data rows are counted, said in every bad-row message.
    row_note = "1-based"

    def __init__(
        self, path: Path, text_column: str, id_column: Optional[str], chunk_size: int, skip_bad: bool
    ):
        if chunk_size < 1:
            raise JeirtError(f"chunk size must be at least 1, got {chunk_size}")
        self.path = path
        self.text_column = text_column
        self.requested_id_column = id_column
        self.id_column: Optional[str] = id_column
        self.chunk_size = chunk_size
        self.skip_bad = skip_bad
        self.rows_read = 0  # data rows consumed, good or bad
        self.skipped = 0
        self.total_rows: Optional[int] = None  # known up front for Parquet only

    def fraction_read(self) -> Optional[float]:
        """How far through the file the reader is (0..1), when that can be told."""
        return None

    def estimated_rows(self) -> Optional[float]:
        """The total row count: known (Parquet) or extrapolated from the share of the file read so far."""
        if self.total_rows is not None:
            return float(self.total_rows)
        share = self.fraction_read()
        return self.rows_read / share if share and self.rows_read else None

    def bad_row(self, row: int, problem: str, where: str = "") -> None:
        """Count a bad row when skipping them, else stop with its row number."""
        if self.skip_bad:
            self.skipped += 1
            return
        raise JeirtError(
            f"{self.path}: data row {row} ({self.row_note}{where}): {problem}; "
            "fix the row or pass --skip-bad to skip such rows"
        )

    def __iter__(self) -> Iterator[TextChunk]:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def __enter__(self) -> TextReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _ByteCounter:
    """Share of a regular file read so far, from the raw file's position (read-ahead makes it approximate)."""

    def __init__(self, raw: IO[bytes], path: Path):
        self.raw = raw
        size = os.stat(path).st_size if path.is_file() else 0
        self.size = size if size > 0 else None

    def fraction(self) -> Optional[float]:
        if self.size is None or self.raw.closed:
            return None
        return min(1.0, self.raw.tell() / self.size)


class CsvTextReader(TextReader):
    row_note = "1-based, header not counted"

    def __init__(
        self, path: Path, text_column: str, id_column: Optional[str], chunk_size: int, skip_bad: bool
    ):
        super().__init__(path, text_column, id_column, chunk_size, skip_bad)
        csv.field_size_limit(CSV_FIELD_LIMIT)
        self.raw = open(path, "rb", buffering=0)  # noqa: SIM115 - closed by close()
        self.counter = _ByteCounter(self.raw, path)
        # utf-8-sig drops a BOM; surrogateescape keeps undecodable bytes so the bad row, not the file, is
        # reported.
        buffered = io.BufferedReader(self.raw, buffer_size=1 << 16)
        self.handle = io.TextIOWrapper(buffered, encoding="utf-8-sig", errors="surrogateescape", newline="")
        self.reader = csv.reader(self.handle)
        try:
            header = next(self.reader)
        except StopIteration:
            self.close()
            raise JeirtError(f"{path}: empty file (a CSV bank needs a header row)") from None
        except csv.Error as err:
            self.close()
            raise JeirtError(f"{path}: header row is not valid CSV ({err})") from err
        if text_column not in header:
            self.close()
            raise JeirtError(
                f"{path}: no column {text_column!r} (columns: {', '.join(header)}); see --text-column"
            )
        self.text_index = header.index(text_column)
        self.id_index: Optional[int] = None
        if id_column is not None:
            if id_column not in header:
                self.close()
                raise JeirtError(f"{path}: no id column {id_column!r} (columns: {', '.join(header)})")
            self.id_index = header.index(id_column)
        else:
            for name in DEFAULT_ID_COLUMNS:
                if name in header:
                    self.id_column, self.id_index = name, header.index(name)
                    break

    def fraction_read(self) -> Optional[float]:
        return self.counter.fraction()

    def __iter__(self) -> Iterator[TextChunk]:
        chunk = TextChunk([], [])
        text_index, id_index = self.text_index, self.id_index
        while True:
            try:
                fields = next(self.reader)
            except StopIteration:
                break
            except csv.Error as err:
                self.rows_read += 1
                # A malformed record cannot be resynchronised reliably, so it stops the run even with
                # --skip-bad.
                raise JeirtError(
                    f"{self.path}: data row {self.rows_read} (near line {self.reader.line_num}) "
                    f"is not valid CSV ({err})"
                ) from err
            self.rows_read += 1
            row = self.rows_read
            text = fields[text_index] if text_index < len(fields) else None
            problem = text_problem(text)
            if problem is not None:
                self.bad_row(row, problem, f", ending on line {self.reader.line_num}")
                continue
            if id_index is None:
                chunk.ids.append(row - 1)
            else:
                chunk.ids.append(fields[id_index] if id_index < len(fields) else None)
            chunk.texts.append(cast(str, text))  # text_problem ruled out None
            if len(chunk.texts) >= self.chunk_size:
                yield chunk
                chunk = TextChunk([], [])
        if chunk.texts:
            yield chunk

    def close(self) -> None:
        self.raw.close()


class JsonlTextReader(TextReader):
    """One JSON object per line; blank lines are ignored (they are not data rows)."""

    row_note = "1-based, blank lines not counted"

    def __init__(
        self, path: Path, text_column: str, id_column: Optional[str], chunk_size: int, skip_bad: bool
    ):
        super().__init__(path, text_column, id_column, chunk_size, skip_bad)
        self.raw = open(path, "rb", buffering=0)  # noqa: SIM115 - closed by close()
        self.counter = _ByteCounter(self.raw, path)
        self.handle = io.BufferedReader(self.raw, buffer_size=1 << 16)
        self.id_decided = id_column is not None

    def fraction_read(self) -> Optional[float]:
        return self.counter.fraction()

    def _decide_id_column(self, record: dict[str, Any]) -> None:
        # The first good record decides, like a CSV header would.
        for name in DEFAULT_ID_COLUMNS:
            if name in record:
                self.id_column = name
                break
        self.id_decided = True

    def __iter__(self) -> Iterator[TextChunk]:
        chunk = TextChunk([], [])
        for line_number, line in enumerate(self.handle, 1):
            if not line.strip():
                continue
            self.rows_read += 1
            row = self.rows_read
            where = f", line {line_number}"
            if line_number == 1 and line.startswith(b"\xef\xbb\xbf"):
                line = line[3:]
            try:
                record = json.loads(line.decode("utf-8"))
            except UnicodeDecodeError:
                self.bad_row(row, "line holds bytes that are not valid UTF-8", where)
                continue
            except json.JSONDecodeError as err:
                self.bad_row(row, f"line is not valid JSON ({err.msg})", where)
                continue
            if not isinstance(record, dict):
                self.bad_row(row, f"line is a JSON {type(record).__name__}, not an object", where)
                continue
            if self.text_column not in record:
                fields = ", ".join(list(record)[:10])
                self.bad_row(
                    row, f"no field {self.text_column!r} (fields: {fields}); see --text-column", where
                )
                continue
            text = record[self.text_column]
            problem = text_problem(text)
            if problem is not None:
                self.bad_row(row, problem, where)
                continue
            if not self.id_decided:
                self._decide_id_column(record)
            chunk.ids.append(row - 1 if self.id_column is None else record.get(self.id_column))
            chunk.texts.append(text)
            if len(chunk.texts) >= self.chunk_size:
                yield chunk
                chunk = TextChunk([], [])
        if chunk.texts:
            yield chunk

    def close(self) -> None:
        self.raw.close()


class ParquetTextReader(TextReader):
    def __init__(
        self, path: Path, text_column: str, id_column: Optional[str], chunk_size: int, skip_bad: bool
    ):
        super().__init__(path, text_column, id_column, chunk_size, skip_bad)
        pa = require_pyarrow()
        try:
            self.file = pa.parquet.ParquetFile(str(path))
        except (pa.ArrowException, OSError) as err:
            raise JeirtError(f"{path}: not a readable Parquet file ({err})") from err
        names = self.file.schema_arrow.names
        if text_column not in names:
            raise JeirtError(
                f"{path}: no column {text_column!r} (columns: {', '.join(names)}); see --text-column"
            )
        if id_column is not None and id_column not in names:
            raise JeirtError(f"{path}: no id column {id_column!r} (columns: {', '.join(names)})")
        if id_column is None:
            self.id_column = next((name for name in DEFAULT_ID_COLUMNS if name in names), None)
        self.total_rows = int(self.file.metadata.num_rows)

    def __iter__(self) -> Iterator[TextChunk]:
        pa = require_pyarrow()
        columns = [self.text_column] + ([self.id_column] if self.id_column is not None else [])
        try:
            for batch in self.file.iter_batches(batch_size=self.chunk_size, columns=columns):
                texts = batch.column(0).to_pylist()
                ids = batch.column(1).to_pylist() if self.id_column is not None else None
                chunk = TextChunk([], [])
                for i, text in enumerate(texts):
                    row = self.rows_read + i + 1
                    problem = text_problem(text)
                    if problem is not None:
                        self.bad_row(row, problem)
                        continue
                    chunk.ids.append(row - 1 if ids is None else ids[i])
                    chunk.texts.append(text)
                self.rows_read += len(texts)
                if chunk.texts:
                    yield chunk
        except pa.ArrowException as err:
            raise JeirtError(
                f"{self.path}: cannot read row group after data row {self.rows_read} ({err})"
            ) from err

    def close(self) -> None:
        self.file.close()


def open_text_reader(
    path: Path,
    *,
    text_column: str = "text",
    id_column: Optional[str] = None,
    chunk_size: int = 4096,
    skip_bad: bool = False,
) -> TextReader:
    """A chunked reader for a CSV, JSONL or Parquet question bank, chosen by the file's suffix."""
    kind = format_of(path)
    if not path.exists():
        raise JeirtError(f"{path}: no such file")
    if path.is_dir():
        raise JeirtError(f"{path}: is a folder, not a question bank file")
    reader_class = {"csv": CsvTextReader, "jsonl": JsonlTextReader, "parquet": ParquetTextReader}[kind]
    try:
        return reader_class(path, text_column, id_column, chunk_size, skip_bad)
    except OSError as err:
        raise JeirtError(f"{path}: cannot read it ({err.strerror or err})") from err


# -- precomputed question vectors ----------------------------------------------------------------------------


class NpyRows:
    """Reads a C-ordered .npy array a block of rows at a time with plain file reads.

    Not memory-mapped on purpose: mapped pages that were read count toward the process's resident memory until
    the kernel evicts them, so a mapped 1M-row file makes peak RSS grow with the file; reads keep it flat.
    """

    def __init__(self, path: Path):
        from numpy.lib import format as npy

        self.path = path
        try:
            self.handle: IO[bytes] = open(path, "rb")  # noqa: SIM115 - closed by close()
        except FileNotFoundError:
            raise JeirtError(f"{path}: no such file") from None
        try:
            version = npy.read_magic(self.handle)
            if version == (1, 0):
                shape, fortran_order, dtype = npy.read_array_header_1_0(self.handle)
            elif version == (2, 0):
                shape, fortran_order, dtype = npy.read_array_header_2_0(self.handle)
            else:  # format 3.0 (UTF-8 field names) has no public header reader
                shape, fortran_order, dtype = npy._read_array_header(self.handle, version)  # type: ignore[attr-defined]
        except (ValueError, OSError, SyntaxError) as err:
            self.handle.close()
            raise JeirtError(f"{path}: not a readable .npy array ({err})") from err
        if dtype.hasobject:
            self.handle.close()
            raise JeirtError(f"{path}: holds Python objects; only numeric arrays are read (no pickle)")
        if fortran_order and len(shape) > 1:
            self.handle.close()
            raise JeirtError(
                f"{path}: is stored in Fortran order; save it with np.save(path, np.ascontiguousarray(a))"
            )
        self.shape: tuple[int, ...] = tuple(shape)
        self.dtype = dtype
        self.row_items = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        self.rows_left = int(shape[0]) if shape else 0

    def read(self, rows: int) -> np.ndarray:
        rows = min(rows, self.rows_left)
        count = rows * self.row_items
        block = np.fromfile(self.handle, dtype=self.dtype, count=count)
        if block.size != count:
            raise JeirtError(f"{self.path}: file ends early (truncated .npy)")
        self.rows_left -= rows
        return block.reshape((rows, *self.shape[1:]))

    def close(self) -> None:
        self.handle.close()


@dataclass
class VectorChunk:
    ids: list[Any]
    vectors: np.ndarray  # (n, d) float32, C-contiguous


class VectorReader:
    """Chunks of an (N, d) .npy file of question vectors; only the current chunk is in memory."""

    def __init__(
        self, path: Path, dim: int, chunk_size: int, skip_bad: bool, ids_path: Optional[Path] = None
    ):
        if chunk_size < 1:
            raise JeirtError(f"chunk size must be at least 1, got {chunk_size}")
        if path.suffix.lower() != ".npy":
            raise JeirtError(f"{path}: --vectors needs a .npy file holding an (N, d) array")
        self.rows = NpyRows(path)
        shape, dtype = self.rows.shape, self.rows.dtype
        if len(shape) != 2 or shape[1] != dim:
            self.rows.close()
            raise JeirtError(f"{path}: vectors must have shape (N, {dim}) for this router, got {shape}")
        if not (np.issubdtype(dtype, np.floating) or np.issubdtype(dtype, np.integer)):
            self.rows.close()
            raise JeirtError(f"{path}: vectors must be numeric, got dtype {dtype}")
        self.path = path
        self.chunk_size = chunk_size
        self.skip_bad = skip_bad
        self.total_rows: Optional[int] = int(shape[0])
        self.rows_read = 0
        self.skipped = 0
        try:
            self.ids = IdReader(ids_path, int(shape[0])) if ids_path is not None else None
        except JeirtError:
            self.rows.close()
            raise

    def __iter__(self) -> Iterator[VectorChunk]:
        while self.rows.rows_left:
            start = self.rows_read
            block = np.ascontiguousarray(self.rows.read(self.chunk_size), dtype=np.float32)
            ids = (
                self.ids.take(len(block)) if self.ids is not None else list(range(start, start + len(block)))
            )
            finite = np.asarray(np.isfinite(block).all(axis=1))
            if not finite.all():
                for bad in np.flatnonzero(~finite).tolist():
                    if not self.skip_bad:
                        raise JeirtError(
                            f"{self.path}: vector row {start + bad} (0-based, as in the array) "
                            "contains NaN or inf; "
                            "fix it or pass --skip-bad to skip such rows"
                        )
                    self.skipped += 1
                block = block[finite]
                keep = [bool(flag) for flag in finite]
                ids = [ident for ident, kept in zip(ids, keep) if kept]
            self.rows_read += int(finite.size)
            yield VectorChunk(ids, block)
        if self.ids is not None:
            self.ids.finish()

    def close(self) -> None:
        self.rows.close()
        if self.ids is not None:
            self.ids.close()

    def __enter__(self) -> VectorReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class IdReader:
    """Ids for --vectors rows: a 1-D .npy array or a text file with one id per line, read as the rows go."""

    def __init__(self, path: Path, expected: int):
        self.path = path
        self.expected = expected
        self.taken = 0
        self.array: Optional[NpyRows] = None
        self.handle: Optional[IO[str]] = None
        if path.suffix.lower() == ".npy":
            self.array = NpyRows(path)
            if len(self.array.shape) != 1 or self.array.shape[0] != expected:
                self.array.close()
                raise JeirtError(
                    f"{path}: ids must be a 1-D array of {expected} entries, got {self.array.shape}"
                )
        else:
            try:
                self.handle = open(path, encoding="utf-8", newline="")  # noqa: SIM115 - closed by close()
            except FileNotFoundError:
                raise JeirtError(f"{path}: no such file") from None
            except OSError as err:
                raise JeirtError(f"{path}: cannot read ids ({err.strerror or err})") from err

    def take(self, n: int) -> list[Any]:
        if self.array is not None:
            out: list[Any] = self.array.read(n).tolist()
        else:
            assert self.handle is not None
            out = []
            try:
                for _ in range(n):
                    line = self.handle.readline()
                    if not line:
                        raise JeirtError(
                            f"{self.path}: has {self.taken + len(out)} ids "
                            f"but the vectors have {self.expected} rows"
                        )
                    out.append(line.rstrip("\r\n"))
            except UnicodeDecodeError as err:
                raise JeirtError(
                    f"{self.path}: id line {self.taken + len(out) + 1} is not valid UTF-8"
                ) from err
        self.taken += n
        return out

    def finish(self) -> None:
        if self.handle is not None and self.handle.readline():
            raise JeirtError(f"{self.path}: has more ids than the {self.expected} vector rows")

    def close(self) -> None:
        if self.array is not None:
            self.array.close()
        if self.handle is not None:
            self.handle.close()
