"""Input that may wait (a pipe, a terminal, a socket), read so that a stop signal always stops the wait.

A blocking read() returns only when data comes: Python runs a signal's handler (the KeyboardInterrupt of Ctrl-C, the
`Terminated` of SIGTERM) in the main thread between two bytecodes, and the read gives it that chance only if the
signal interrupts the read itself. A signal that lands on another thread (the Rust pool's, ONNX Runtime's), or
just before the read starts, leaves the read waiting until the writer writes or closes: a run that ignores Ctrl-C.
So such input is read only once it is ready, waiting in short `select` calls between which the handlers run.
Regular files never wait and are read as they are.
"""

from __future__ import annotations

import io
import os
import select
import stat
from typing import Any

# How long one wait for input may last before the handlers of signals received meanwhile run.
_WAIT_SECONDS = 0.1


class _ReadyReader(io.RawIOBase):
    """A raw reader over a file descriptor that waits for input in short `select` calls."""

    def __init__(self, raw: io.FileIO):
        super().__init__()
        self.raw = raw

    def readable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.raw.fileno()

    def readinto(self, buffer: Any) -> int:
        while not select.select([self.raw], [], [], _WAIT_SECONDS)[0]:
            pass  # back in Python between waits: a signal's handler runs here, and its exception ends the read
        return self.raw.readinto(buffer)

    def close(self) -> None:
        if not self.closed:
            self.raw.close()
        super().close()


def may_wait(fd: int) -> bool:
    """Whether reading `fd` can wait for a writer: a pipe, a terminal or a socket, where `select` can tell
    readiness (not on Windows, whose `select` takes sockets only)."""
    if os.name == "nt":
        return False
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISSOCK(mode)


def stoppable(raw: io.FileIO) -> io.RawIOBase:
    """`raw` (an unbuffered binary file), or for input that may wait, a reader of it that a stop signal stops."""
    return _ReadyReader(raw) if may_wait(raw.fileno()) else raw


def open_stoppable(path: Any) -> io.RawIOBase:
    """The file at `path`, unbuffered and binary, read so that a stop signal stops a wait for its input."""
    return stoppable(io.FileIO(path, "rb"))


def stoppable_buffer(buffer: Any) -> Any:
    """A buffered binary stream nothing has been read from yet (`sys.stdin.buffer`), or, where its input may wait,
    a buffered reader of its file descriptor that a stop signal stops; a stream without a descriptor is kept."""
    try:
        fd = buffer.fileno()
    except (OSError, ValueError):  # a stream in memory never waits
        return buffer
    return io.BufferedReader(_ReadyReader(io.FileIO(fd, "rb", closefd=False))) if may_wait(fd) else buffer
