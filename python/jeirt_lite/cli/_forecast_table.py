"""The table `score --forecast-by COLUMN` prints: one row per LLM, best on the whole bank first; one column for the
whole bank (`all`), then one per group in its text's order; under the header, each column's question count.

An LLM is a row because a router's LLMs are a fixed list that the eye runs down, as in `--forecast`'s list, while
a group is what the reader compares across. Columns are right-aligned and two spaces apart (a group's name may hold
one space: `computer science`), so a program reads the table by splitting each line on runs of two spaces or more,
or by the columns' fixed widths. Widths are counted in terminal cells (a CJK character takes two), and a group name
that would break a line or a column (a control character, spaces at its ends or in a run) is shown as a Python
string literal, its spaces escaped."""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from typing import Optional, TextIO

from .._group_forecast import GroupForecast
from .._text import counted

ALL = "all"  # the whole bank's column
DECIMALS = 4


def print_group_forecast(out: TextIO, forecast: GroupForecast,
                         unanswered: Optional[Mapping[str, Sequence[str]]] = None) -> None:
    """The table, then a note per LLM in `unanswered` (its value is an extrapolation on those benchmarks)."""
    out.write(f"expected accuracy by {forecast.column} on {counted(forecast.rows, 'question')} (mean P(correct)):\n")
    llms = sorted(forecast.overall, key=lambda name: -forecast.overall[name])  # ties: the router's order
    headers = ["llm", ALL, *map(shown_group, forecast.groups)]
    counts = ["n", str(forecast.rows), *map(str, forecast.counts.values())]
    rows = [[name, *(f"{column[name]:.{DECIMALS}f}" for column in (forecast.overall, *forecast.groups.values()))]
            for name in llms]
    table = [headers, counts, *rows]
    widths = [max(cells_wide(line[i]) for line in table) for i in range(len(headers))]
    for line in table:
        cells = [_padded(line[0], widths[0], left=True), *(_padded(cell, width, left=False)
                                                           for cell, width in zip(line[1:], widths[1:]))]
        out.write("  " + "  ".join(cells) + "\n")
    for name, benchmarks in (unanswered or {}).items():
        out.write(f"  note: {name} has no training answers on {', '.join(benchmarks)}: extrapolated on its "
                  "questions\n")


def shown_group(name: str) -> str:
    """`name` as the table's header shows it: as is when it reads plainly in one cell, else as a Python literal
    with its spaces escaped (`'a\\nb'`, `'\\x20math'`), so that a newline or a tab does not break the table, a run
    of spaces does not split the column, and neither ` math` nor a group named `all` is taken for another column."""
    if name.isprintable() and name == name.strip() and "  " not in name and name != ALL:
        return name
    return repr(name).replace(" ", "\\x20")


def cells_wide(text: str) -> int:
    """The terminal cells `text` takes: two for a wide (East Asian) character, none for a combining mark, one for
    the others."""
    return sum(0 if unicodedata.combining(char) else 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
               for char in text)


def _padded(text: str, width: int, left: bool) -> str:
    pad = " " * (width - cells_wide(text))
    return text + pad if left else pad + text
