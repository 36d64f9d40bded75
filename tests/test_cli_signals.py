"""The command line's stop signals: the first SIGINT or SIGTERM stops a command as an exception, any later one is
ignored so that the clean-up runs to its end (a second signal used to break it with a traceback)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import pytest
from jeirt_lite.cli._shared import Terminated
from jeirt_lite.cli._signals import stop_signals


@pytest.fixture
def handlers_kept() -> Iterator[None]:
    """The test process's own handlers, put back whatever the block left."""
    before = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, handler in before.items():
            signal.signal(number, handler)


@pytest.mark.parametrize(("first", "raised"), [(signal.SIGTERM, Terminated), (signal.SIGINT, KeyboardInterrupt)])
def test_the_first_stop_signal_raises_and_every_later_one_is_ignored(
    handlers_kept: None, first: int, raised: type[BaseException]
) -> None:
    signal.signal(signal.SIGINT, signal.default_int_handler)
    with pytest.raises(raised):
        with stop_signals():
            os.kill(os.getpid(), first)
            time.sleep(5)  # the handler's exception ends the sleep at once
            pytest.fail("the signal did not stop the block")
    for later in (signal.SIGINT, signal.SIGTERM, first):
        os.kill(os.getpid(), later)  # the clean-up and the exit: nothing raised, the process not ended
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN and signal.getsignal(signal.SIGINT) == signal.SIG_IGN


def test_without_a_signal_the_handlers_are_put_back_and_an_ignored_sigint_stays_ignored(handlers_kept: None) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as nohup or a shell's background job starts a process
    term = signal.getsignal(signal.SIGTERM)
    with stop_signals():
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN and signal.getsignal(signal.SIGTERM) != term
        os.kill(os.getpid(), signal.SIGINT)  # ignored: nothing raised
    assert signal.getsignal(signal.SIGTERM) == term and signal.getsignal(signal.SIGINT) == signal.SIG_IGN
