"""The table of `score --forecast-by` (cli/_forecast_table.py) with group names a bank may hold: each LLM on one
line, the columns aligned on a terminal and split apart on runs of two spaces, whatever the names."""

from __future__ import annotations

import io
import re
import unicodedata
from typing import Optional

from jeirt_lite._group_forecast import GroupForecast
from jeirt_lite.cli._forecast_table import print_group_forecast

LLMS = ("llm-a", "llm-b")


def printed(
    groups: list[str], llms: tuple[str, ...] = LLMS, unanswered: Optional[dict[str, list[str]]] = None
) -> list[str]:
    forecast = GroupForecast(
        column="subject",
        overall={name: 0.5 for name in llms},
        groups={group: {name: 0.25 for name in llms} for group in sorted(groups)},
        counts={group: 1 for group in sorted(groups)},
    )
    out = io.StringIO()
    print_group_forecast(out, forecast, unanswered)
    return out.getvalue().splitlines()


def terminal_cells(line: str) -> int:
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)


def test_a_name_holding_a_newline_or_a_tab_keeps_each_llm_on_a_line_of_its_own() -> None:
    lines = printed(["a\nb", "t\tab", "math"])
    assert len(lines) == 1 + 2 + len(LLMS)  # the title, the header, the counts, one line per LLM
    assert not any("\t" in line for line in lines)
    assert lines[1].split()[2:] == [r"'a\nb'", "math", r"'t\tab'"]


def test_names_of_wide_and_combining_characters_keep_the_columns_aligned_on_a_terminal() -> None:
    lines = printed(["数学", "e\u0301tude", "math"])[1:]
    assert len({terminal_cells(line) for line in lines}) == 1  # right-aligned: every line ends where the others do


def test_spaces_that_would_split_a_column_or_hide_in_its_padding_are_shown_escaped() -> None:
    lines = printed(["computer  science", " math", "math", "computer science", "math "])
    header = re.split(r" {2,}", lines[1].strip())
    assert header == ["llm", "all", r"'\x20math'", r"'computer\x20\x20science'",
                      "computer science", "math", r"'math\x20'"]
    assert all(len(re.split(r" {2,}", line.strip())) == len(header) for line in lines[1:])


def test_a_group_named_all_is_told_apart_from_the_whole_bank_s_column() -> None:
    read = "".join(["a", "ll"])  # as a bank's cell gives it: equal to "all", not the same object
    header = printed([read, "Law", "algebra", "math"])[1].split()
    assert header == ["llm", "all", "Law", "algebra", "'all'", "math"]  # names either side of it as they are


def test_names_are_left_aligned_and_values_right_aligned_so_each_column_has_a_fixed_width() -> None:
    lines = printed(["law", "computer science"], llms=("a", "a-much-longer-llm-name"))[1:]
    cells = [[match.span() for match in re.finditer(r"\S+(?: \S+)*", line)] for line in lines]
    assert len({len(line) for line in lines}) == 1
    assert {spans[0][0] for spans in cells} == {2}  # every name (and `llm`, `n`) starts the line
    for column in range(1, len(cells[0])):
        assert len({spans[column][1] for spans in cells}) == 1  # each column's cells end where the others do


def test_values_have_4_decimals_as_the_guide_says() -> None:
    assert printed(["law"])[3].split()[1:] == ["0.5000", "0.2500"]


def test_an_llm_without_training_answers_on_some_benchmarks_has_a_note_under_the_table() -> None:
    lines = printed(["law"], unanswered={"llm-b": ["mmlu", "gpqa"]})
    assert len(lines) == 1 + 2 + len(LLMS) + 1
    assert lines[-1] == "  note: llm-b has no training answers on mmlu, gpqa: extrapolated on its questions"
