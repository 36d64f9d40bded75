"""How a message names many things (`_text.first_and_more`): every one up to the number shown, then how many
more; a count with its noun (`counted`); and how text a user gave is made printable (`printable`) or
recordable (`bytes_escaped`)."""

from __future__ import annotations

import json

import pytest
from jeirt_lite._text import bytes_escaped, counted, first_and_more, printable


@pytest.mark.parametrize(
    ("items", "expected"),
    [("", ""), ("ab", "'a'; 'b'"), ("abc", "'a'; 'b'; 'c'"), ("abcde", "'a'; 'b'; 'c' and 2 more (see all)"),
     ("abcdefg", "'a'; 'b'; 'c' and 4 more (see all)")],
)
def test_more_is_said_only_past_the_number_shown(items: str, expected: str) -> None:
    assert first_and_more(list(items), 3, show=repr, separator="; ", after_more=" (see all)") == expected


@pytest.mark.parametrize(("n", "expected"), [(0, "0 questions"), (1, "1 question"), (2, "2 questions"),
                                             (12288, "12,288 questions")])
def test_counted_says_the_noun_in_the_singular_for_one_only(n: int, expected: str) -> None:
    assert counted(n, "question") == expected


@pytest.mark.parametrize(
    ("encoding", "shown"),
    [("ascii", "caf\\u00e9 \\ud83d\\ude00 \\udcff"), ("latin-1", "caf\u00e9 \\ud83d\\ude00 \\udcff"),
     ("utf-8", "caf\u00e9 \U0001f600 \\udcff")],
)
def test_printable_escapes_only_what_the_encoding_lacks_as_json_reads_it_back(
    encoding: str, shown: str
) -> None:
    text = "caf\u00e9 \U0001f600 \udcff"
    assert printable(text, encoding) == shown
    assert json.loads(f'"{shown}"') == text


def test_bytes_escaped_writes_a_byte_that_was_not_utf8_as_that_byte() -> None:
    assert bytes_escaped("caf\udcff \u00e9 \ud800") == "caf\\xff \u00e9 \\ud800"
    assert bytes_escaped("plain") == "plain"


@pytest.mark.parametrize(
    ("char", "escaped"),
    [("\uffff", "\\uffff"), ("\U00010000", "\\ud800\\udc00"), ("\U0010ffff", "\\udbff\\udfff")],
)
def test_printable_escapes_the_last_character_of_the_basic_plane_as_one_and_those_past_it_as_a_pair(
    char: str, escaped: str
) -> None:
    assert printable(char, "ascii") == escaped
    assert json.loads(f'"{escaped}"') == char


@pytest.mark.parametrize(
    ("surrogate", "escaped"),
    [("\udc7f", "\\udc7f"), ("\udc80", "\\x80"), ("\udcff", "\\xff"), ("\udd00", "\\udd00"),
     ("\udfff", "\\udfff")],
)
def test_bytes_escaped_writes_only_the_surrogates_a_byte_above_127_decodes_to_as_bytes(
    surrogate: str, escaped: str
) -> None:
    # Python's surrogateescape maps a byte 0x80-0xff that is not UTF-8 to U+DC80-U+DCFF (below 0x80 a byte is
    # ASCII); another lone surrogate is no byte.
    assert bytes_escaped(f"a{surrogate}b") == f"a{escaped}b"
    assert bytes_escaped(b"a\x80b".decode("utf-8", "surrogateescape")) == "a\\x80b"
