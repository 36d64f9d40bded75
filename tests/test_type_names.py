"""A value's type as errors name it: JSON's names for what a request body holds, Python's for a Python caller."""

from __future__ import annotations

import array
import json

import numpy as np
import pytest
from jeirt_lite._type_names import json_type, python_type


@pytest.mark.parametrize(("text", "name"), [
    ("[1, 2]", "an array"), ('{"a": 1}', "an object"), ("null", "null"), ('"a"', "a string"), ("7", "a number"),
    ("7.5", "a number"), ("true", "a boolean"), ("false", "a boolean"),
])
def test_json_type_names_each_json_type_as_json_does(text: str, name: str) -> None:
    assert json_type(json.loads(text)) == name


def test_json_type_names_a_value_json_cannot_hold_in_python_s_words() -> None:
    assert json_type(np.float32(1.0)) == "a float32"


@pytest.mark.parametrize(("value", "name"), [
    ([1], "a list"), ({}, "a dict"), (None, "None"), (1.5, "a float"), ("a", "a str"), (7, "an int"),
    (np.zeros(2), "an ndarray"), (np.int64(7), "an int64"), (np.uint8(7), "a uint8"), (object(), "an object"),
    # Every vowel of the rule, a capital one included (a mutation round's planted changes: "aeio" less a letter,
    # the name's first letter not lowered)
    (array.array("i"), "an array"), (..., "an ellipsis"), (OSError(), "an OSError"), (ValueError(), "a ValueError"),
])
def test_python_type_names_the_type_itself(value: object, name: str) -> None:
    assert python_type(value) == name
