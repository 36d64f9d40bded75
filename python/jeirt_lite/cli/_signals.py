"""SIGINT and SIGTERM while a command runs: each stops it as an exception (KeyboardInterrupt, `Terminated`), so that
its clean-up runs (a partial output deleted, one closing line), and only the first does: one that follows it, such as
the second signal `timeout` sends to its whole process group, or a second Ctrl-C, is ignored rather than breaking
that clean-up with a traceback."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, Optional

from ._shared import Terminated


@contextmanager
def stop_signals() -> Iterator[None]:
    """While the block runs, the first SIGINT raises KeyboardInterrupt and the first SIGTERM `Terminated`; later
    ones are ignored. A SIGINT the process started with ignored (nohup, a shell's background job) stays ignored.
    The handlers before are put back when no signal came; after one the process is on its way out, and a signal
    arriving now must not end it by the signal, so they stay ignored. Outside the main thread nothing changes."""
    fired: list[int] = []

    def stop(signum: int, frame: Optional[FrameType]) -> None:
        for number in previous:
            signal.signal(number, signal.SIG_IGN)
        fired.append(signum)
        raise KeyboardInterrupt if signum == signal.SIGINT else Terminated()

    previous: dict[int, Any] = {}
    try:
        previous[signal.SIGTERM] = signal.signal(signal.SIGTERM, stop)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            previous[signal.SIGINT] = signal.signal(signal.SIGINT, stop)
    except ValueError:  # not the main thread (e.g. a test runner's worker): leave the signals alone
        pass
    try:
        yield
    finally:
        if not fired:
            for number, handler in previous.items():
                signal.signal(number, handler)
