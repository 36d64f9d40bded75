"""The words every reader shares (`_io.vocabulary`): which values are 0/1 labels, which are question texts and which
are ids, and the sentence each refusal reads."""

from __future__ import annotations

import datetime
import decimal
from typing import Any, Optional

import numpy as np
import pyarrow as pa
import pytest
from jeirt_lite._io.vocabulary import (
    EMPTY_LABELS,
    FALSE_LABELS,
    TRUE_LABELS,
    column_missing,
    id_problem,
    key_column_problem,
    key_columns_problem,
    label_missing,
    label_of,
    llm_name_problem,
    text_problem,
)


@pytest.mark.parametrize(
    ("value", "label"),
    [(True, 1), (False, 0), (1, 1), (0, 0), (1.0, 1), (0.0, 0), (np.float64(1.0), 1), (2, None), (-1, None),
     (0.5, None), (None, None), ([1], None), (" True ", 1), ("FALSE", 0), ("1.0", 1), ("0", 0), ("yes", None),
     ("", None)],
)
def test_a_label_is_a_bool_a_0_or_1_or_one_of_their_words(value: Any, label: Optional[int]) -> None:
    assert label_of(value) == label


def test_every_word_of_the_vocabulary_reads_as_its_label() -> None:
    assert all(label_of(word.upper()) == 1 for word in TRUE_LABELS)
    assert all(label_of(f" {word} ") == 0 for word in FALSE_LABELS)


@pytest.mark.parametrize(
    ("value", "missing"),
    [(None, True), (float("nan"), True), (np.float64("nan"), True), ("", True), ("  ", True), (" NULL ", True),
     ("NaN", True), ("<NA>", True), ("None", True), (0.0, False), (0, False), (False, False), ("0", False),
     ("false", False), ("maybe", False), (np.int64(0), False)],
)
def test_a_missing_answer_is_null_nan_or_an_empty_word(value: Any, missing: bool) -> None:
    # What training, the report and add-llm leave out as no answer; "maybe" is a bad label, not a missing one.
    assert label_missing(value) is missing
    assert all(label_missing(word.upper()) for word in EMPTY_LABELS)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (None, "has no text (missing or null)"),
        (7, "text is an int, not a string"),
        ("", "text is empty"),
        (" \t\n", "text is empty"),
        ("a\x00b", "text holds a NUL character (a binary file, or UTF-16 read as UTF-8?)"),
        ("caf\udce9", "text holds bytes that are not valid UTF-8"),
        ("What is 2 + 2?", None),
        ("Qu'est-ce qu'un café ? 漢字", None),
    ],
)
def test_a_text_is_a_non_blank_string_of_valid_utf8_without_nul(value: Any, problem: Optional[str]) -> None:
    assert text_problem(value) == problem


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (None, "has no id (missing or null)"),
        (True, "id 'True' is a bool, not a string or an integer"),
        (1.5, "id '1.5' is a float, not a string or an integer"),
        (["x" * 100], f"id {str(['x' * 100])[:40]!r} is a list, not a string or an integer"),
        ("q\x001", "id holds a NUL character"),
        ("q\udce9", "id holds bytes that are not valid UTF-8"),
        ("q1", None),
        ("question-é", None),
        (7, None),
        (datetime.date(2026, 12, 5), None),
        (datetime.time(12, 30), None),
        (decimal.Decimal("1.5"), None),
    ],
)
def test_an_id_is_a_string_an_integer_or_a_typed_columns_value(value: Any, problem: Optional[str]) -> None:
    assert id_problem(value) == problem


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (None, "has no LLM name"),
        (" ", "has no LLM name"),
        (float("nan"), "has no LLM name"),  # was "LLM name 'nan' is a float, not a string": a missing name
        (7.0, "LLM name '7.0' is a float, not a string or an integer"),  # integers are names: the message says so
        (True, "LLM name 'True' is a bool, not a string or an integer"),
        (np.array([1, 2]), "LLM name '[1 2]' is an ndarray, not a string or an integer"),  # a list cell, via pandas
        ("gpt 4", None),
        (7, None),
    ],
)
def test_an_llm_name_is_a_non_blank_string_or_an_integer(value: Any, problem: Optional[str]) -> None:
    assert llm_name_problem(value) == problem


def test_a_missing_column_is_said_one_way_with_the_near_miss_of_a_name_wanted() -> None:
    assert column_missing("id", "key", ["id", "text"]) == "no id column 'key' (columns: id, text)"
    assert column_missing("LLM", "model", ["text", " Model"]) == (
        "no LLM column 'model' (columns: text,  Model; did you mean ' Model'?)")
    # Unnamed: the names looked for, and a near miss of any of them, in their order (the one that would be taken).
    looked_for = ("text", "question", "prompt")
    assert column_missing("text", None, ["Prompt", "QUESTION"], looked_for) == (
        "no text column (looked for 'text', 'question', 'prompt'; columns: Prompt, QUESTION; did you mean 'QUESTION'?)")
    assert column_missing("text", None, ["id", "body"], looked_for) == (
        "no text column (looked for 'text', 'question', 'prompt'; columns: id, body)")


# A one-value Arrow array of each type a Parquet column may have: the values its rows give.
TYPED_COLUMNS = [
    pa.array(["law"]), pa.array(["law"], pa.large_string()), pa.array([7], pa.int8()), pa.array([7], pa.uint64()),
    pa.array([datetime.date(2026, 12, 5)]), pa.array([datetime.time(12, 30)]),
    pa.array([datetime.datetime(2026, 12, 5, 12, 30)], pa.timestamp("s", tz="UTC")),
    pa.array([decimal.Decimal("1.5")]), pa.array(["law"]).dictionary_encode(),
    pa.array([True]), pa.array([1.0]), pa.array([1.0], pa.float32()), pa.array([b"law"]), pa.array([[1]]),
    pa.array([{"a": 1}]), pa.array([datetime.timedelta(1)]), pa.array([1.0]).dictionary_encode(),
]


@pytest.mark.parametrize("column", TYPED_COLUMNS, ids=lambda column: str(column.type))
@pytest.mark.parametrize("what", ["id", "group"])
def test_a_typed_column_is_refused_whole_exactly_when_its_values_are_refused_row_by_row(
    column: pa.Array, what: str
) -> None:
    # One rule, said twice: the column's type is refused before any row is read iff each of its rows would be.
    problem = key_column_problem("key", column.type, what)
    assert (problem is None) == (id_problem(column.to_pylist()[0]) is None)
    if problem is not None:
        assert problem.startswith(f"{what} column 'key' is of type {column.type}: ")
        assert "a string or an integer" in problem


def test_a_refused_column_says_which_types_name_groups_and_suspects_pandas_for_floats() -> None:
    assert key_column_problem("subject", pa.bool_(), "group") == (
        "group column 'subject' is of type bool: a group is named by a string or an integer (or a date, time or "
        "decimal), as an id is, so no row of it names one")
    assert key_column_problem("id", pa.float64(), "id") == (
        "id column 'id' is of type double: an id is a string or an integer (or a date, time or decimal), so no row "
        "of it has one (integers with gaps, which pandas writes as floats? cast the column to integers)")
    assert key_column_problem("id", pa.null(), "id") is None  # a column of nulls: each row says it has none
    assert key_column_problem("id", object, "id") is None  # not an Arrow type: left to the rows


def test_the_id_column_is_checked_before_the_group_column_as_a_row_s_values_are() -> None:
    types = {"id": pa.float64(), "subject": pa.bool_(), "text": pa.string()}
    assert key_columns_problem(types.get, "id", "subject") == (key_column_problem("id", pa.float64(), "id"),
                                                                "id_column")
    assert key_columns_problem(types.get, None, "subject") == (key_column_problem("subject", pa.bool_(), "group"),
                                                                "forecast_by")
    assert key_columns_problem(types.get, "text", None) is None
