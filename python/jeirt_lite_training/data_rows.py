"""The rows of a training table: reading one file into a frame, parsing ids, texts and labels, and the rule for a
bad row (stop with `DataError` naming the file and row, or skip and count it in the `LoadReport`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ._runtime import (
    EMPTY_LABELS,
    FALSE_LABELS,
    TRUE_LABELS,
    TYPED_IDS,
    JeirtError,
    counted,
    first_and_more,
    not_utf8,
    python_type,
    read_table,
    reraised_as,
    table_format,
)

logger = logging.getLogger(__name__)

# How each format's data rows are counted, said in every bad-row message (the same words as jeirt_lite._io).
ROW_NOTES = {"csv": "1-based, header not counted", "jsonl": "1-based, blank lines not counted", "parquet": "1-based"}


class DataError(ValueError):
    """The input data is malformed; the message names the file, the row and the problem."""


@dataclass
class LoadReport:
    """What happened while loading: counts of everything that was merged, dropped or skipped."""

    source: str
    layout: str
    rows_read: int = 0  # response rows (long/folder) or question x LLM cells (wide) read
    cells: int = 0  # observed (question, LLM) cells in the returned Dataset
    empty_labels: int = 0  # rows/cells with an empty label: treated as missing
    duplicate_cells: int = 0  # (question, LLM) cells given by more than one row
    duplicate_rows: int = 0  # rows beyond the first for those cells
    ties_dropped: int = 0  # duplicate cells whose rows split evenly: dropped
    duplicate_question_rows: int = 0  # repeated question rows with the same text (merged)
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> rows skipped (skip_bad=True only)
    llms_left_out: list[str] = field(default_factory=list)  # LLMs without a single answer (skip_bad=True only)

    @property
    def rows_skipped(self) -> int:
        return sum(self.skipped.values())

    def summary(self) -> str:
        unit = "cells" if self.layout == "wide" else "rows"  # a wide table's rows_read counts question x LLM cells
        parts = [f"{self.source} ({self.layout}): {self.rows_read} {unit} read, {self.cells} cells kept"]
        if self.empty_labels:
            parts.append(f"{counted(self.empty_labels, 'empty label')} treated as missing")
        if self.duplicate_cells:
            parts.append(
                f"{counted(self.duplicate_cells, 'duplicate cell')} ({counted(self.duplicate_rows, 'extra row')}) "
                f"resolved by majority, {counted(self.ties_dropped, 'tie')} dropped"
            )
        if self.duplicate_question_rows:
            parts.append(f"{counted(self.duplicate_question_rows, 'repeated question row')} merged")
        for reason, n in sorted(self.skipped.items()):
            parts.append(f"skipped {counted(n, 'row')}: {reason}")
        if self.llms_left_out:
            left_out = counted(len(self.llms_left_out), "LLM")
            parts.append(f"left out {left_out} without answers: {', '.join(self.llms_left_out)}")
        return "; ".join(parts)


@dataclass(frozen=True)
class Columns:
    """Column names for the long and wide layouts. None means: the first default name present."""

    question: str | None = None
    text: str | None = None
    llm: str | None = None  # long layout only
    correct: str | None = None  # long layout only
    subject: str | None = None
    benchmark: str | None = None
    llm_columns: Sequence[str] | None = None  # wide layout only; default: every other column


class RowChecker:
    """Raises on the first bad row, or drops bad rows and counts them (skip_bad)."""

    def __init__(self, file: str, kind: str, skip_bad: bool, report: LoadReport) -> None:
        self.file, self.kind, self.skip_bad, self.report = file, kind, skip_bad, report

    def row_name(self, position: int) -> str:
        """Data rows numbered as every command numbers them (the number `score` would name)."""
        return f"data row {position + 1} ({ROW_NOTES.get(self.kind, '1-based')})"

    def check(self, bad: np.ndarray, rows: np.ndarray, reason: str, detail: Sequence[str]) -> np.ndarray:
        """Return the keep-mask (~bad). `detail[i]` describes bad row i (only the first one is formatted)."""
        bad = np.asarray(bad, dtype=bool)
        if not bad.any():
            return ~bad
        first = int(np.flatnonzero(bad)[0])
        if not self.skip_bad:
            raise DataError(f"{self.file}: {self.row_name(int(rows[first]))}: {reason}: {detail[first]}")
        n = int(bad.sum())
        self.report.skipped[reason] = self.report.skipped.get(reason, 0) + n
        logger.warning("%s: skipped %d rows (%s), first at %s", self.file, n, reason,
                       self.row_name(int(rows[first])))
        return ~bad


class LazyDetail(Sequence[str]):
    """Formats the message for one bad row only when it is needed (keeps the checks vectorised)."""

    def __init__(self, fmt: str, *columns: np.ndarray) -> None:
        self.fmt, self.columns = fmt, columns

    def __getitem__(self, i):  # type: ignore[no-untyped-def, override]
        return self.fmt.format(*(c[i] for c in self.columns))

    def __len__(self) -> int:
        return len(self.columns[0]) if self.columns else 0


def named_llms(names: Sequence[str], shown: int = 5, width: int = 60) -> str:
    """The first `shown` names quoted, each cut at `width` characters, then how many more: for an error about
    several LLMs (a wrong --llm-column gives question texts as names)."""
    return first_and_more(names, shown, show=lambda name: repr(name if len(name) <= width else name[:width] + "..."))


# What a question id and a text may be, as the package's readers take them (`score`, `add-llm`): a CSV holds only
# strings; a JSONL or Parquet table may hold a number, a bool or a list, which str() would turn into a text or an
# id without a word.
ID_TYPES = (str, int, *TYPED_IDS)
TEXT_TYPES = (str,)


def wrong_type(values: pd.Series, allowed: tuple[type, ...]) -> tuple[np.ndarray, np.ndarray]:
    """((N,) bool: a value present and not of `allowed` (a bool is no int here), (N,) its type as errors name it:
    "an int", "a list", in Python's words as the package's readers name a cell's)."""
    items = values.to_numpy(dtype=object)
    names = np.asarray([python_type(value) for value in items], dtype=object)
    bad = np.fromiter(
        (value is not None and not _missing_number(value) and (isinstance(value, bool) or not isinstance(value, allowed))
         for value in items),
        dtype=bool, count=len(items),
    )
    return bad, names


def _missing_number(value: object) -> bool:
    return isinstance(value, float) and value != value  # NaN: pandas' missing value


def read_frame(path: Path, skip_bad: bool = False, skipped: dict[str, int] | None = None) -> tuple[pd.DataFrame, str]:
    """Read a table with the package's reader (CSV values stay strings: "007" is not 7); say which kind it was.

    Rows the format cannot read (a ragged CSV row, a line that is not JSON) stop with `DataError`, or with
    `skip_bad` are dropped and counted in `skipped` under "unreadable row".
    """
    if not path.exists():
        raise DataError(f"{path}: file not found")
    try:
        kind = table_format(path).name
    except JeirtError as exc:
        raise DataError(f"{path}: unsupported file type {path.suffix!r} ({exc})") from exc
    try:
        table = read_table(path, skip_bad=skip_bad)
    except JeirtError as exc:
        # with its hint (skip_bad=True): a command line names its own flag, or none
        raise reraised_as(DataError(str(exc)), exc) from exc
    if table.skipped:
        if skipped is not None:
            skipped["unreadable row"] = skipped.get("unreadable row", 0) + table.skipped
        logger.warning("%s: skipped %s, first: %s", path, counted(table.skipped, "unreadable row"), table.problems[0])
    unwritable = next((name for name in table.columns if not_utf8(name)), None)
    if unwritable is not None:  # a JSONL field name: no row to skip, and no LLM or column can be named by it
        raise DataError(f"{path}: column {unwritable!r} holds a lone surrogate (JSON's \\udcff), which is not UTF-8; "
                        "rename it")
    frame = pd.DataFrame({name: pd.Series(table.values[name], dtype=object) for name in table.columns})
    return frame, "csv" if kind == "tsv" else kind


def as_str(values: pd.Series) -> np.ndarray:
    """Strings with missing values as "" (ids, texts, names)."""
    return _strings(values).str.strip().to_numpy(dtype=object)


def _strings(values: pd.Series) -> pd.Series:
    """The values as strings, missing ones as "". A lone surrogate (`not_utf8_cells`' bad rows) cannot become an
    Arrow string, pandas' str type: the strings then stay Python objects, so that the row's check can name it."""
    out = values.astype(object).where(values.notna(), "")
    try:
        return out.astype(str)
    except UnicodeEncodeError:
        return pd.Series([str(value) for value in out], index=out.index, dtype=object)


def not_utf8_cells(values: pd.Series) -> np.ndarray:
    """(N,) bool: a string value holding a lone surrogate (JSON's "\\udcff"), which is not UTF-8."""
    return np.fromiter((isinstance(value, str) and not_utf8(value) for value in values.to_numpy(dtype=object)),
                       dtype=bool, count=len(values))


def parse_labels(values: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return (label as float32, empty mask, bad mask); 0/1/0.0/1.0/true/false in any case, vectorised."""
    if pd.api.types.is_bool_dtype(values):
        return values.to_numpy(dtype=np.float32), np.zeros(len(values), bool), np.zeros(len(values), bool)
    text = _strings(values).str.strip().str.lower()
    is_true = text.isin(TRUE_LABELS).to_numpy()
    is_false = text.isin(FALSE_LABELS).to_numpy()
    empty = text.isin(EMPTY_LABELS).to_numpy()
    bad = ~(is_true | is_false | empty)
    return is_true.astype(np.float32), empty, bad
