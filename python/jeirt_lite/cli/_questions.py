"""The question tables `add-llm` and `suggest` read: all rows of a CSV, JSONL or Parquet file, with labels.

Tables are CSV (header row), JSONL (one object per line) or Parquet (needs pyarrow), told apart by the suffix.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any, Optional

from .._errors import JeirtError
from ..readers import CSV_FIELD_LIMIT, format_of, require_pyarrow, text_problem

_TRUE = {"1", "1.0", "true", "yes"}
_FALSE = {"0", "0.0", "false", "no"}


def read_rows(path: Path) -> tuple[list[dict[str, Any]], str]:
    """All rows of a CSV/JSONL/Parquet table as dicts, and how to name row i in messages."""
    kind = format_of(path)
    if not path.is_file():
        raise JeirtError(f"{path}: no such file")
    if kind == "csv":
        csv.field_size_limit(CSV_FIELD_LIMIT)
        with open(path, newline="", encoding="utf-8-sig") as handle:
            return list(csv.DictReader(handle)), "csv"
    if kind == "jsonl":
        rows = []
        with open(path, encoding="utf-8-sig") as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as err:
                    raise JeirtError(f"{path} line {number}: not valid JSON ({err.msg})") from None
                if not isinstance(row, dict):
                    raise JeirtError(f"{path} line {number}: must be a JSON object")
                rows.append(row)
        return rows, "jsonl"
    table = require_pyarrow().parquet.read_table(path)
    return table.to_pylist(), "parquet"


def _column(rows: list[dict[str, Any]], wanted: str, path: Path, role: str) -> str:
    if rows and wanted not in rows[0]:
        raise JeirtError(f"{path}: no {role} column {wanted!r} (columns: {', '.join(map(str, rows[0]))})")
    return wanted


def _label(value: Any, where: str) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)) and value in (0, 1):
        return int(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return int(value.strip().lower() in _TRUE)
    raise JeirtError(f"{where}: label {value!r} is not 0/1 or true/false")


def read_questions(
    path: Path, text_column: str, label_column: Optional[str] = None
) -> tuple[list[str], Optional[list[int]], list[Any]]:
    """Texts (and labels when `label_column` is given) of a table; ids are the 'id' column or row numbers."""
    rows, kind = read_rows(path)
    if not rows:
        raise JeirtError(f"{path}: has no rows")
    _column(rows, text_column, path, "text")
    if label_column is not None:
        _column(rows, label_column, path, "label")
    texts, labels, ids = [], [], []
    for i, row in enumerate(rows):
        where = f"{path} row {i + 2 if kind == 'csv' else i + 1}"
        text = row.get(text_column)
        problem = text_problem(text) if text is not None else "has no text (missing or null)"
        if problem is None and not str(text).strip():
            problem = "has an empty text"
        if problem is not None:
            raise JeirtError(f"{where} {problem}")
        texts.append(str(text))
        if label_column is not None:
            labels.append(_label(row.get(label_column), where))
        ids.append(row.get("id", i))
    return texts, (labels if label_column is not None else None), ids
