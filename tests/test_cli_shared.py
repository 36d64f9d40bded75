"""What the commands print in common (`jeirt_lite.cli._shared`): shortened texts, the forecast best first, the
summary after `score`, whether stderr is a terminal, and the one router of a command given two ways."""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

import pytest
from jeirt_lite import JeirtError
from jeirt_lite.batch import ScoreSummary
from jeirt_lite.cli._shared import (
    Console,
    chosen_router,
    counted,
    print_forecast,
    print_score_summary,
    short,
    stderr_is_terminal,
    unanswered_benchmarks,
)


def test_short_folds_whitespace_and_cuts_with_an_ellipsis_at_the_width() -> None:
    assert short("  What is\n\t2 +  2? ") == "What is 2 + 2?"
    assert short("x" * 100) == "x" * 100
    assert short("x" * 101) == "x" * 99 + "…"
    assert short("abcdefghijkl", 10) == "abcdefghi…" and len(short("abcdefghijkl", 10)) == 10


def test_counts_are_plural_but_for_one() -> None:
    assert [counted(n, "row") for n in (0, 1, 2, 12_288)] == ["0 rows", "1 row", "2 rows", "12,288 rows"]


def test_the_forecast_is_printed_best_first_under_its_count() -> None:
    out = io.StringIO()
    print_forecast(out, 1, {"small": 0.25, "large-model": 0.875, "mid": 0.5})
    assert out.getvalue() == (
        "expected accuracy on 1 question (mean P(correct)):\n"
        "  large-model  0.875000\n"
        "  mid          0.500000\n"
        "  small        0.250000\n"
    )
    out = io.StringIO()
    print_forecast(out, 12_288, {"a": 0.5})
    assert out.getvalue().startswith("expected accuracy on 12,288 questions")


@pytest.mark.parametrize(
    ("seconds", "rate"), [(2.5, "(5 rows/s)"), (0.5, "(24 rows/s)"), (0.0, "(inf rows/s)")]
)
def test_the_score_summary_gives_the_rate_and_the_rows_skipped(seconds: float, rate: str) -> None:
    console = Console(io.StringIO(), io.StringIO())
    print_score_summary(console, ScoreSummary(12, 2, seconds, Path("scores.csv")), quiet=False, where=" on Ray")
    assert console.err.getvalue() == (
        f"scored 12 questions to scores.csv on Ray in {seconds:.2f} s {rate}\nskipped 2 bad rows (--skip-bad)\n"
    )
    assert console.out.getvalue() == ""
    quiet = Console(io.StringIO(), io.StringIO())
    print_score_summary(quiet, ScoreSummary(1, 1, seconds, None, {"a": 0.5}), quiet=True)
    assert quiet.err.getvalue() == "skipped 1 bad row (--skip-bad)\n"
    assert quiet.out.getvalue().startswith("expected accuracy on 1 question")


def test_stderr_that_is_replaced_or_closed_is_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    closed = io.StringIO()
    closed.close()
    monkeypatch.setattr(sys, "stderr", closed)
    assert stderr_is_terminal() is False
    monkeypatch.setattr(sys, "stderr", object())
    assert stderr_is_terminal() is False

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stderr", Terminal())
    assert stderr_is_terminal() is True


def test_one_router_given_both_ways_is_that_router_and_two_are_refused_in_any_order() -> None:
    def args(positional: str | None, option: str | None) -> argparse.Namespace:
        return argparse.Namespace(router_positional=None if positional is None else Path(positional),
                                  router=None if option is None else Path(option))

    assert chosen_router(args("r", "r")) == Path("r")
    assert chosen_router(args("r", None)) == chosen_router(args(None, "r")) == Path("r")
    assert chosen_router(args(None, None)) is None
    for first, second in (("a/r", "b/r"), ("b/r", "a/r")):
        with pytest.raises(JeirtError, match="two routers given"):
            chosen_router(args(first, second))


def test_the_forecast_marks_llms_recorded_without_answers_on_a_benchmark() -> None:
    out = io.StringIO()
    print_forecast(out, 2, {"a": 0.5, "b": 0.75}, {"b": ["gsm", "math"]})
    assert out.getvalue().splitlines()[1:] == [
        "  b  0.750000  (no training answers on gsm, math: extrapolated on its questions)", "  a  0.500000"]


def test_a_record_of_unanswered_benchmarks_is_read_only_where_it_makes_sense() -> None:
    llms = ["a", "b", "c"]
    record = {"unanswered_benchmarks": {"a": ["gsm"], "b": "gsm", "c": [], "gone": ["x"]}}
    assert unanswered_benchmarks(record, llms) == {"a": ["gsm"]}  # a string, an empty list, an unknown LLM: passed
    assert unanswered_benchmarks(None, llms) == {} and unanswered_benchmarks({"unanswered_benchmarks": 3}, llms) == {}
