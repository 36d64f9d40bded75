"""The progress line itself (`jeirt_lite._progress`): what it says at a given moment, how often it is redrawn, and
that a shorter line wipes a longer one, on a clock the test sets."""

from __future__ import annotations

import io

import pytest
from jeirt_lite import _progress
from jeirt_lite._progress import REDRAW_SECONDS, Progress, _clock


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(_progress.time, "perf_counter", fake)
    return fake


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(0, "0:00"), (59.9, "0:59"), (61, "1:01"), (3599, "59:59"), (3600, "1:00:00"), (3725, "1:02:05"),
     (90061, "25:01:01")],
)
def test_clock_shows_minutes_and_seconds_and_hours_when_there_are_any(seconds: float, shown: str) -> None:
    assert _clock(seconds) == shown


def test_a_known_total_gives_percent_rate_and_eta(clock: Clock) -> None:
    progress = Progress(100_000, enabled=False)
    progress.advance(12_288)
    clock.now += 10.0
    # 1,228.8 rows/s; 12.288% done, so the other 87.712% take 71.4 s.
    assert progress.line() == "12,288/100,000 rows   12%  1,229 rows/s  ETA 1:11"
    assert progress.line(clock.now + 10.0) == "12,288/100,000 rows   12%  614 rows/s  ETA 2:22"
    progress.advance(100_000 - 12_288)
    assert progress.line() == "100,000/100,000 rows  100%  10,000 rows/s"  # done: no ETA


def test_an_estimated_total_gives_a_share_capped_at_all_and_none_without_an_estimate(clock: Clock) -> None:
    estimate: list[float | None] = [200.0]
    progress = Progress(estimate_total=lambda: estimate[0], enabled=False, unit="questions")
    progress.advance(50)
    clock.now += 5.0
    assert progress.line() == "50 questions   25%  10 questions/s  ETA 0:15"
    estimate[0] = 40.0  # fewer than already done: 100%, no ETA
    assert progress.line() == "50 questions  100%  10 questions/s"
    estimate[0] = None
    assert progress.line() == "50 questions  10 questions/s"
    assert Progress(enabled=False).line() == "0 rows  0 rows/s"


def test_redrawn_at_most_every_redraw_seconds_and_a_shorter_line_wipes_a_longer_one(clock: Clock) -> None:
    assert REDRAW_SECONDS == 0.2  # the times below are chosen around it (0.4 - 0.2 == 0.2 exactly in floats)
    clock.now = 0.0
    stream = io.StringIO()
    progress = Progress(estimate_total=lambda: 10_000.0, stream=stream)
    draws = []
    for at, rows in [(0.125, 1_000), (0.2, 1_000), (0.3, 1_000), (0.4, 1_000), (1.0, 9_000)]:
        clock.now = at
        progress.advance(rows)
        draws.append(stream.getvalue().count("\r"))
    # Redrawn once REDRAW_SECONDS have passed since the last draw (or the start), not before.
    assert draws == [0, 1, 1, 2, 3]
    lines = stream.getvalue().split("\r")[1:]
    assert lines[:2] == ["2,000 rows   20%  10,000 rows/s  ETA 0:00", "4,000 rows   40%  10,000 rows/s  ETA 0:00"]
    done = "13,000 rows  100%  13,000 rows/s"
    assert lines[2] == done + " " * (len(lines[1]) - len(done))  # the longer line before it wiped
    clock.now = 2.0
    progress.estimate_total = None
    progress.close()
    final = "13,000 rows  6,500 rows/s"
    assert stream.getvalue().split("\r")[-1] == final + " " * (len(done) - len(final)) + "\n"


def test_a_disabled_line_writes_nothing(clock: Clock) -> None:
    stream = io.StringIO()
    progress = Progress(10, enabled=False, stream=stream)
    clock.now += 5.0
    progress.advance(10)
    progress.close()
    assert stream.getvalue() == ""


def test_nothing_done_yet_has_no_eta_and_a_longer_line_gets_no_padding(clock: Clock) -> None:
    progress = Progress(100, enabled=False)
    clock.now += 1.0
    assert progress.line() == "0/100 rows    0%  0 rows/s"  # no ETA from a share of 0
    stream = io.StringIO()
    progress = Progress(stream=stream)
    clock.now += 1.0
    progress.advance(5)
    clock.now += 1.0
    progress.advance(999_995)
    assert stream.getvalue() == "\r5 rows  5 rows/s\r1,000,000 rows  500,000 rows/s"
