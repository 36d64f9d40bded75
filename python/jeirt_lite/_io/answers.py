"""What `add-llm` reads: one LLM's answers (a text and a correct column), from a table `train` could read too.

The columns are found by the names `train` looks for (`TEXT_COLUMNS`, `CORRECT_COLUMNS`) unless named. A table with
an LLM column (`LLM_COLUMNS`, or named) holds answers of several LLMs, as `train`'s long tables do: only the rows of
the LLM being added are read, so that other LLMs' answers are never fitted to it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from .._errors import JeirtError, column_hint, hinted_error
from .formats import check_input_file, open_text_reader, table_format
from .texts import read_questions
from .vocabulary import CORRECT_COLUMNS, LLM_COLUMNS, TEXT_COLUMNS, column_missing

# Rows read to learn a JSONL table's fields: those of its first rows stand for a header.
_PEEK_ROWS = 64


@dataclass
class Answers:
    """One LLM's answers: texts and 0/1 labels in file order, and what was left out."""

    texts: list[str]
    labels: list[int]
    unanswered: int  # rows of this LLM with an empty label
    llm_column: Optional[str]  # the column the rows were chosen by, when the table has one
    other_llms: Counter[str]  # rows of other LLMs in that column, left out


def table_columns(path: Path) -> list[str]:
    """The columns of a table file: its header or schema; for JSONL, the fields of its first rows."""
    check_input_file(path, "answers")
    records = table_format(path).records(path, _PEEK_ROWS)
    try:
        if records.columns is None:
            next(iter(records.batches(None)), None)
        return list(records.columns or [])
    except OSError as err:
        raise JeirtError(f"{path}: cannot read it ({err.strerror or err})") from err
    finally:
        records.close()


def pick_column(path: Path, columns: list[str], named: Optional[str], candidates: tuple[str, ...], what: str,
                option: str, required: bool = True) -> Optional[str]:
    """The column `named`, else the first of `candidates` in the table; an error names both when there is none."""
    found = named if named is not None else next((name for name in candidates if name in columns), None)
    if (named is not None and named not in columns) or (found is None and required):
        raise hinted_error(f"{path}: {column_missing(what, named, columns, candidates)}", column_hint(option))
    return found


def read_answers(
    path: Path,
    llm: str,
    text_column: Optional[str] = None,
    correct_column: Optional[str] = None,
    llm_column: Optional[str] = None,
) -> Answers:
    """The answers of `llm` in the table at `path`: every row, or the rows whose LLM column holds `llm` when the table
    has such a column. A bad row stops with an error naming it; so does a table whose LLM column never names `llm`."""
    columns = table_columns(path)
    text = pick_column(path, columns, text_column, TEXT_COLUMNS, "text", "text_column")
    correct = pick_column(path, columns, correct_column, CORRECT_COLUMNS, "correct", "correct_column")
    by_llm = pick_column(path, columns, llm_column, LLM_COLUMNS, "LLM", "llm_column", required=False)
    reader = open_text_reader(path, text_column=str(text), label_column=correct, read_ids=False,
                              llm_rows=(by_llm, llm) if by_llm is not None else None)
    table = read_questions(reader)
    return Answers(table.texts, table.labels or [], table.unanswered, by_llm, reader.other_llms)
