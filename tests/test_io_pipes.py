"""Input that may wait (jeirt_lite._io.pipes): a stop signal ends a read that waits on a pipe, whichever thread
the signal lands on, where a plain blocking read would wait for the writer."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from child_env import cli_env
from jeirt_lite._io.pipes import may_wait, open_stoppable, stoppable

POSIX = pytest.mark.skipif(os.name == "nt" or not hasattr(signal, "pthread_sigmask"), reason="POSIX pipes, signals")

# The child reads a pipe nobody writes to. Its main thread blocks SIGINT, so the kernel gives the signal to the
# other thread: the read in the main thread is never interrupted, as when a signal lands on a pool's thread.
CHILD = """
import os, signal, sys, threading, time
from jeirt_lite._io.pipes import stoppable
signal.signal(signal.SIGINT, signal.default_int_handler)  # a test run in the background inherits SIGINT ignored
read_end, write_end = os.pipe()
threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
handle = os.fdopen(read_end, "rb", buffering=0)
print("waiting", flush=True)
try:
    (stoppable(handle) if sys.argv[1] == "stoppable" else handle).read(10)
except KeyboardInterrupt:
    print("stopped", flush=True)
"""


def _interrupt_a_waiting_read(how: str, timeout: float) -> str:
    child = subprocess.Popen([sys.executable, "-c", CHILD, how], stdout=subprocess.PIPE, text=True, env=cli_env())
    try:
        assert child.stdout is not None and child.stdout.readline() == "waiting\n"
        time.sleep(0.5)  # into the read: a signal before it would be handled before the read begins
        child.send_signal(signal.SIGINT)
        return child.communicate(timeout=timeout)[0]
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


@POSIX
def test_a_stop_signal_on_another_thread_ends_a_read_that_waits_on_a_pipe() -> None:
    assert _interrupt_a_waiting_read("stoppable", timeout=30) == "stopped\n"


@POSIX
def test_a_plain_read_would_wait_for_the_writer() -> None:
    # What the test above guards against: the same read, not made stoppable, is still waiting.
    with pytest.raises(subprocess.TimeoutExpired):
        _interrupt_a_waiting_read("plain", timeout=2)


@POSIX
def test_only_input_that_may_wait_is_wrapped_and_it_reads_as_the_file(tmp_path: Path) -> None:
    regular = tmp_path / "bank.csv"
    regular.write_bytes(b"text\nwhat is 7 * 8\n")
    with open_stoppable(regular) as handle:
        assert isinstance(handle, io.FileIO) and handle.read() == b"text\nwhat is 7 * 8\n"
    read_end, write_end = os.pipe()
    assert may_wait(read_end) and not may_wait(os.open(regular, os.O_RDONLY))
    os.write(write_end, b"text\nwhat is 7 * 8\n")
    os.close(write_end)
    with io.BufferedReader(stoppable(os.fdopen(read_end, "rb", buffering=0))) as handle:  # type: ignore[arg-type]
        assert handle.read() == b"text\nwhat is 7 * 8\n"
