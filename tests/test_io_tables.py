"""Whole tables read through the record readers (`_io.tables.read_table`, behind `report` and `train`), over more
than one batch of rows: each kept row's data row number, columns first met in a later row filled with None for the
rows before, bad rows dropped and counted with skip_bad."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jeirt_lite import JeirtError
from jeirt_lite._io import tables

ROWS = [{"text": "a"}, {"text": "b"}, {"text": "c", "extra": 1}, {"text": "d"}, {"text": "e", "late": "z"}]


@pytest.fixture(autouse=True)
def two_rows_a_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tables, "TABLE_CHUNK", 2)


def _jsonl(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_rows_are_numbered_across_batches_and_late_columns_filled_before(tmp_path: Path) -> None:
    table = tables.read_table(_jsonl(tmp_path / "t.jsonl", [json.dumps(row) for row in ROWS]), required=["text"])
    assert table.rows == [1, 2, 3, 4, 5] and len(table) == 5 and table.skipped == 0
    assert table.columns == ["text", "extra", "late"]
    assert table.values == {
        "text": ["a", "b", "c", "d", "e"], "extra": [None, None, 1, None, None], "late": [None] * 4 + ["z"],
    }
    assert table.records()[2] == {"text": "c", "extra": 1, "late": None}


def test_a_csv_keeps_every_row_number_over_batches(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("id,text\n" + "".join(f"q{i},text {i}\n" for i in range(1, 8)), encoding="utf-8")
    table = tables.read_table(path)
    assert table.rows == list(range(1, 8)) and table.values["id"] == [f"q{i}" for i in range(1, 8)]


def test_bad_rows_stop_the_read_or_are_dropped_and_counted(tmp_path: Path) -> None:
    lines = [json.dumps(row) for row in ROWS]
    lines[3] = "{not json"
    path = _jsonl(tmp_path / "t.jsonl", lines)
    with pytest.raises(JeirtError, match=r"t.jsonl: data row 4 .*line is not valid JSON.*skip"):
        tables.read_table(path)
    table = tables.read_table(path, skip_bad=True)
    assert table.rows == [1, 2, 3, 5] and table.skipped == 1 and len(table.problems) == 1
    assert table.values["text"] == ["a", "b", "c", "e"] and table.values["late"] == [None, None, None, "z"]


def test_a_required_column_that_is_missing_is_named(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("id,question\nq1,What?\n", encoding="utf-8")
    with pytest.raises(JeirtError, match=r"t.csv: no column text, correct \(columns: id, question\)"):
        tables.read_table(path, required=["text", "correct"])


@pytest.mark.parametrize("suffix", [".csv", ".tsv"])
def test_a_table_without_rows_still_has_its_columns(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"t{suffix}"
    separator = "\t" if suffix == ".tsv" else ","
    path.write_text(f"id{separator}text\n", encoding="utf-8")
    table = tables.read_table(path, required=["text"])
    assert table.columns == ["id", "text"] and table.values == {"id": [], "text": []} and table.records() == []


def test_only_the_first_three_bad_rows_are_kept_for_the_warning(tmp_path: Path) -> None:
    lines = [json.dumps(row) for row in ROWS] + ["{bad"] * 5
    table = tables.read_table(_jsonl(tmp_path / "t.jsonl", lines), skip_bad=True)
    assert table.skipped == 5 and [p.split(": data row ")[1][:1] for p in table.problems] == ["6", "7", "8"]
