"""The record readers on their own: how far through a file they say they are (the progress line's share), a
byte-order mark only where a file starts, the fields a JSONL row lacks, columns met as a JSONL file goes, every
Parquet column when none is named, a malformed CSV record ending the file whatever the chunk, JSONL batches of the
chunk size, the share of a file that grows while it is read.
tests/test_csv_records.py checks the CSV parser against Python's csv module; tests/test_io_hostile.py and
tests/test_batch.py drive these readers through `score_file`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from bank_files import write_jsonl, write_large_csv_bank
from jeirt_lite import JeirtError
from jeirt_lite._io.records import CsvRecords, JsonlRecords, ParquetRecords


def test_the_share_read_grows_through_a_large_file_and_ends_at_one(tmp_path: Path) -> None:
    path = write_large_csv_bank(tmp_path / "bank.csv")
    reader = CsvRecords(path, chunk_size=100)
    shares = []
    for _ in reader.batches(["id", "text"]):
        share = reader.fraction_read()
        assert isinstance(share, float)
        shares.append(share)
    assert 0.0 < shares[0] < 0.5 and shares == sorted(shares) and shares[-1] == 1.0
    reader.close()
    assert reader.fraction_read() is None


def test_a_share_is_told_from_one_byte_on_and_none_for_an_empty_or_irregular_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    newline = tmp_path / "newline.jsonl"
    newline.write_bytes(b"\n")
    reader = JsonlRecords(newline, chunk_size=4)
    assert reader.fraction_read() == 1.0  # a file of one byte, read ahead when it opened
    reader.close()
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
    reader = JsonlRecords(write_jsonl(tmp_path / "bank.jsonl", [row]), chunk_size=8)
    (batch,) = reader.batches(["text"], required=["text"])
    listed = ", ".join(f"f{i:02d}" for i in range(10))
    assert batch.problems == {0: f"no field 'text' (fields: {listed})"}
    reader.close()


def test_jsonl_columns_grow_as_rows_bring_new_fields_when_none_are_named(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "bank.jsonl", [{"id": 1}, {"id": 2, "text": "b"}, {"text": "c", "extra": 3}])
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
    pq.write_table(pa.table({"id": list(range(7)), "text": list("abcdefg"), "subject": list("xyzxyzx")}), path)
    reader = ParquetRecords(path, chunk_size=3)
    batches = list(reader.batches(None))
    assert [batch.first_row for batch in batches] == [1, 4, 7] and reader.total_rows == 7
    assert batches[0].values == {"id": [0, 1, 2], "text": ["a", "b", "c"], "subject": ["x", "y", "z"]}
    reader.close()


@pytest.mark.parametrize("groups", [40, 1])
def test_a_parquet_bank_is_read_in_the_memory_of_a_few_chunks_whatever_its_row_groups(
    tmp_path: Path, groups: int
) -> None:
    # Reading took memory the size of the file (620 MB of RSS for 1,000,000 rows, where CSV and JSONL stay flat):
    # pyarrow's pre-buffering kept every row group read until the file closed, and without a buffer size each row
    # group's column was read whole (pyarrow and pandas write a bank of up to 1Mi rows as one row group).
    path = tmp_path / "bank.parquet"
    rng = np.random.default_rng(0)
    letters = np.frombuffer(b"abcdefghij klmnopqrstuvwxyz", dtype="S1")
    texts = [rng.choice(letters, 400).tobytes().decode() for _ in range(20_000)]  # 8 MB, incompressible
    pq.write_table(pa.table({"id": range(20_000), "text": texts}), path, row_group_size=20_000 // groups)
    del texts
    reader = ParquetRecords(path, chunk_size=256)
    peak = 0
    for _ in reader.batches(["text"]):
        peak = max(peak, pa.total_allocated_bytes())
    reader.close()
    assert reader.rows_read == 20_000 and pq.ParquetFile(path).metadata.num_row_groups == groups
    assert peak < path.stat().st_size / 2  # a few pages and chunks (0.7 and 2.8 MB), not the file (8 MB, 10.5 MB read)


def test_a_damaged_parquet_page_is_named_with_the_rows_read_before_it(tmp_path: Path) -> None:
    path = tmp_path / "bank.parquet"
    texts = [f"question number {i} " * 5 for i in range(600)]
    pq.write_table(pa.table({"id": list(range(600)), "text": texts}), path, row_group_size=200)
    page = pq.ParquetFile(path).metadata.row_group(1).column(1).data_page_offset
    raw = bytearray(path.read_bytes())
    raw[page : page + 64] = b"\xff" * 64
    path.write_bytes(bytes(raw))
    reader = ParquetRecords(path, chunk_size=100)
    with pytest.raises(JeirtError, match=r"bank\.parquet: cannot read the rows after data row 200 \(damaged file\?"):
        list(reader.batches(None))
    reader.close()


def test_a_parquet_string_that_is_not_utf8_stops_the_read_naming_the_file(tmp_path: Path) -> None:
    offsets = pa.py_buffer(np.array([0, 2, 5], dtype=np.int32).tobytes())
    texts = pa.Array.from_buffers(pa.string(), 2, [None, offsets, pa.py_buffer(b"ok\xffno")])  # unvalidated
    path = tmp_path / "bank.parquet"
    pq.write_table(pa.table({"id": [1, 2], "text": texts}), path)
    reader = ParquetRecords(path, chunk_size=8)
    with pytest.raises(JeirtError, match=r"bank\.parquet: cannot read the rows after data row 0 .*utf-8"):
        list(reader.batches(None))
    reader.close()


@pytest.mark.parametrize("reader_class", [CsvRecords, JsonlRecords, ParquetRecords])
def test_a_chunk_of_no_rows_is_refused(tmp_path: Path, reader_class: type) -> None:
    path = tmp_path / "bank"
    with pytest.raises(JeirtError, match="chunk size must be at least 1, got 0"):
        reader_class(path, 0)


@pytest.mark.parametrize(("mark", "name"), [(b"\xff\xfe\x00\x00", "UTF-32"), (b"\xff\xfe", "UTF-16")])
def test_a_jsonl_file_in_utf16_or_utf32_is_named_as_such(tmp_path: Path, mark: bytes, name: str) -> None:
    path = tmp_path / "bank.jsonl"
    encoding = "utf-32-le" if name == "UTF-32" else "utf-16-le"
    path.write_bytes(mark + '{"id": 1, "text": "a"}\n'.encode(encoding))
    with pytest.raises(JeirtError, match=rf"bank\.jsonl: is {name} \(byte-order mark"):
        JsonlRecords(path, chunk_size=4)


def test_a_malformed_record_ends_the_file_even_when_it_fills_its_chunk(tmp_path: Path) -> None:
    path = tmp_path / "bank.csv"
    path.write_bytes(b'id,text\nq1,fine\nq2,"never closed\nq3,after\nq4,after\n')
    reader = CsvRecords(path, chunk_size=2)
    batches = list(reader.batches(["id", "text"]))
    assert len(batches) == 1 and batches[0].fatal == {1}
    assert "is never closed" in batches[0].problems[1]
    reader.close()


def test_a_jsonl_line_nested_deeper_than_python_s_stack_is_a_bad_row_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text('{"id": "a", "text": "What is 2 + 2?"}\n{"id": "b", "text": "x", "deep": '
                    + "[" * 100_000 + "]" * 100_000 + "}\n")
    reader = JsonlRecords(path, 10)
    (batch,) = list(reader.batches(["id", "text"]))
    reader.close()
    assert batch.problems == {1: "line is JSON nested too deeply to read"}
    assert batch.values["id"] == ["a", None]


def test_a_jsonl_line_holding_an_integer_of_over_4300_digits_is_a_bad_row_not_a_crash(tmp_path: Path) -> None:
    # Python's int() reads at most 4,300 digits: json raised a plain ValueError, which ended score, add-llm, train
    # and --costs with a traceback.
    path = tmp_path / "long.jsonl"
    path.write_text('{"id": "a", "text": "What is 2 + 2?"}\n{"id": "b", "text": "x", "n": 1' + "0" * 5000 + "}\n")
    reader = JsonlRecords(path, 10)
    (batch,) = list(reader.batches(["id", "text"]))
    reader.close()
    assert batch.problems == {1: "line holds an integer too long to read (over 4,300 digits)"}
    assert batch.values["id"] == ["a", None]


def test_artifact_json_nested_too_deeply_is_refused_as_unreadable(tmp_path: Path) -> None:
    from jeirt_lite._artifact_files import check_binding
    from jeirt_lite._static_path import tokenizer_settings

    deep = "[" * 100_000 + "]" * 100_000
    (tmp_path / "tokenizer.json").write_text(deep)
    with pytest.raises(JeirtError, match="tokenizer.json: not readable JSON"):
        tokenizer_settings(tmp_path / "tokenizer.json", 128)
    with pytest.raises(JeirtError, match="the LLM names in its metadata are unreadable"):
        check_binding(tmp_path / "router.json", {"llms": ["a"]}, {"llm_names": deep, "manifest_sha256": ""},
                      tmp_path / "llms.safetensors")


def test_jsonl_batches_hold_the_chunk_size_past_the_small_integers(tmp_path: Path) -> None:
    # Memory stays flat only if each batch ends at the chunk size: a count compared by identity (CPython shares
    # only the integers up to 256) would never end one, and read the whole file as a single batch.
    path = write_jsonl(tmp_path / "bank.jsonl", [{"text": f"question {i}"} for i in range(601)])
    reader = JsonlRecords(path, chunk_size=300)
    batches = list(reader.batches(["text"]))
    assert [(batch.first_row, len(batch)) for batch in batches] == [(1, 300), (301, 300), (601, 1)]
    reader.close()


def test_the_share_read_of_a_file_that_grows_while_it_is_read_stops_at_one(tmp_path: Path) -> None:
    # Its size is taken when it opens; rows appended after that are read too, past that size.
    path = tmp_path / "bank.csv"
    path.write_text("id,text\n1,one?\n")
    reader = CsvRecords(path, chunk_size=1000)
    with path.open("a") as grow:
        grow.writelines(f"{i},question {i}?\n" for i in range(2, 200))
    (batch,) = reader.batches(["id", "text"])
    assert len(batch) == 199 and reader.fraction_read() == 1.0
    reader.close()
