"""The CSV reader of jeirt-lite before its parser moved to Rust: Python's `csv` module in strict mode over the
file decoded as UTF-8 with `surrogateescape`. tests/test_csv_records.py checks the Rust parser against it."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Optional

from jeirt_lite._errors import JeirtError
from jeirt_lite._io.records import (
    CsvRecords,
    RecordReader,
    RowBatch,
    TsvRecords,
    check_encoding,
    check_unique_columns,
)
from jeirt_lite._io.records import _malformed as malformed

CSV_FIELD_LIMIT = 2**31 - 1


class OracleCsvRecords(RecordReader):
    """Comma-separated values with a header row, read strictly.

    UTF-8 (a byte-order mark is dropped; UTF-16/32 is refused when the file opens). A blank line is not a
    row. A row whose field count differs from the header's, or with bytes that are not UTF-8, is a bad row. A
    malformed record (a quote opened and never closed, text after a closing quote) ends the file: the csv
    module's lenient mode would glue every following line into one value, so it is an error naming the row
    where the record starts.
    """

    row_note = "1-based, header not counted"
    line_note = ", ending on line {}"
    delimiter = ","
    kind = CsvRecords.kind

    def __init__(self, path: Path, chunk_size: int):
        super().__init__(path, chunk_size)
        csv.field_size_limit(CSV_FIELD_LIMIT)
        self.raw = open(path, "rb", buffering=0)  # noqa: SIM115 - closed by close()
        buffered = io.BufferedReader(self.raw, buffer_size=1 << 16)
        try:
            check_encoding(path, buffered.peek(4)[:4])
        except JeirtError:
            self.close()
            raise
        # utf-8-sig drops a BOM; surrogateescape keeps undecodable bytes so the bad row, not the file, is
        # reported.
        self.handle = io.TextIOWrapper(buffered, encoding="utf-8-sig", errors="surrogateescape", newline="")
        self.reader = csv.reader(self.handle, delimiter=self.delimiter, strict=True)
        try:
            header = next(self.reader)
        except StopIteration:
            self.close()
            raise JeirtError(f"{path}: empty file (a table needs a header row)") from None
        except csv.Error as err:
            self.close()
            raise JeirtError(f"{path}: header row is not valid CSV ({err})") from err
        if not _valid_utf8(header):
            self.close()
            raise JeirtError(f"{path}: header row holds bytes that are not valid UTF-8")
        try:
            check_unique_columns(path, header)
        except JeirtError:
            self.close()
            raise
        self.columns = header

    def batches(self, wanted: Optional[Sequence[str]], required: Sequence[str] = ()) -> Iterator[RowBatch]:
        assert self.columns is not None
        wanted = self.columns if wanted is None else wanted
        indices = [self.columns.index(name) for name in wanted]
        while True:
            batch, records = self._read_batch()
            if not records:
                return
            for name, index in zip(wanted, indices):
                batch.values[name] = [row[index] if row is not None else None for row in records]
            yield batch
            if batch.fatal or len(records) < self.chunk_size:
                return

    def _read_batch(self) -> tuple[RowBatch, list[Optional[list[str]]]]:
        """Up to chunk_size rows; a bad row is None in the list, with its problem in the batch."""
        assert self.columns is not None
        reader, width = self.reader, len(self.columns)
        batch = RowBatch(self.rows_read + 1, {})
        records: list[Optional[list[str]]] = []
        lines, problems = batch.lines, batch.problems
        start = reader.line_num + 1
        try:
            for fields in reader:
                if not fields:  # a blank line
                    start = reader.line_num + 1
                    continue
                record: Optional[list[str]] = fields
                if len(fields) != width:
                    problems[len(records)] = f"has {len(fields)} fields, the header has {width}"
                    record = None
                elif not _valid_utf8(fields):
                    problems[len(records)] = "holds bytes that are not valid UTF-8"
                    record = None
                records.append(record)
                lines.append(reader.line_num)
                start = reader.line_num + 1
                if len(records) >= self.chunk_size:
                    break
        except csv.Error as err:
            problems[len(records)] = malformed(str(err), start, self.kind)  # the reader's wording around the csv module's error
            batch.fatal.add(len(records))
            records.append(None)
            lines.append(reader.line_num)
        batch.size = len(records)
        self.rows_read += len(records)
        return batch, records

    def close(self) -> None:
        self.raw.close()


def _valid_utf8(fields: list[str]) -> bool:
    """False when a field holds lone surrogates (bytes that were not UTF-8, kept by surrogateescape)."""
    for value in fields:
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return False
    return True


class OracleTsvRecords(OracleCsvRecords):
    delimiter = "\t"
    kind = TsvRecords.kind
