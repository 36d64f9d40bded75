"""The one validation layer for command-line options: typed argparse converters with their bounds, and the parser
class every command (and `jeirt-lite train`'s training parser) is built with.

A value outside its bound is refused while the command line is parsed, before any file is opened or any thread
started, with one line in the same words whichever command it is: ``jeirt-lite: error: argument --threads: must be
at most 256, got 100,000 (`jeirt-lite train --help` lists the options)``, exit 2, no traceback. The bounds are
`jeirt_lite._limits`' (the library checks the same ones when called from Python).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Callable, NoReturn, TypeVar

from .._limits import MAX_CHUNK_ROWS, MAX_DIM, MAX_SEED, MAX_THREADS
from ._prog import PROG
from ._stdout import ClosedStdout, OutlivesItsReader, silence_stdout, write_error

# Epochs of training: far above any schedule that stops early (the default is 200), low enough that a typo does
# not keep a machine busy for a year.
MAX_EPOCHS = 100_000

T = TypeVar("T", int, float)


class OptionParser(argparse.ArgumentParser):
    """argparse with one-line errors worded as every other error of the command line (exit 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{PROG}: error: {message} (`{self.prog} --help` lists the options)\n")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            sys.stderr.write(message)
        raise SystemExit(status)

    def _print_message(self, message: str, file: Any = None) -> None:  # argparse types it SupportsWrite[str]
        """--help and --version: argparse drops a failed write of them and exits 0, as if the text had been read.
        A stdout that cannot take it (full, `> /dev/full`) fails in one line with exit 1, as a command's output
        does (cli/_stdout.py); a reader gone (`--help | head -1`) ends it quietly."""
        if not message:
            return
        if isinstance(file, OutlivesItsReader):  # `train` parses in its command, whose printing may be dropped
            file = file.stream
        # argparse's choice: a stdout started closed (None; ClosedStdout under `train`) gives way to stderr
        stream = file if file is not None and not isinstance(file, ClosedStdout) else sys.stderr
        try:
            stream.write(message)
            stream.flush()
        except BrokenPipeError:
            silence_stdout()  # the flush at exit finds no closed pipe
        except OSError as error:
            sys.stderr.write(f"{PROG}: error: {write_error(error)}\n")
            raise SystemExit(1) from None


def parse_or_exit_code(parser: argparse.ArgumentParser, words: Sequence[str]) -> argparse.Namespace | int:
    """The parsed words, or the exit code where the parser stopped after saying why (--help, --version: 0; a
    refused option: 2), so that `main` returns it as it returns every other code."""
    try:
        return parser.parse_args(list(words))
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) else 2


def _whole(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:  # also a number of more than 4,300 digits
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a whole number") from None


def int_in(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: a whole number in low..high."""

    def parse(text: str) -> int:
        value = _whole(text)
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low:,}, got {value:,}")
        if value > high:
            raise argparse.ArgumentTypeError(f"must be at most {high:,}, got {value:,}")
        return value

    return parse


def number_in(low: float, high: float, *, low_open: bool = False, high_open: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite number in [low, high] (an open end with `low_open` / `high_open`)."""
    # An infinite end is open ("[0, inf)"): "[0, inf]" would promise inf, which no finite number reaches.
    interval = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open or math.isinf(high) else ']'}"

    def parse(text: str) -> float:
        try:
            value = float(text.strip())
        except ValueError:  # not a number: refused in the same words as one outside the interval
            value = math.nan
        inside = low <= value <= high and not (low_open and value == low) and not (high_open and value == high)
        if not (inside and math.isfinite(value)):
            raise argparse.ArgumentTypeError(f"must be a finite number in {interval}, got {text[:40]}")
        return value

    return parse


def list_of(item: Callable[[str], T], *, allow_empty: bool = False) -> Callable[[str], list[T]]:
    """An argparse type: a comma-separated list, each value checked by `item` (empty only with `allow_empty`)."""

    def parse(text: str) -> list[T]:
        values: list[T] = []
        for part in (part for part in text.split(",") if part.strip()):
            try:
                values.append(item(part))
            except argparse.ArgumentTypeError as err:
                raise argparse.ArgumentTypeError(f"{part.strip()[:40]!r}: {err}") from None
        if not values and not allow_empty:
            raise argparse.ArgumentTypeError("needs at least one value")
        return values

    return parse


def output_path(text: str) -> Path:
    """An argparse type: an output's path, never an empty one (Path("") is the current folder, which a write
    would then replace or be refused as)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("is empty; give a path")
    return Path(text)


threads = int_in(1, MAX_THREADS)
seed = int_in(0, MAX_SEED)
# A training encoder's truncation: the encoders `train` offers hold 512 positions (a longer text would index past
# them), and under 8 tokens a question is hardly read at all.
tokens = int_in(8, 512)
positive_int = int_in(1, MAX_CHUNK_ROWS)  # chunk sizes, batch sizes, k, budgets
at_most = int_in(0, sys.maxsize)  # a cap on how many of a set are taken, 0 meaning all of them
dimension = int_in(1, MAX_DIM)
epochs = int_in(1, MAX_EPOCHS)
count = int_in(0, MAX_EPOCHS)  # patience, learning-rate drops: 0 allowed
fraction = number_in(0.0, 1.0, high_open=True)  # a share of the data set aside, a dropout: [0, 1)
open_fraction = number_in(0.0, 1.0, low_open=True, high_open=True)  # a part that must hold some data: (0, 1)
non_negative = number_in(0.0, math.inf)
positive = number_in(0.0, math.inf, low_open=True)  # learning rates, scales: > 0
