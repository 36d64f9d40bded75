"""The record readers on their own: how far through a file they say they are (the progress line's share), a
byte-order mark only where a file starts, the fields a JSONL row lacks, columns met as a JSONL file goes, every
Parquet column when none is named, and a malformed CSV record ending the file whatever the chunk.
tests/test_csv_records.py checks the CSV parser against Python's csv module; tests/test_io_hostile.py and
tests/test_batch.py drive these readers through `score_file`."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from jeirt_lite import JeirtError
from jeirt_lite._io.records import CsvRecords, JsonlRecords, ParquetRecords


def _jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_the_share_read_grows_through_a_large_file_and_ends_at_one(tmp_path: Path) -> None:
    path = tmp_path / "bank.csv"
    path.write_text("id,text\n" + "".join(f"q{i},{'what is the price of a market ' * 3}{i}\n" for i in range(20_000)))
    reader = CsvRecords(path, chunk_size=100)
    shares = []
    for _ in reader.batches(["id", "text"]):
        share = reader.fraction_read()
        assert isinstance(share, float)
        shares.append(share)
    assert 0.0 < shares[0] < 0.5 and shares == sorted(shares) and shares[-1] == 1.0
    reader.close()
    assert reader.fraction_read() is None


def test_no_share_is_told_for_an_empty_file_or_one_that_is_not_a_regular_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    for path in (empty, Path("/dev/null")):
        reader = JsonlRecords(path, chunk_size=4)
        assert reader.fraction_read() is None
        with pytest.raises(JeirtError, match="empty file"):
            list(reader.batches(None))
        reader.close()


def test_a_byte_order_mark_is_dropped_from_the_first_line_only(tmp_path: Path) -> None:
    path = tmp_path / "bank.jsonl"
    first, second = (json.dumps({"id": i, "text": f"question {i}"}).encode() for i in (1, 2))
    path.write_bytes(b"\xef\xbb\xbf" + first + b"\n\xef\xbb\xbf" + second + b"\n")
    reader = JsonlRecords(path, chunk_size=8)
    (batch,) = reader.batches(["id", "text"])
    assert batch.values["id"] == [1, None] and set(batch.problems) == {1}
    assert batch.problems[1].startswith("line is not valid JSON")
    reader.close()


def test_a_missing_field_is_named_with_the_first_ten_fields_of_the_row(tmp_path: Path) -> None:
    row = {f"f{i:02d}": i for i in range(12)}
    reader = JsonlRecords(_jsonl(tmp_path / "bank.jsonl", [row]), chunk_size=8)
    (batch,) = reader.batches(["text"], required=["text"])
    listed = ", ".join(f"f{i:02d}" for i in range(10))
    assert batch.problems == {0: f"no field 'text' (fields: {listed})"}
    reader.close()


def test_jsonl_columns_grow_as_rows_bring_new_fields_when_none_are_named(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "bank.jsonl", [{"id": 1}, {"id": 2, "text": "b"}, {"text": "c", "extra": 3}])
    reader = JsonlRecords(path, chunk_size=8)
    (batch,) = reader.batches(None)
    assert reader.columns == ["id", "text", "extra"]
    assert batch.values == {"id": [1, 2, None], "text": [None, "b", "c"], "extra": [None, None, 3]}
    reader.close()
    named = JsonlRecords(path, chunk_size=8)
    (batch,) = named.batches(["text"])
    assert named.columns == ["id"] and batch.values == {"text": [None, "b", "c"]}
    named.close()


def test_every_parquet_column_is_read_when_none_is_named(tmp_path: Path) -> None:
    path = tmp_path / "bank.parquet"
    pq.write_table(pa.table({"id": [1, 2, 3], "text": ["a", "b", "c"], "subject": ["x", "y", "z"]}), path)
    reader = ParquetRecords(path, chunk_size=2)
    batches = list(reader.batches(None))
    assert [batch.first_row for batch in batches] == [1, 3] and reader.total_rows == 3
    assert batches[0].values == {"id": [1, 2], "text": ["a", "b"], "subject": ["x", "y"]}
    reader.close()


def test_a_malformed_record_ends_the_file_even_when_it_fills_its_chunk(tmp_path: Path) -> None:
    path = tmp_path / "bank.csv"
    path.write_bytes(b'id,text\nq1,fine\nq2,"never closed\nq3,after\nq4,after\n')
    reader = CsvRecords(path, chunk_size=2)
    batches = list(reader.batches(["id", "text"]))
    assert len(batches) == 1 and batches[0].fatal == {1}
    assert "is never closed" in batches[0].problems[1]
    reader.close()
