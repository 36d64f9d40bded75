"""Names and values every reader, writer and command agrees on: columns, labels, output column names."""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Callable, Sequence
from typing import Any, Optional

from .._type_names import TypeOf, python_type
from .optional import require_pyarrow

TEXT_COLUMN = "text"
LABEL_COLUMN = "correct"
# The names a table of answers (`train`, `add-llm`, `report`) is read by when the user names none: the first one
# present.
QUESTION_COLUMNS = ("question_id", "qid", "id")
TEXT_COLUMNS = ("text", "question", "prompt")
CORRECT_COLUMNS = ("correct", "label", "is_correct", "score")
LLM_COLUMNS = ("llm", "model", "model_name", "llm_name")
# Tried in this order when the user names no id column (a question bank's own `id` first, then the names a table
# of answers gives its question ids); without any, ids are data row numbers (1-based, header not counted: the
# numbers error messages use).
ID_COLUMNS = ("id", "question_id", "qid")

# The label vocabulary, compared after stripping and lower-casing; an empty label is a missing answer.
TRUE_LABELS = frozenset({"1", "1.0", "true"})
FALSE_LABELS = frozenset({"0", "0.0", "false"})
EMPTY_LABELS = frozenset({"", "nan", "none", "<na>", "null"})


def columns_listed(names: Sequence[str], columns: Sequence[Any]) -> str:
    """The table's columns, for an error about a column of `names` missing from them, with the first (in the order
    of `names`) that differs from one only in case or surrounding spaces (a header "id, text" has the column
    ' text'), which a list alone would not show."""
    listed = ", ".join(map(str, columns))
    near = next((column for name in names for column in columns
                 if str(column).strip().lower() == name.strip().lower()), None)
    return f"columns: {listed}; did you mean {str(near)!r}?" if near is not None else f"columns: {listed}"


def default_id_column(columns: Sequence[str]) -> Optional[str]:
    """The first of `ID_COLUMNS` among `columns`, or None."""
    return next((name for name in ID_COLUMNS if name in columns), None)


def default_text_column(columns: Sequence[str]) -> Optional[str]:
    """The first of `TEXT_COLUMNS` among `columns`, or None: a bank is read by the names a table of answers is."""
    return next((name for name in TEXT_COLUMNS if name in columns), None)


def column_missing(what: str, named: Optional[str], columns: Sequence[Any], looked_for: Sequence[str] = ()) -> str:
    """Why `columns` hold no `what` column (text, id, LLM, ...), in the words of every command: the one `named` is
    not among them, or (None) none of the names `looked_for` is."""
    if named is not None:
        return f"no {what} column {named!r} ({columns_listed([named], columns)})"
    return f"no {what} column (looked for {', '.join(map(repr, looked_for))}; {columns_listed(looked_for, columns)})"


def label_of(value: Any) -> Optional[int]:
    """1 or 0 for a label in the vocabulary (bools, 0/1 numbers, their spellings); None when it is not one."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return int(value) if value in (0, 1) else None
    if isinstance(value, str):
        word = value.strip().lower()
        if word in TRUE_LABELS:
            return 1
        if word in FALSE_LABELS:
            return 0
    return None


def label_missing(value: Any) -> bool:
    """Whether `value` is a missing answer: null, NaN, or a spelling in EMPTY_LABELS."""
    if value is None:
        return True
    if isinstance(value, float):
        return bool(value != value)  # NaN
    return isinstance(value, str) and value.strip().lower() in EMPTY_LABELS


def probability_column(llm: str) -> str:
    """The output column holding P(correct) of one LLM (`score --all`)."""
    return f"p[{llm}]"


# The output column marking, under `--min-probability`, a row where no LLM cleared the threshold (its llm_1 is then
# the most likely LLM: `RouteResult.fallback`).
FALLBACK_COLUMN = "fallback"


def score_columns(k: int, llm_names: Sequence[str], all_probabilities: bool, fallback: bool = False) -> list[str]:
    """Columns of a scored bank, in order: id, llm_1, p_1, ..., llm_k, p_k, difficulty[, p[<llm>]...][, fallback].

    `fallback` (routing by a minimum probability) comes last, so every other column keeps the place it has without
    that rule."""
    columns = ["id"]
    for rank in range(1, k + 1):
        columns += [f"llm_{rank}", f"p_{rank}"]
    columns.append("difficulty")
    if all_probabilities:
        columns += [probability_column(name) for name in llm_names]
    if fallback:
        columns.append(FALLBACK_COLUMN)
    return columns


# A list of texts given as one string: Python callers and HTTP requests are refused in these words.
SINGLE_STRING_TEXTS = "texts must be a list of strings, not a single string (wrap it: [text])"


def text_problem(value: Any, type_of: TypeOf = python_type) -> Optional[str]:
    """Why `value` cannot be a question text, or None when it can; `type_of` names a value's type (JSON's names
    where the value came from a request body)."""
    if value is None:
        return "has no text (missing or null)"
    if not isinstance(value, str):
        return f"text is {type_of(value)}, not a string"
    if not_utf8(value):
        return "text holds bytes that are not valid UTF-8"
    if not value.strip():
        return "text is empty"
    if "\x00" in value:
        return "text holds a NUL character (a binary file, or UTF-16 read as UTF-8?)"
    return None


def not_utf8(value: str) -> bool:
    """Whether `value` holds a lone surrogate, which no UTF-8 file can hold: a byte that was not UTF-8 (kept by
    surrogateescape) or a JSON escape such as "\\udcff"; it cannot be written out, hashed by Arrow or encoded."""
    if value.isascii():
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def llm_name_problem(value: Any) -> Optional[str]:
    """Why `value` of a table's LLM column cannot name an LLM, or None when it can (a string or an integer)."""
    # NaN: a Parquet float column's missing value (pandas writes an integer column with gaps as floats).
    if value is None or (isinstance(value, str) and not value.strip()) or (isinstance(value, float) and value != value):
        return "has no LLM name"
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return f"LLM name {str(value)[:40]!r} is {python_type(value)}, not a string or an integer"
    return None


# Id values besides strings and integers: a typed Parquet column's dates, times and decimals (kept as they are).
TYPED_IDS = (datetime.date, datetime.time, decimal.Decimal)


def id_problem(value: Any) -> Optional[str]:
    """Why `value` cannot be a question id, or None when it can: an id is a string or an integer, or a date, time
    or decimal of a typed (Parquet) column; a null, a bool, a float, a list or an object is not, and a string id
    is not blank and holds valid UTF-8 and no NUL, as a text must (it is copied into the output, where a NUL cuts it short for many
    readers)."""
    return key_problem(value, "id")


def group_problem(value: Any, type_of: TypeOf = python_type) -> Optional[str]:
    """Why `value` cannot name a question's group (`score --forecast-by`), or None: the rules of an id, which is
    read the same way (a group is printed as a column of the forecast's table, as an id is copied to the output)."""
    return key_problem(value, "group value", type_of)


def key_problem(value: Any, what: str, type_of: TypeOf = python_type) -> Optional[str]:
    """Why `value` cannot be a row's `what` (id, group value): see `id_problem`; `type_of` as `text_problem`'s."""
    if value is None:
        return f"has no {what} (missing or null)"
    if isinstance(value, bool) or not isinstance(value, (str, int, *TYPED_IDS)):
        return f"{what} {str(value)[:40]!r} is {type_of(value)}, not a string or an integer"
    if isinstance(value, str):
        if not value.strip():  # nothing to join the output back by, as an empty text has nothing to route
            return f"{what} is empty"
        if "\x00" in value:
            return f"{what} holds a NUL character"
        if not_utf8(value):
            return f"{what} holds bytes that are not valid UTF-8"
    return None


# Why a column of another type is refused (`key_column_problem`), by what its rows would give.
_KEY_TYPE_RULES = {
    "id": "an id is a string or an integer (or a date, time or decimal), so no row of it has one",
    "group": "a group is named by a string or an integer (or a date, time or decimal), as an id is, so no row of it "
             "names one",
}


def key_column_problem(column: str, arrow_type: Any, what: str) -> Optional[str]:
    """Why no row of a typed (Parquet, Arrow) column of `arrow_type` can give its `what` ("id" or "group"), or None
    when its rows may: such a column is refused before any row is read (a skip rule would skip every row). The
    types are those whose values `key_problem` takes: strings, integers, dates, times, timestamps (dates with a
    time), decimals, and a dictionary (a pandas category) of them; a column of nulls, or a type that is not Arrow's,
    is left to its rows."""
    pa = require_pyarrow()
    if not isinstance(arrow_type, pa.DataType):
        return None
    types = pa.types
    values = arrow_type.value_type if types.is_dictionary(arrow_type) else arrow_type
    tests = (types.is_string, types.is_large_string, getattr(types, "is_string_view", None), types.is_integer,
             types.is_date, types.is_time, types.is_timestamp, types.is_decimal, types.is_null)
    if any(test(values) for test in tests if test is not None):
        return None
    pandas_gaps = (" (integers with gaps, which pandas writes as floats? cast the column to integers)"
                   if types.is_floating(values) else "")
    return f"{what} column {column!r} is of type {arrow_type}: {_KEY_TYPE_RULES[what]}{pandas_gaps}"


def key_columns_problem(
    column_type: Callable[[str], Any], id_column: Optional[str], group_column: Optional[str]
) -> Optional[tuple[str, str]]:
    """The first of a typed table's id and group columns (in the order a row's values are checked; None: not read)
    whose type `key_column_problem` refuses: (why, the keyword argument that names the column), or None."""
    for column, what, option in ((id_column, "id", "id_column"), (group_column, "group", "forecast_by")):
        problem = None if column is None else key_column_problem(column, column_type(column), what)
        if problem is not None:
            return problem, option
    return None
