"""How a message names many things: the first few, then how many more, so that it stays one readable line; and a
count with its noun."""

from __future__ import annotations

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
