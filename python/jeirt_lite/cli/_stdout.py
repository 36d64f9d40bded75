"""Standard output when its reader goes away (`jeirt-lite route ... | head -1`, a `tee` that dies)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import Any, Callable, TextIO


def silence_stdout() -> None:
    """Point file descriptor 1 at the null device, so that the flush at exit finds no closed pipe."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


class OutlivesItsReader:
    """The stdout of a command whose result is a file or folder (`train`, `score`, `add-llm`, `report`): once the
    reader of stdout is gone, what the command prints is dropped and the command goes on to write its result,
    rather than stopping half-way at its next line (and, a closed pipe being no error, with status 0)."""

    def __init__(self, stream: TextIO, on_gone: Callable[[], None] = silence_stdout):
        self._stream = stream
        self._on_gone = on_gone
        self.reader_gone = False

    def write(self, text: str) -> int:
        if not self.reader_gone:
            try:
                self._stream.write(text)
            except BrokenPipeError:
                self._gone()
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if not self.reader_gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._gone()

    def _gone(self) -> None:
        self.reader_gone = True
        self._on_gone()

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding, ...: the stream's own
        return getattr(self._stream, name)
