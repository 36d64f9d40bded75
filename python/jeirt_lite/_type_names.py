"""A value's type as an error message names it: in Python's words to a Python caller, in JSON's to a client of the
HTTP service, which sent an array or a number, never a list or an int.

Checks shared by both (`checked_groups`, `text_problem`, `key_problem`) take one of these as `type_of`, so the
check and its sentence stay in one place and only the type's name follows the caller."""

from __future__ import annotations

from typing import Any, Callable

TypeOf = Callable[[Any], str]

# What json.loads gives for each JSON type; bool before int, as True is an int to isinstance.
_JSON_TYPES = ((bool, "a boolean"), (str, "a string"), (int, "a number"), (float, "a number"), (list, "an array"),
               (dict, "an object"))


def python_type(value: Any) -> str:
    """"a str", "an int", "an ndarray", ...: the type's own name after its article (None is "None", not "a
    NoneType")."""
    if value is None:
        return "None"
    name = type(value).__name__
    # "an" before a vowel's sound: a leading u is read "you" in the names met here (uint8, UUID, UserDict), numpy's
    # ndarray "en-dee-array".
    vowel = name[:1].lower() in "aeio" or name.startswith("nd")
    return f"{'an' if vowel else 'a'} {name}"


def json_type(value: Any) -> str:
    """"an array", "an object", "null", "a string", "a number" or "a boolean": the JSON type of a value parsed from
    JSON; a value JSON cannot hold is named in Python's words."""
    if value is None:
        return "null"
    return next((name for kind, name in _JSON_TYPES if isinstance(value, kind)), python_type(value))
