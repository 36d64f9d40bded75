"""One reader per table format, yielding numbered rows a chunk at a time (memory stays flat).

A record reader knows its format's syntax only: how a file decodes, where a row starts and ends, which
columns it has. What a row's values mean (a text, an id, a label) is decided by its users in `texts`. Rows are
numbered from 1 over the data rows (a header and blank lines are not rows); a row the format cannot read stays in its
batch, in order, with its problem and no values, so that its user reports the first bad row of the file,
whatever made it bad.
"""

from __future__ import annotations

import io
import itertools
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from .. import _core
from .._errors import JeirtError
from .._json_keys import RepeatedKey, unique_keys
from .._limits import MAX_LINE_BYTES, bounded_lines, bounded_readline
from .._type_names import json_type
from .optional import require_pyarrow
from .pipes import open_stoppable

# Bytes read and parsed at a time: large enough that a call costs nothing beside its parsing, small enough that
# memory stays flat.
PARSE_BLOCK = 1 << 18
# Rows (blank lines are none) a JSONL reader reads ahead for the fields of its first readable object (the columns a
# header would give).
_AHEAD_ROWS = 64
UTF8_BOM = b"\xef\xbb\xbf"
# How the CSV parser's error for a record longer than its bound begins (TOO_LONG in rust/src/io/csv_records.rs).
_CSV_TOO_LONG = "record longer than"


@dataclass
class RowBatch:
    """Consecutive rows of one chunk: the first one's data row number, the wanted columns, where each row is.

    `problems` maps the index of a row the format could not read to why (its values are None); a row in
    `fatal` ends the file (a malformed CSV record cannot be resynchronised), so it stops even a run that skips
    bad rows.
    """

    first_row: int
    values: dict[str, list[Any]]
    lines: list[int] = field(default_factory=list)  # per row, the line it is on (formats with lines)
    size: int = 0
    problems: dict[int, str] = field(default_factory=dict)
    fatal: set[int] = field(default_factory=set)

    def __len__(self) -> int:
        return self.size

    def row(self, i: int) -> int:
        return self.first_row + i


class RecordReader:
    """Base class. `columns` is known on opening (CSV header, Parquet schema) or after row 1 (JSONL)."""

    # How data rows are counted, said in every bad-row message.
    row_note = "1-based"
    # Where a row is, from its entry in `RowBatch.lines`; said after the row note.
    line_note = ""

    def where(self, batch: RowBatch, i: int) -> str:
        """", ending on line 7": where row i of `batch` is in the file, for messages."""
        return self.line_note.format(batch.lines[i]) if self.line_note and batch.lines else ""

    def __init__(self, path: Path, chunk_size: int):
        if chunk_size < 1:
            raise JeirtError(f"chunk size must be at least 1, got {chunk_size}")
        self.path = path
        self.chunk_size = chunk_size
        self.columns: Optional[list[str]] = None
        self.rows_read = 0  # data rows consumed, good or bad
        self.total_rows: Optional[int] = None  # known up front for Parquet only

    def fraction_read(self) -> Optional[float]:
        """How far through the file the reader is (0..1), when that can be told."""
        return None

    def batches(self, wanted: Optional[Sequence[str]], required: Sequence[str] = ()) -> Iterator[RowBatch]:
        """Chunks of rows with the `wanted` columns (None: all); `required` must exist."""
        raise NotImplementedError

    def columns_ahead(self, holding: Sequence[str] = ()) -> Optional[list[str]]:
        """The columns, before any row is read where the format can tell them (its header or schema); `holding`:
        names of which a schemaless format's first rows are looked through for one (JSONL)."""
        return self.columns

    def close(self) -> None:
        pass


class _ByteCounter:
    """Share of a regular file read so far, from the raw file's position (read-ahead makes it approximate)."""

    def __init__(self, raw: io.RawIOBase, path: Path):
        self.raw = raw
        size = os.stat(path).st_size if path.is_file() else 0
        self.size = size if size > 0 else None

    def fraction(self) -> Optional[float]:
        if self.size is None or self.raw.closed:
            return None
        return min(1.0, self.raw.tell() / self.size)


class CsvRecords(RecordReader):
    """Comma-separated values with a header row, read strictly.

    UTF-8 (a byte-order mark is dropped; UTF-16/32 is refused when the file opens). A blank line is not a
    row. A row whose field count differs from the header's, or with bytes that are not UTF-8, is a bad row. A
    malformed record (a quote opened and never closed, text after a closing quote) ends the file: a lenient
    reader would glue every following line into one value, so it is an error naming the row where the record
    starts. So does a record longer than MAX_LINE_BYTES, found once the bound is passed (a quote never closed on
    an endless pipe would otherwise be held whole).

    The parsing is Rust's (`_core.CsvParser`, the GIL released, so `score` can encode on other threads
    meanwhile); it gives exactly what Python's `csv` module in strict mode gives (tests/test_csv_records.py).
    """

    row_note = "1-based, header not counted"
    line_note = ", ending on line {}"
    delimiter = ","
    kind = "CSV"  # as a malformed record's error names the format

    def __init__(self, path: Path, chunk_size: int):
        super().__init__(path, chunk_size)
        self.raw = open_stoppable(path)  # closed by close(); a pipe is read so that Ctrl-C stops a wait
        self.counter = _ByteCounter(self.raw, path)
        self.handle = io.BufferedReader(self.raw, buffer_size=1 << 16)
        self.parser = _core.CsvParser(self.delimiter, MAX_LINE_BYTES)
        try:
            check_encoding(path, self.handle.peek(4)[:4])
            head = self.handle.read(len(UTF8_BOM))
            self.parser.feed(head[len(UTF8_BOM) :] if head == UTF8_BOM else head)
            self.columns = self._header()
        except JeirtError:
            self.close()
            raise

    def _header(self) -> list[str]:
        while not self.parser.has_item and not self.parser.done:
            self._feed()
        fields, error = self.parser.header()
        if error is not None and error.startswith(_CSV_TOO_LONG):
            raise JeirtError(f"{self.path}: header row {_too_long()}")
        if error is not None:
            raise JeirtError(f"{self.path}: header row is not valid CSV ({error})")
        if fields is None:
            raise JeirtError(f"{self.path}: empty file (a table needs a header row)")
        try:
            header = [field.decode("utf-8") for field in fields]
        except UnicodeDecodeError:
            raise JeirtError(f"{self.path}: header row holds bytes that are not valid UTF-8") from None
        check_unique_columns(self.path, header)
        return header

    def _feed(self) -> None:
        # read1: what one read gives, so rows from a pipe are parsed as they arrive rather than a block later.
        block = self.handle.read1(PARSE_BLOCK)
        if block:
            self.parser.feed(block)
        else:
            self.parser.finish()

    def fraction_read(self) -> Optional[float]:
        return self.counter.fraction()

    def batches(self, wanted: Optional[Sequence[str]], required: Sequence[str] = ()) -> Iterator[RowBatch]:
        assert self.columns is not None
        wanted = self.columns if wanted is None else wanted
        indices = [self.columns.index(name) for name in wanted]
        while True:
            while self.parser.records_ready < self.chunk_size and not self.parser.done:
                self._feed()
            columns, lines, problems, fatal = self.parser.take(self.chunk_size, len(self.columns), indices)
            if not lines:
                return
            batch = RowBatch(self.rows_read + 1, dict(zip(wanted, columns)), lines, len(lines), dict(problems))
            if fatal is not None:
                row, error, start = fatal
                batch.problems[row] = _malformed(error, start, self.kind)
                batch.fatal.add(row)
            self.rows_read += len(lines)
            yield batch
            if batch.fatal or len(lines) < self.chunk_size:
                return

    def close(self) -> None:
        self.raw.close()


def check_unique_columns(path: Path, columns: list[str]) -> None:
    """Refuse a header that names a column twice: which of the two is meant cannot be told."""
    seen: set[str] = set()
    for name in columns:
        if name in seen:
            raise JeirtError(f"{path}: the header names the column {name!r} twice")
        seen.add(name)


def _too_long(start: Optional[int] = None) -> str:
    """Why a row longer than MAX_LINE_BYTES ends its file (the line it starts on, for a row that may span lines)."""
    starting = f" (the row starting on line {start})" if start is not None else ""
    return f"is longer than {MAX_LINE_BYTES:,} bytes{starting}, the longest row a table may hold; nothing after it is read"


def _malformed(error: str, start: int, kind: str) -> str:
    if error.startswith(_CSV_TOO_LONG):
        return _too_long(start)
    if "unexpected end of data" in error:
        return (
            f"is not valid {kind}: a quoted value in the row starting on line {start} is never closed "
            "(every later line would have been read into it)"
        )
    return f"is not valid {kind} ({error.replace(chr(9), '<tab>')}; the row starts on line {start})"


_BYTE_ORDER_MARKS = (
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"),
    (b"\xfe\xff", "UTF-16"),
)


def wide_encoding(head: bytes) -> Optional[str]:
    """The encoding and byte-order mark that `head` starts with when it is UTF-16 or UTF-32 ("UTF-16 (byte-order
    mark FF FE)"), else None."""
    for mark, name in _BYTE_ORDER_MARKS:
        if head.startswith(mark):
            return f"{name} (byte-order mark {mark.hex(' ').upper()} at byte 0)"
    return None


def check_encoding(path: Path, head: bytes) -> None:
    """Refuse a text file that is not UTF-8 on its first bytes (a UTF-16/32 byte-order mark, NUL bytes)."""
    wide = wide_encoding(head)
    if wide is not None:
        raise JeirtError(f"{path}: is {wide}; tables are read as UTF-8: save it as UTF-8")
    if b"\x00" in head:
        offset = head.index(b"\x00")
        raise JeirtError(
            f"{path}: has a NUL byte at byte {offset}: not a UTF-8 text file (UTF-16 without a byte-order "
            "mark, or binary?)"
        )


class TsvRecords(CsvRecords):
    """Tab-separated values with a header row (quoting as in CSV, as pandas and spreadsheets write them)."""

    delimiter = "\t"
    kind = "TSV (quoted as CSV is: a value that starts with a quote must end with one)"


class JsonlRecords(RecordReader):
    """One JSON object per line; blank lines are ignored (they are not data rows).

    The fields of the first readable object stand for the file's columns, as a CSV header would. A line longer
    than MAX_LINE_BYTES ends the file, read no further than the bound (`score --skip-bad` cannot skip it: on an
    endless line, finding the next line would read on forever).
    """

    row_note = "1-based, blank lines not counted"
    line_note = ", line {}"

    def __init__(self, path: Path, chunk_size: int):
        super().__init__(path, chunk_size)
        self.raw = open_stoppable(path)  # closed by close(); a pipe is read so that Ctrl-C stops a wait
        self.counter = _ByteCounter(self.raw, path)
        self.handle = io.BufferedReader(self.raw, buffer_size=1 << 16)
        # (line number, line): rows `columns_ahead` read, not yet batched; None for a line too long to read
        self.ahead: list[tuple[int, Optional[bytes]]] = []
        self.lines_ahead = 0  # lines `columns_ahead` read, blank ones included
        try:
            check_encoding(path, self.handle.peek(4)[:4])
        except JeirtError:
            self.close()
            raise
        if self.handle.peek(len(UTF8_BOM))[: len(UTF8_BOM)] == UTF8_BOM:  # not counted in line 1's bound, as in CSV
            self.handle.read(len(UTF8_BOM))

    def fraction_read(self) -> Optional[float]:
        return self.counter.fraction()

    def columns_ahead(self, holding: Sequence[str] = ()) -> Optional[list[str]]:
        """The fields of the first readable object holding one of `holding` (any object when empty), before any
        row is read: an object without one is a bad row (`batches` requires the field), not the file's header. The
        rows looked through are kept for `batches` (a pipe is read once). When none of the first rows is such an
        object: the first object's fields, else None (the rows then say what is wrong with them)."""
        if self.columns is not None:
            return self.columns
        first: Optional[list[str]] = None
        for number, line in self._rows_ahead():
            record = self._record(number, line, ())
            if isinstance(record, dict):
                if not holding or any(name in record for name in holding):
                    return list(record)
                first = first or list(record)
        return first

    def _rows_ahead(self) -> Iterator[tuple[int, bytes]]:
        """The first rows, numbered: those a call for other fields read ahead, then more, kept in `ahead` too."""
        yield from ((number, kept) for number, kept in self.ahead if kept is not None)
        ended = bool(self.ahead) and self.ahead[-1][1] is None  # at a line too long: no row is read past it
        while not ended and len(self.ahead) < _AHEAD_ROWS:
            line = bounded_readline(self.handle)
            if line == b"":
                return
            self.lines_ahead += 1
            if line is None:  # ends the file: `batches` reports it after the rows before it
                self.ahead.append((self.lines_ahead, None))
                return
            if not line.strip():  # not a row: only counted, so that the rows after it keep their line numbers
                continue
            self.ahead.append((self.lines_ahead, line))
            yield self.lines_ahead, line

    @staticmethod
    def _record(line_number: int, line: bytes, required: Sequence[str]) -> Any:
        """The line's object, or why it is not one (a str)."""
        if line_number == 1 and line.startswith(UTF8_BOM):  # a pipe whose first read held less than the BOM
            line = line[len(UTF8_BOM) :]
        try:
            record = json.loads(line.decode("utf-8"), object_pairs_hook=unique_keys)
        except UnicodeDecodeError:
            return "line holds bytes that are not valid UTF-8"
        except json.JSONDecodeError as err:
            return f"line is not valid JSON ({err.msg})"
        except RepeatedKey as twice:  # a CSV header may not name a column twice either
            return f"line names the field {twice.key!r} twice"
        except RecursionError:  # deeper than Python's stack allows: a bad row, not a crash of the reader
            return "line is JSON nested too deeply to read"
        except ValueError:  # after JSONDecodeError, its subclass: an integer of more digits than int() reads
            return "line holds an integer too long to read (over 4,300 digits)"
        if not isinstance(record, dict):
            return f"line is {json_type(record)}, not a JSON object"
        for name in required:
            if name not in record:
                fields = ", ".join(list(record)[:10])
                return f"no field {name!r} (fields: {fields})"
        return record

    def batches(self, wanted: Optional[Sequence[str]], required: Sequence[str] = ()) -> Iterator[RowBatch]:
        """With `wanted` None: every field met so far (a later batch may have more columns)."""
        records: list[Any] = []  # a dict per row, or the str saying why the line is not one
        batch = RowBatch(self.rows_read + 1, {})
        # The rows read ahead come first, then the lines after them, each read with a bound (iterating the file would
        # hold an endless line whole).
        lines, self.ahead = itertools.chain(self.ahead, bounded_lines(self.handle, self.lines_ahead + 1)), []
        for line_number, line in lines:
            if line is None:  # too long: its batch ends the file
                self.rows_read += 1
                batch.fatal.add(len(records))
                records.append(_too_long())
                batch.lines.append(line_number)
                break
            if not line.strip():
                continue
            self.rows_read += 1
            record = self._record(line_number, line, required)
            if isinstance(record, dict):
                if self.columns is None:
                    self.columns = list(record)
                elif wanted is None:
                    self.columns += [name for name in record if name not in self.columns]
            records.append(record)
            batch.lines.append(line_number)
            if len(records) >= self.chunk_size:
                yield self._columnar(batch, records, wanted)
                records, batch = [], RowBatch(self.rows_read + 1, {})
        if records:
            yield self._columnar(batch, records, wanted)
        elif self.rows_read == 0:  # the rule of every format: a table with neither a header nor a row is refused
            raise JeirtError(f"{self.path}: empty file (a JSONL table needs at least one row)")

    def _columnar(self, batch: RowBatch, records: list[Any], wanted: Optional[Sequence[str]]) -> RowBatch:
        batch.size = len(records)
        for i, record in enumerate(records):
            if isinstance(record, str):
                batch.problems[i] = record
        names = wanted if wanted is not None else self.columns or []
        for name in names:
            batch.values[name] = [r.get(name) if isinstance(r, dict) else None for r in records]
        return batch

    def close(self) -> None:
        self.raw.close()


class ParquetRecords(RecordReader):
    """Apache Parquet through pyarrow (an optional extra); the row count comes from the file's footer."""

    def __init__(self, path: Path, chunk_size: int):
        super().__init__(path, chunk_size)
        pa = require_pyarrow()
        try:
            # Memory grew with the bank two ways (docs/research/throughput.md, "Parquet input"): pre-buffering kept
            # every row group read until the file closed, and without a buffer size a row group's column is read
            # whole (a bank written by pyarrow or pandas is one row group up to 1Mi rows).
            self.file = pa.parquet.ParquetFile(str(path), pre_buffer=False, buffer_size=PARSE_BLOCK)
        except (pa.ArrowException, OSError, ValueError) as err:
            raise JeirtError(f"{path}: not a readable Parquet file ({err})") from err
        self.schema = self.file.schema_arrow
        self.columns = list(self.schema.names)
        check_unique_columns(path, self.columns)
        self.total_rows = int(self.file.metadata.num_rows)

    def column_type(self, name: str) -> Any:
        """The Arrow type of a column."""
        return self.schema.field(name).type

    def batches(self, wanted: Optional[Sequence[str]], required: Sequence[str] = ()) -> Iterator[RowBatch]:
        pa = require_pyarrow()
        wanted = list(self.columns or []) if wanted is None else wanted
        arrow_batches = self.file.iter_batches(batch_size=self.chunk_size, columns=list(wanted))
        while True:
            # A damaged page fails in pyarrow (ArrowException, OSError), a string that is not UTF-8 only when
            # it is converted (UnicodeDecodeError): either way the rows cannot be read.
            try:
                arrow_batch = next(arrow_batches, None)
                if arrow_batch is None:
                    return
                values = {name: arrow_batch.column(i).to_pylist() for i, name in enumerate(wanted)}
            except (pa.ArrowException, OSError, ValueError) as err:  # UnicodeDecodeError is a ValueError
                raise JeirtError(
                    f"{self.path}: cannot read the rows after data row {self.rows_read} (damaged file? {err})"
                ) from err
            first = self.rows_read + 1
            self.rows_read += arrow_batch.num_rows
            yield RowBatch(first_row=first, values=values, size=arrow_batch.num_rows)

    def close(self) -> None:
        self.file.close()

