"""How a message names many things (`_text.first_and_more`): every one up to the number shown, then how many more."""

from __future__ import annotations

import pytest
from jeirt_lite._text import first_and_more


@pytest.mark.parametrize(
    ("items", "expected"),
    [("", ""), ("ab", "'a'; 'b'"), ("abc", "'a'; 'b'; 'c'"), ("abcde", "'a'; 'b'; 'c' and 2 more (see all)")],
)
def test_more_is_said_only_past_the_number_shown(items: str, expected: str) -> None:
    assert first_and_more(list(items), 3, show=repr, separator="; ", after_more=" (see all)") == expected
