"""The writers of scored banks on their own: ids as text the same in every output, Parquet ids that turn to text
and stay text, integers beyond int64, ids against a declared type, and an empty bank's columns for any k.
tests/test_batch.py and tests/test_io_hostile.py write through `score_file`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from jeirt_lite import JeirtError
from jeirt_lite._io.vocabulary import score_columns
from jeirt_lite._io.writers import ParquetWriter, ScoredChunk, id_text

LLMS = ["a", "b", "c"]


def _chunk(ids: list[Any], k: int = 2) -> ScoredChunk:
    n = len(ids)
    return ScoredChunk(ids, np.tile(np.arange(k, dtype=np.uint32), (n, 1)),
                       np.full((n, k), 0.5, np.float32), np.ones(n, np.float32))


def _write(path: Path, chunks: list[list[Any]], id_type: Any = None) -> pa.Table:
    writer = ParquetWriter(path, 2, LLMS, all_probabilities=False, id_type=id_type)
    for ids in chunks:
        writer.write(_chunk(ids))
    writer.close()
    return pq.read_table(path)


def test_id_text_writes_json_values_as_json_and_the_rest_as_str() -> None:
    assert [id_text(value) for value in ("q1", 7, True, None, 1.5, [1, "x"], {"a": 1})] == [
        "q1", "7", "true", "null", "1.5", '[1, "x"]', '{"a": 1}'
    ]
    assert id_text(np.datetime64("2026-12-05")) == "2026-12-05"


def test_ids_that_turned_to_text_stay_text_when_later_chunks_are_integers(tmp_path: Path) -> None:
    table = _write(tmp_path / "s.parquet", [[1, 2], ["x", 3], [4, 5], [None, 6]])
    assert table.schema.field("id").type == pa.string()
    assert table.column("id").to_pylist() == ["1", "2", "x", "3", "4", "5", None, "6"]
    assert not (tmp_path / "s.parquet.text-ids").exists()


def test_integer_ids_stay_integers_and_one_beyond_int64_turns_them_to_text(tmp_path: Path) -> None:
    assert _write(tmp_path / "int.parquet", [[1, 2], [None, 3]]).column("id").to_pylist() == [1, 2, None, 3]
    table = _write(tmp_path / "big.parquet", [[1, 2], [2**64, 3]])
    assert table.column("id").to_pylist() == ["1", "2", "18446744073709551616", "3"]


@pytest.mark.parametrize("ids", [["x"], [2**64]])
def test_ids_that_do_not_fit_the_inputs_declared_type_are_named(tmp_path: Path, ids: list[Any]) -> None:
    writer = ParquetWriter(tmp_path / "s.parquet", 2, LLMS, all_probabilities=False, id_type=pa.int64())
    with pytest.raises(JeirtError, match=r"s\.parquet: ids do not fit the input's id type int64"):
        writer.write(_chunk(ids))
    writer.close()


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("all_probabilities", [False, True])
def test_an_empty_bank_writes_every_column_for_any_k(tmp_path: Path, k: int, all_probabilities: bool) -> None:
    path = tmp_path / "s.parquet"
    ParquetWriter(path, k, LLMS, all_probabilities=all_probabilities).close()
    table = pq.read_table(path)
    assert table.num_rows == 0 and table.column_names == score_columns(k, LLMS, all_probabilities)


@pytest.mark.parametrize(("declared", "written"), [
    (None, pa.int64()),  # schemaless ids (JSONL, row numbers; CSV ids are declared text): no id that is not an integer came
    (pa.int64(), pa.int64()),
    (pa.date32(), pa.date32()),
    (pa.large_string(), pa.string()),
])
def test_an_empty_bank_keeps_the_id_type_a_scored_row_would_have(tmp_path: Path, declared: Any, written: Any) -> None:
    # The Ray engine writes an empty bank's ids with the input's type; this writer wrote text whatever it was.
    path = tmp_path / "s.parquet"
    ParquetWriter(path, 2, LLMS, all_probabilities=False, id_type=declared).close()
    schema = pq.read_schema(path)
    assert schema.field("id").type == written
    assert schema.field("p_1").type == pa.float32() and schema.field("llm_1").type == pa.string()
