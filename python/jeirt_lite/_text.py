"""How a message names many things: the first few, then how many more, so that it stays one readable line; a
count with its noun; and text a user gave, made writable wherever it is shown or recorded."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Callable, TypeVar

T = TypeVar("T")


def first_and_more(
    items: Sequence[T], shown: int, *, show: Callable[[T], str] = str, separator: str = ", ", after_more: str = ""
) -> str:
    """The first `shown` items, each as `show` writes it, then " and N more" where there are more (followed by
    `after_more`, where the caller says where to find them all): "a, b, c and 4 more"."""
    more = f" and {len(items) - shown} more{after_more}" if len(items) > shown else ""
    return separator.join(show(item) for item in items[:shown]) + more


def counted(n: int, noun: str) -> str:
    """`n` and `noun`, plural unless n is 1: "1 question", "12,288 questions"."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def printable(text: str, encoding: str) -> str:
    """`text` as a stream in `encoding` can take it: each character the encoding lacks (an emoji on an ASCII
    locale's stdout; a lone surrogate, what a byte that is not UTF-8 becomes once decoded, on a strict UTF-8
    one) as JSON's escape of it, `\\u00e9` (two for a character beyond U+FFFF), so that a JSON line stays JSON
    and reads back as the same text."""
    try:
        text.encode(encoding)
        return text
    except UnicodeEncodeError:
        return "".join(char if _encodes(char, encoding) else _json_escape(char) for char in text)


def _encodes(char: str, encoding: str) -> bool:
    try:
        char.encode(encoding)
        return True
    except UnicodeEncodeError:
        return False


def _json_escape(char: str) -> str:
    code = ord(char)
    if code > 0xFFFF:  # a UTF-16 surrogate pair, as JSON writes one
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def bytes_escaped(text: str) -> str:
    """`text` from the command line or a file name with each byte that is not UTF-8 (kept by Python as a lone
    surrogate, which strict JSON readers and a strict stdout refuse) written `\\xff`, any other lone surrogate
    `\\ud800`: for a record that names what was given to a reader (router.json), never one that opens it."""
    return _SURROGATE.sub(_escaped_surrogate, text)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _escaped_surrogate(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"
