"""The stdout of a command whose result is a file: its reader going away drops what is printed, nothing else."""

from __future__ import annotations

import io

from jeirt_lite.cli import COMMANDS, WRITE_RESULTS
from jeirt_lite.cli._stdout import OutlivesItsReader


class _ClosingPipe(io.StringIO):
    """A pipe whose reader leaves after `lines` writes."""

    def __init__(self, lines: int):
        super().__init__()
        self.left = lines

    def write(self, text: str) -> int:
        if self.left == 0:
            raise BrokenPipeError(32, "Broken pipe")
        self.left -= 1
        return super().write(text)

    def flush(self) -> None:
        if self.left == 0:
            raise BrokenPipeError(32, "Broken pipe")


def test_once_the_reader_is_gone_writes_are_dropped_and_the_descriptor_silenced_once() -> None:
    pipe, silenced = _ClosingPipe(1), []
    out = OutlivesItsReader(pipe, on_gone=lambda error: silenced.append(isinstance(error, BrokenPipeError)))
    assert out.write("first\n") == 6 and not out.reader_gone
    assert out.write("second\n") == 7 and out.reader_gone  # no BrokenPipeError reaches the command
    out.write("third\n")
    out.flush()
    assert pipe.getvalue() == "first\n" and silenced == [True]
    assert out.isatty() is False  # the rest is the stream's own


def test_the_commands_that_write_a_result_are_named_as_they_are_registered() -> None:
    assert WRITE_RESULTS <= set(COMMANDS) and {"route", "info", "serve"}.isdisjoint(WRITE_RESULTS)
