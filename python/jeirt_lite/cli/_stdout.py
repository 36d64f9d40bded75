"""Standard output that cannot take what a command prints: its reader gone (`jeirt-lite route ... | head -1`, a
`tee` that dies), closed (`>&-`) or full (`> /dev/full`).

A command whose job is to print (`route`, `info`, `score` without -o) fails on it as coreutils' commands do: one
line, `stdout: write error: Bad file descriptor`, exit 1; a broken pipe alone ends it quietly with status 0 (`_run`).
A command whose result is a file or folder writes it all the same: what it prints is dropped (`OutlivesItsReader`).
A character the stream's encoding lacks is printed escaped (`write_printable`), never a traceback.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Callable, NoReturn, TextIO

from .._errors import JeirtError
from .._text import printable
from ._prog import PROG


def silence_stdout() -> None:
    """Point file descriptor 1 at the null device, so that the flush at exit finds no closed pipe or full disk
    (a stdout without a descriptor, or started closed, has nothing to flush there)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def write_error(error: OSError) -> JeirtError:
    """The one-line error of a stdout that cannot be written; what it still buffers goes nowhere at exit."""
    silence_stdout()
    return JeirtError(f"stdout: write error: {error.strerror or error}")


def write_printable(stream: TextIO, text: str) -> int:
    """Writes `text` to `stream`; a character its encoding lacks (a question's emoji on an ASCII locale, a
    path's byte that is not UTF-8 on a strict stdout: PYTHONIOENCODING=utf-8:strict) is written as its \\u
    escape (_text.printable) rather than failing the command, which printed it only to show it. (A text stream
    encodes a write whole before any of it goes out, so the failed write wrote nothing.)"""
    try:
        return stream.write(text)
    except UnicodeEncodeError:
        return stream.write(printable(text, getattr(stream, "encoding", None) or "utf-8"))


class _Lines:
    """`writelines` as one `write` per line, for the stand-ins of stdout below."""

    def write(self, text: str) -> int:
        raise NotImplementedError

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)


class ClosedStdout(_Lines):
    """The stdout of a process started with descriptor 1 closed (`>&-`), where Python has none: writing to it fails
    as writing to a closed descriptor does, so that a command that prints says so rather than crashing on None."""

    def write(self, text: str) -> NoReturn:
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))

    def flush(self) -> None:  # nothing was written, so nothing is lost
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> NoReturn:
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))


@contextmanager
def _one_line_errors() -> Iterator[None]:
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as error:
        raise write_error(error) from None


class FailsInOneLine(_Lines):
    """The stdout of a command whose job is to print: a write that fails (closed, full) becomes the command's one
    error line; a broken pipe stays a BrokenPipeError, the quiet end of `| head`."""

    def __init__(self, stream: TextIO):
        self._stream = stream

    def write(self, text: str) -> int:
        with _one_line_errors():
            return write_printable(self._stream, text)

    def flush(self) -> None:
        with _one_line_errors():
            self._stream.flush()

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding, ...: the stream's own
        return getattr(self._stream, name)


def drop_stdout(error: OSError) -> None:
    """What a command whose result is a file does when stdout fails: silence it, and for anything but a closed pipe
    (whose reader left on purpose) say on stderr that its printed part is lost, not its result."""
    silence_stdout()
    if not isinstance(error, BrokenPipeError):
        sys.stderr.write(f"{PROG}: note: stdout: write error: {error.strerror or error}; what this command "
                         "prints is dropped, its output is written\n")


class OutlivesItsReader(_Lines):
    """The stdout of a command whose result is a file or folder (`train`, `score -o`, `add-llm`, `report`): once
    stdout cannot be written (its reader gone, closed, full), what the command prints is dropped and the command goes
    on to write its result, rather than stopping half-way at its next line."""

    def __init__(self, stream: TextIO, on_gone: Callable[[OSError], None] = drop_stdout):
        self.stream = stream  # what --help and --version write to (_options.OptionParser): they are not dropped
        self._on_gone = on_gone
        self.reader_gone = False

    def write(self, text: str) -> int:
        if not self.reader_gone:
            try:
                write_printable(self.stream, text)
            except OSError as error:
                self._gone(error)
        return len(text)

    def flush(self) -> None:
        if not self.reader_gone:
            try:
                self.stream.flush()
            except OSError as error:
                self._gone(error)

    def _gone(self, error: OSError) -> None:
        self.reader_gone = True
        self._on_gone(error)

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding, ...: the stream's own
        return getattr(self.stream, name)
