"""The Rust CSV/TSV parser behind `CsvRecords` reads exactly what the earlier reader (Python's `csv` module in
strict mode, tests/csv_oracle.py) read: the same columns, values, row and line numbers, bad rows and errors, on
generated files of the bytes that matter, cut into blocks of every small size, and on real banks."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from csv_oracle import OracleCsvRecords, OracleTsvRecords
from hypothesis import given, settings
from hypothesis import strategies as st
from jeirt_lite._io import records
from jeirt_lite._io.records import CsvRecords, TsvRecords

REPO = Path(__file__).resolve().parents[1]

# The bytes a CSV parser can get wrong: delimiters, quotes, every line end, spaces, a byte-order mark, valid and
# broken UTF-8, a NUL.
PIECES = [b"a", b"id", b"text", b",", b"\t", b'"', b'""', b"\r", b"\n", b"\r\n", b" ", "é".encode(), "日".encode(),
          b"\xff", b"\xe2\x82", b"\xef\xbb\xbf", b"\x00"]


def _read(reader_class: type, path: Path, chunk_size: int, wanted: Any = None) -> list[Any]:
    """Everything a reader gives: the columns or the opening error, then each batch or the error that stops it."""
    try:
        reader = reader_class(path, chunk_size)
    except ValueError as err:
        return ["open", str(err)]
    out: list[Any] = [reader.columns]
    try:
        names = wanted if wanted is None else [name for name in wanted if name in (reader.columns or [])]
        for batch in reader.batches(names):
            out.append((batch.first_row, batch.values, batch.lines, batch.size, batch.problems, batch.fatal,
                        [reader.where(batch, i) for i in range(len(batch))]))
    except ValueError as err:
        out.append(("error", str(err)))
    finally:
        reader.close()
    out.append(reader.rows_read)
    return out


def _same(content: bytes, chunk_size: int, tsv: bool = False) -> None:
    ours, oracle = (TsvRecords, OracleTsvRecords) if tsv else (CsvRecords, OracleCsvRecords)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / ("bank.tsv" if tsv else "bank.csv")
        path.write_bytes(content)
        assert _read(ours, path, chunk_size) == _read(oracle, path, chunk_size)


@settings(max_examples=400, deadline=None)
@given(
    pieces=st.lists(st.sampled_from(PIECES), max_size=40),
    chunk_size=st.integers(1, 4),
    block=st.sampled_from([1, 2, 3, 7, 1 << 18]),
    tsv=st.booleans(),
)
def test_generated_files_read_as_the_csv_module_reads_them(
    pieces: list[bytes], chunk_size: int, block: int, tsv: bool
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(records, "PARSE_BLOCK", block)
        _same(b"".join(pieces), chunk_size, tsv)


@settings(max_examples=200, deadline=None)
@given(
    header=st.sampled_from([b"id,text\n", b"id,text\r\n", b"text\r", b"\xef\xbb\xbfid,text\n", b"a,b,text\n"]),
    rows=st.lists(st.lists(st.sampled_from(PIECES[:14]), max_size=8), max_size=12),
    chunk_size=st.integers(1, 5),
)
def test_files_with_a_good_header_read_as_the_csv_module_reads_them(
    header: bytes, rows: list[list[bytes]], chunk_size: int
) -> None:
    _same(header + b"".join(b"".join(row) + b"\n" for row in rows), chunk_size)


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"\xef\xbb\xbf",
        b"\n\nid,text\n1,a\n",
        b'id,text\n1,"never closed\n2,b\n',
        b'id,text\n1,"closed"x\n2,b\n',
        b'id,text\n1,"a ""quoted"" word"\n2,"two\r\nlines"\r\n',
        b"id,text\r1,a\r\r2,b\r",
        b"id,text\n1,a,extra\n2\n3,\xff\n4,ok",
        b'id,"te\nxt"\n1,a\n',
        b'"unclosed header\n',
        b"id,id\n1,2\n",
        b"id,\xfftext\n1,a\n",
    ],
)
@pytest.mark.parametrize("chunk_size", [1, 2, 4096])
def test_hand_made_files_read_as_the_csv_module_reads_them(content: bytes, chunk_size: int) -> None:
    _same(content, chunk_size)


@pytest.mark.parametrize("chunk_size", [7, 4096])
def test_the_real_banks_read_as_the_csv_module_reads_them(chunk_size: int) -> None:
    for path in (REPO / "data" / "mmlu_pro" / "questions.csv", REPO / "data" / "zeroeval_crux_gsm_math" / "questions.csv"):
        if path.exists():
            assert _read(CsvRecords, path, chunk_size) == _read(OracleCsvRecords, path, chunk_size)
