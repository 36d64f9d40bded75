"""What the commands read from a table: question texts with their ids (and labels), chunk by chunk.

`score` streams a `TextReader`; `add-llm` reads a whole table with `read_questions` (`answers`).

Built on the record readers of `records`; a bad row (no text, an empty or non-text value, bytes that are not
UTF-8, a line that is not JSON) either stops the run with an error naming that row, or, with `skip_bad`, is
dropped and counted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from .._errors import SKIP_BAD, JeirtError, column_hint, hinted_error
from .._text import counted, first_and_more
from .optional import require_pyarrow
from .records import RecordReader, RowBatch
from .vocabulary import (
    ID_COLUMNS,
    TEXT_COLUMN,
    TEXT_COLUMNS,
    column_missing,
    default_id_column,
    default_text_column,
    group_problem,
    id_problem,
    key_columns_problem,
    label_missing,
    label_of,
    llm_name_problem,
    text_problem,
)


@dataclass
class TextChunk:
    """Rows kept from one chunk of the input: their ids, texts (and 0/1 labels), in input order."""

    ids: list[Any]
    texts: list[str]
    labels: Optional[list[int]] = None
    groups: Optional[list[str]] = None  # each row's group value as text (`group_column`), in the same order


class TextReader:
    """Question texts and ids of a table, in chunks; only the current chunk is in memory."""

    def __init__(
        self,
        path: Path,
        records_class: type[RecordReader],
        text_column: Optional[str],
        id_column: Optional[str],
        chunk_size: int,
        skip_bad: bool,
        label_column: Optional[str] = None,
        read_ids: bool = True,
        llm_rows: Optional[tuple[str, str]] = None,
        group_column: Optional[str] = None,
    ):
        self.path = path
        # The column whose value, read as text, names each row's group (`score --forecast-by`); None: not read.
        self.group_column = group_column
        # (column, name): only the rows whose column holds that LLM's name are read (one LLM's answers in a table
        # of several); the others are counted by LLM, never checked.
        self.llm_rows = llm_rows
        self.kept_rows = 0
        self.other_llms: Counter[str] = Counter()
        self.read_ids = read_ids  # False: no id column is read or checked, rows are named by their numbers
        self.id_column: Optional[str] = id_column
        self.label_column = label_column
        self.skip_bad = skip_bad
        self.skipped = 0
        self.unanswered = 0  # rows whose label is missing (an empty answer), left out as training leaves them
        self.records = records_class(path, chunk_size)
        self.schemaless = self.records.columns is None  # JSONL: no header, the rows' fields say what there is
        try:
            self.text_column = text_column if text_column is not None else self._found_text_column()
            self._check_columns(self.records.columns)
            if self.schemaless and self.group_column is not None:
                # A JSONL row may leave the field out, the first row too (a bad row, as a null is): only a name
                # that none of the first rows holds (misspelt) is refused as the bank's missing column.
                self._check_group_column(self.records.columns_ahead([self.group_column]), self.group_column)
        except JeirtError:
            self.records.close()
            raise
        self.row_note = self.records.row_note

    def _found_text_column(self) -> str:
        """Unnamed, the text column is the first of train's names in the header; in JSONL, among the fields of the
        first object holding one (its first rows read ahead: a file without one there is refused as a header
        without one is, not read as rows all bad); with no object read, `text`, which the rows then lack."""
        columns = self.records.columns_ahead(TEXT_COLUMNS)
        found = default_text_column(columns or [])
        if found is None and columns is not None:
            raise hinted_error(f"{self.path}: {column_missing('text', None, columns, TEXT_COLUMNS)}",
                               column_hint("text_column"))
        return found or TEXT_COLUMN

    def _check_group_column(self, columns: Optional[list[str]], column: str) -> None:
        if columns is not None and column not in columns:
            raise hinted_error(f"{self.path}: {column_missing('group', column, columns)}", column_hint("forecast_by"))

    def _check_columns(self, columns: Optional[list[str]]) -> None:
        if columns is None:  # known only once rows are read (JSONL)
            return
        if self.text_column not in columns:
            raise hinted_error(f"{self.path}: {column_missing('text', self.text_column, columns)}",
                               column_hint("text_column"))
        # A JSONL row without the label field is a question without an answer, as training reads it: the first row
        # may lack it (`answers` has looked for the column in the first rows).
        if self.label_column is not None and self.label_column not in columns and not self.schemaless:
            raise hinted_error(f"{self.path}: {column_missing('label', self.label_column, columns)}",
                               column_hint("label_column"))
        if self.llm_rows is not None and self.llm_rows[0] not in columns:
            raise hinted_error(f"{self.path}: {column_missing('LLM', self.llm_rows[0], columns)}",
                               column_hint("llm_column"))
        if self.group_column is not None and not self.schemaless:  # JSONL: checked on its first rows (__init__)
            self._check_group_column(columns, self.group_column)
        if self.id_column is None:
            if self.read_ids and not self.schemaless:  # JSONL: its first good row decides (__iter__)
                self.id_column = default_id_column(columns)
        elif self.id_column not in columns:
            raise hinted_error(f"{self.path}: {column_missing('id', self.id_column, columns)}",
                               column_hint("id_column"))
        self._check_column_types()

    def _check_column_types(self) -> None:
        """Refuse an id or group column of a typed table (Parquet) whose type no row's value can be an id or name a
        group by (a float, a bool, a list), before any row is read, rather than every row as a bad row."""
        column_type = getattr(self.records, "column_type", None)
        found = key_columns_problem(column_type, self.id_column, self.group_column) if column_type else None
        if found is not None:
            raise hinted_error(f"{self.path}: {found[0]}", column_hint(found[1]))

    @property
    def rows_read(self) -> int:
        return self.records.rows_read

    @property
    def total_rows(self) -> Optional[int]:
        return self.records.total_rows

    def fraction_read(self) -> Optional[float]:
        return self.records.fraction_read()

    def id_arrow_type(self) -> Any:
        """The id column's Arrow type: the one the input declares (Parquet); text for a CSV or TSV id column, whose
        every cell is read as text, so that a bank of no row gets the ids its other days have; else None (JSONL ids
        are any JSON value, row numbers are integers). Needs pyarrow: asked only for a Parquet output."""
        if self.id_column is None or self.schemaless:
            return None
        column_type = getattr(self.records, "column_type", None)
        return require_pyarrow().string() if column_type is None else column_type(self.id_column)

    def estimated_rows(self) -> Optional[float]:
        """The total row count: known (Parquet) or extrapolated from the share of the file read so far."""
        if self.total_rows is not None:
            return float(self.total_rows)
        share = self.fraction_read()
        return self.rows_read / share if share and self.rows_read else None

    def bad_row(self, row: int, problem: str, where: str, fatal: bool) -> None:
        """Count a bad row when skipping them (unless `fatal`: the rest of the file is unreadable), else stop with
        its row number."""
        if fatal:
            raise JeirtError(f"{self.path}: data row {row} ({self.row_note}{where}) {problem}")
        if self.skip_bad:
            self.skipped += 1
            return
        raise hinted_error(f"{self.path}: data row {row} ({self.row_note}{where}): {problem}", SKIP_BAD)

    def __iter__(self) -> Iterator[TextChunk]:
        schemaless = self.schemaless
        deciding = schemaless and self.read_ids and self.id_column is None
        if self.id_column is not None:
            id_candidates: tuple[str, ...] = (self.id_column,)
        else:
            id_candidates = ID_COLUMNS if deciding else ()
        required = [self.text_column] + ([self.llm_rows[0]] if self.llm_rows is not None else [])
        labels = [self.label_column] if self.label_column is not None else []  # a JSONL row may leave it out
        groups = [self.group_column] if self.group_column is not None else []  # a row without one is a bad row
        wanted = list(dict.fromkeys([*required, *labels, *groups, *id_candidates]))
        unclaimed: tuple[str, ...] = ()  # id fields no row may bring once the first good row came without one
        for batch in self.records.batches(wanted, required=required):
            if schemaless and self.records.columns is not None:
                # The first readable row stands for the header: a named column must be in it.
                self._check_columns(self.records.columns)
                schemaless = False
            start = 0
            if deciding:  # the first good row decides the id column; those before it are bad rows anyway
                first = self._first_good_row(batch)
                if first is not None:
                    self.id_column = next((name for name in ID_COLUMNS if batch.values[name][first] is not None), None)
                    unclaimed, deciding, start = (ID_COLUMNS if self.id_column is None else ()), False, first
            for name in unclaimed:  # else its id would be dropped for a row number, silently
                for i, value in enumerate(batch.values[name][start:], start):
                    if value is not None and i not in batch.problems:
                        batch.problems[i] = (f"has an id field {name!r} where the first good row has none (ids are then "
                                             "row numbers); give every row an id, or none")
            chunk = self._chunk(batch)
            if chunk.texts:
                yield chunk
        if self.llm_rows is not None and not self.kept_rows and self.other_llms:
            raise JeirtError(no_rows_of(self.path, *self.llm_rows, self.other_llms))

    def _first_good_row(self, batch: RowBatch) -> Optional[int]:
        """The first row of `batch` the format could read whose text is usable."""
        texts = batch.values[self.text_column]
        return next((i for i in range(batch.size) if i not in batch.problems and text_problem(texts[i]) is None),
                    None)

    def _chunk(self, batch: RowBatch) -> TextChunk:
        ids = batch.values.get(self.id_column) if self.id_column is not None else None
        labels = batch.values[self.label_column] if self.label_column is not None else None
        llms, keep = (batch.values[self.llm_rows[0]], self.llm_rows[1]) if self.llm_rows is not None else (None, "")
        groups = batch.values[self.group_column] if self.group_column is not None else None
        chunk = TextChunk([], [], [] if labels is not None else None, [] if groups is not None else None)
        problems = batch.problems
        for i, text in enumerate(batch.values[self.text_column]):
            problem = problems.get(i) if problems else None
            if problem is None and llms is not None:
                problem = llm_name_problem(llms[i])
                # Stripped as training strips LLM names: its 'x ' is x, a name add_llm refuses to be given.
                name = str(llms[i]).strip()
                if problem is None and name != keep.strip():
                    self.other_llms[name] += 1
                    continue
                self.kept_rows += problem is None
            if problem is None:
                problem = text_problem(text)
            if problem is None and ids is not None:
                problem = id_problem(ids[i])
            if problem is None and groups is not None:
                problem = group_problem(groups[i])
            label = None
            if problem is None and labels is not None:
                if label_missing(labels[i]):
                    self.unanswered += 1
                    continue
                label = label_of(labels[i])
                if label is None:
                    problem = f"label {labels[i]!r} is not 0/1 or true/false"
            if problem is not None:
                self.bad_row(batch.row(i), problem, self.records.where(batch, i), i in batch.fatal)
                continue
            chunk.ids.append(batch.row(i) if ids is None else ids[i])  # the row number errors name too
            chunk.texts.append(text)
            if chunk.groups is not None and groups is not None:
                chunk.groups.append(str(groups[i]))  # read as text, as a CSV cell is: 3 and "3" are one group
            if chunk.labels is not None and label is not None:
                chunk.labels.append(label)
        return chunk

    def close(self) -> None:
        self.records.close()

    def __enter__(self) -> TextReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def no_rows_of(path: Path, column: str, llm: str, others: Counter[str]) -> str:
    """The error of a table whose LLM column names other LLMs only."""
    named = first_and_more([name for name, _ in others.most_common()], 8, show=repr)
    return (f"{path}: no row of {llm!r} in its LLM column {column!r}, which names {counted(len(others), 'other LLM')} "
            f"({named}); add it under the name the file gives it, or give its answers alone without that column")


@dataclass
class QuestionTable:
    """A whole table's texts, ids (the id column, else data row numbers, 1-based as in error messages) and, if asked for, 0/1 labels."""

    texts: list[str]
    ids: list[Any]
    labels: Optional[list[int]] = None
    unanswered: int = 0  # rows left out for a missing label


def read_questions(reader: TextReader) -> QuestionTable:
    """Every row of an open `TextReader` in memory (`add-llm` answers); closes the reader."""
    table = QuestionTable([], [], [] if reader.label_column is not None else None)
    with reader:
        for chunk in reader:
            table.texts += chunk.texts
            table.ids += chunk.ids
            if table.labels is not None and chunk.labels is not None:
                table.labels += chunk.labels
    table.unanswered = reader.unanswered
    if not table.texts:
        raise JeirtError(f"{reader.path}: has no rows" + (
            f" with an answer ({table.unanswered} with an empty label)" if table.unanswered else ""))
    return table
