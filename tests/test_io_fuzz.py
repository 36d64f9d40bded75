"""Fuzzing the I/O wing: generated tables in every registered format read back exactly (or fail with a JeirtError
naming the first bad row), scored ids written by every writer read back exactly, and mutated real tables and
vector files read correctly or fail with a JeirtError, never another exception."""

from __future__ import annotations

import csv
import io
import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jeirt_lite import JeirtError
from jeirt_lite._io.formats import FORMATS, Format, read_question_table
from jeirt_lite._io.tables import read_table
from jeirt_lite._io.vectors import VectorReader
from jeirt_lite._io.vocabulary import id_problem, text_problem
from jeirt_lite._io.writers import ScoredChunk, id_text

REPO = Path(__file__).resolve().parents[1]
FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Characters that break naive readers: delimiters, quotes, line ends, a byte-order mark, NUL, non-ASCII.
TRICKY = st.sampled_from([",", "\t", '"', "'", "\n", "\r", "\r\n", " ", "\ufeff", "\x00", "é", "中", "😀", "\\", "{", "}"])
CELL = st.lists(st.one_of(TRICKY, st.characters(exclude_categories=("Cs",))), max_size=12).map("".join)


def _write_table(fmt: Format, path: Path, header: list[str], rows: list[list[str]]) -> None:
    """The table written by the format's usual library (the csv module, json, pyarrow), not by jeirt-lite."""
    if fmt.name in ("csv", "tsv"):
        with open(path, "w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle, delimiter="," if fmt.name == "csv" else "\t")
            writer.writerow(header)
            writer.writerows(rows)
    elif fmt.name == "jsonl":
        path.write_text("".join(json.dumps(dict(zip(header, row))) + "\n" for row in rows), encoding="utf-8")
    elif fmt.name == "parquet":
        pq.write_table(pa.table({name: [row[i] for row in rows] for i, name in enumerate(header)},
                                schema=pa.schema([(name, pa.string()) for name in header])), path)
    else:  # a new format: add how its usual library writes a table
        raise AssertionError(f"no table writer for {fmt.name} in this test")


@pytest.mark.parametrize("fmt", FORMATS, ids=[fmt.name for fmt in FORMATS])
@FUZZ
@given(rows=st.lists(st.tuples(CELL, CELL), min_size=1, max_size=8))
def test_generated_tables_read_back_exactly_or_name_the_first_bad_row(fmt: Format, rows: list[tuple[str, str]]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"bank{fmt.suffixes[0]}"
        _write_table(fmt, path, ["id", "text"], [list(row) for row in rows])
        # A row is bad for its text or its id (a NUL in either).
        bad = [i for i, (ident, text) in enumerate(rows) if text_problem(text) or id_problem(ident)]
        if bad:
            with pytest.raises(JeirtError, match=rf"data row {bad[0] + 1} "):
                read_question_table(path)
        else:
            table = read_question_table(path)
            assert table.texts == [text for _, text in rows] and table.ids == [ident for ident, _ in rows]
        whole = read_table(path)  # every column, no meaning given to the values
        assert whole.values["id"] == [ident for ident, _ in rows] and whole.values["text"] == [t for _, t in rows]


IDS = st.lists(st.one_of(st.integers(-(2**63), 2**63 - 1), CELL.filter(lambda s: "\x00" not in s)), min_size=1,
               max_size=8)


@pytest.mark.parametrize("fmt", FORMATS, ids=[fmt.name for fmt in FORMATS])
@FUZZ
@given(ids=IDS)
def test_ids_written_by_every_writer_read_back(fmt: Format, ids: list[Any]) -> None:
    n = len(ids)
    chunk = ScoredChunk(ids=ids, indices=np.zeros((n, 1), dtype=np.int64), probabilities=np.full((n, 1), 0.5, np.float32),
                        difficulty=np.ones(n, dtype=np.float32))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"scores{fmt.suffixes[0]}"
        writer = fmt.writer(path, 1, ["llm,\"a\"\n"], False)
        half = n // 2  # two chunks: the schema must not depend on where the chunks break
        for part in (ids[:half], ids[half:]):
            if part:
                m = len(part)
                writer.write(ScoredChunk(part, chunk.indices[:m], chunk.probabilities[:m], chunk.difficulty[:m]))
        writer.close()
        back = read_table(path)
    texts = [id_text(ident) for ident in ids]
    expected = {"csv": texts, "tsv": texts, "jsonl": ids,
                "parquet": ids if all(type(i) is int for i in ids) else texts}[fmt.name]
    assert back.values["id"] == expected
    assert back.values["llm_1"] == ["llm,\"a\"\n"] * n


def _real_slice(size: int = 6000) -> bytes:
    with open(REPO / "data" / "mmlu_pro" / "questions.csv", "rb") as handle:
        return handle.read(size)


EDITS = st.lists(st.tuples(st.integers(0, 5999), st.sampled_from([b'"', b",", b"\n", b"\r", b"\x00", b"\xff", b"\xe9",
                                                                    b"\xef\xbb\xbf", b"", b"a"])), min_size=1, max_size=6)


def _mutate(data: bytes, edits: list[tuple[int, bytes]]) -> bytes:
    for position, replacement in edits:
        position %= max(1, len(data))
        data = data[:position] + replacement + data[position + 1 :]
    return data


def _read_all_ways(path: Path) -> None:
    """Every reader either reads the file or raises JeirtError; any other exception fails the test."""
    for read in (lambda: read_question_table(path), lambda: read_table(path)):
        try:
            read()
        except JeirtError:
            pass


@FUZZ
@given(edits=EDITS)
def test_mutated_real_csv_reads_or_fails_clearly(edits: list[tuple[int, bytes]]) -> None:
    original = _real_slice()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "questions.csv"
        path.write_bytes(_mutate(original, edits))
        _read_all_ways(path)
        try:
            table = read_question_table(path)
        except JeirtError:
            return
        # A read that succeeds read what the csv module reads strictly: no row glued to another.
        rows = list(csv.reader(io.StringIO(path.read_bytes().decode("utf-8-sig"), newline=""), strict=True))
        assert len(table.texts) == len([row for row in rows[1:] if row])


@FUZZ
@given(edits=EDITS)
def test_mutated_jsonl_and_parquet_read_or_fail_clearly(edits: list[tuple[int, bytes]]) -> None:
    rows = list(csv.DictReader(io.StringIO(_real_slice(20_000).decode("utf-8", "ignore"))))[:-1]
    with tempfile.TemporaryDirectory() as folder:
        jsonl = Path(folder) / "bank.jsonl"
        jsonl.write_bytes(_mutate("".join(json.dumps(row) + "\n" for row in rows).encode(), edits))
        _read_all_ways(jsonl)
        parquet = Path(folder) / "bank.parquet"
        buffer = io.BytesIO()
        pq.write_table(pa.Table.from_pylist(rows), buffer)
        parquet.write_bytes(_mutate(buffer.getvalue(), [(len(buffer.getvalue()) - 1 - p, b) for p, b in edits]))
        _read_all_ways(parquet)


@FUZZ
@given(edits=st.lists(st.tuples(st.integers(0, 200), st.binary(min_size=0, max_size=2)), min_size=1, max_size=4))
def test_mutated_npy_files_read_or_fail_clearly(edits: list[tuple[int, bytes]]) -> None:
    buffer = io.BytesIO()
    np.save(buffer, np.arange(12, dtype=np.float32).reshape(3, 4))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "v.npy"
        path.write_bytes(_mutate(buffer.getvalue(), edits))
        try:
            with VectorReader(path, 4, 2, skip_bad=True) as reader:
                for _ in reader:
                    pass
        except JeirtError:
            pass
