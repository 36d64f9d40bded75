"""How a message names many things (`_text.first_and_more`): every one up to the number shown, then how many
more; and how text a user gave is made printable (`printable`) or recordable (`bytes_escaped`)."""

from __future__ import annotations

import json

import pytest
from jeirt_lite._text import bytes_escaped, first_and_more, printable


@pytest.mark.parametrize(
    ("items", "expected"),
    [("", ""), ("ab", "'a'; 'b'"), ("abc", "'a'; 'b'; 'c'"), ("abcde", "'a'; 'b'; 'c' and 2 more (see all)")],
)
def test_more_is_said_only_past_the_number_shown(items: str, expected: str) -> None:
    assert first_and_more(list(items), 3, show=repr, separator="; ", after_more=" (see all)") == expected


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
