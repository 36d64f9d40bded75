"""Standard error for what a command says along the way (progress, notes, its error line), and the standard
descriptors a command may be started without (`>&-`, `2>&-`).

Such messages are a courtesy: a stderr that is closed, full or gone loses them, never the command's result nor its
exit status (an error still exits non-zero, its line lost).
"""

from __future__ import annotations

import io
import os
from typing import Any, Optional, TextIO

from ._stdout import write_printable


def reserve_closed_descriptors() -> None:
    """Open the null device on descriptors 1 and 2 where they are closed, so that no file the command opens gets
    one of those numbers: what a native library (ONNX Runtime, Ray) writes to stdout or stderr would land in it."""
    for fd in (1, 2):
        try:
            os.fstat(fd)
        except OSError:
            devnull = os.open(os.devnull, os.O_WRONLY)  # the lowest free number: fd itself, unless 0 is closed too
            if devnull != fd:
                os.dup2(devnull, fd)
                os.close(devnull)


class LossyStderr:
    """stderr (None when the process started with it closed) whose failed writes are dropped, not raised."""

    def __init__(self, stream: Optional[TextIO]):
        self._stream = stream

    def write(self, text: str) -> int:
        if self._stream is not None:
            try:
                write_printable(self._stream, text)  # an unencodable character escaped, not the message lost
            except (OSError, ValueError):  # closed, full or gone: the message is lost, the command goes on
                pass
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if self._stream is not None:
            try:
                self._stream.flush()
            except (OSError, ValueError):
                pass

    def isatty(self) -> bool:
        try:
            return self._stream is not None and self._stream.isatty()
        except (OSError, ValueError):
            return False

    def fileno(self) -> int:
        if self._stream is None:  # as a stream without a descriptor says it, which callers expect (ray.init does)
            raise io.UnsupportedOperation("stderr was closed when the command started")
        return self._stream.fileno()

    def __getattr__(self, name: str) -> Any:  # encoding, ...: the stream's own
        return getattr(self._stream, name)
