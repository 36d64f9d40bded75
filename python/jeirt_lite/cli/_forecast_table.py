"""The table `score --forecast-by COLUMN` prints: one row per LLM, best on the whole bank first; one column for the
whole bank (`all`), then one per group in its text's order; under the header, each column's question count.

An LLM is a row because a router's LLMs are a fixed list that the eye runs down, as in `--forecast`'s list, while
a group is what the reader compares across. Columns are right-aligned and two spaces apart (a group's name may hold
one space: `computer science`), so a program reads the table by splitting each line on runs of two spaces or more,
or by the columns' fixed widths."""

from __future__ import annotations

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
    headers = ["llm", ALL, *forecast.groups]
    counts = ["n", str(forecast.rows), *map(str, forecast.counts.values())]
    rows = [[name, *(f"{column[name]:.{DECIMALS}f}" for column in (forecast.overall, *forecast.groups.values()))]
            for name in llms]
    table = [headers, counts, *rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(headers))]
    for line in table:
        cells = [line[0].ljust(widths[0]), *(cell.rjust(width) for cell, width in zip(line[1:], widths[1:]))]
        out.write("  " + "  ".join(cells) + "\n")
    for name, benchmarks in (unanswered or {}).items():
        out.write(f"  note: {name} has no training answers on {', '.join(benchmarks)}: extrapolated on its "
                  "questions\n")
