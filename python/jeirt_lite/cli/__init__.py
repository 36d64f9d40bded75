"""The `jeirt-lite` command line: route questions, score question banks, describe a router, onboard an LLM.

One module per command, each with `add_parser(subparsers)` and `run(args, console)`; `COMMANDS` lists them in
the order `--help` shows them.

Exit codes: 0 done; 1 a bad input, argument or router folder (the message says which, no traceback); 2 a
command line argparse cannot parse; 130 interrupted (Ctrl-C); 143 terminated (SIGTERM). An interrupted or failed
`score` leaves no output file.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence
from functools import partial
from types import FrameType
from typing import Any, Optional, Protocol

from .._errors import JeirtError, error_text
from . import add_llm, info, report, route, score, serve, train
from ._options import OptionParser, parse_or_exit_code
from ._shared import FORMATTER, PROG, Console, Terminated, flag_for


class Command(Protocol):
    """What a command module provides (each module of this package named in COMMANDS is one)."""

    def add_parser(self, subparsers: Any) -> None: ...

    def run(self, args: argparse.Namespace, console: Console) -> int: ...


COMMANDS: dict[str, Command] = {
    "route": route,
    "score": score,
    "info": info,
    "add-llm": add_llm,
    "report": report,
    "serve": serve,
    "train": train,
}

__all__ = ["COMMANDS", "build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = OptionParser(
        prog=PROG,
        description="Predict which LLM will answer a question correctly, before asking any of them (JE-IRT).",
        formatter_class=FORMATTER,
        epilog=(
            "examples:\n"
            f"  {PROG} route 'What is the derivative of x**3?' --k 3\n"
            f"  {PROG} score bank.csv -o scores.parquet --k 2 --forecast\n"
            f"  {PROG} info\n\n"
            f"Run '{PROG} COMMAND --help' for each command's options."
        ),
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for command in COMMANDS.values():
        command.add_parser(subparsers)
    return parser


def _on_sigterm(signum: int, frame: Optional[FrameType]) -> None:
    raise Terminated()


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line; returns the exit code (the console script passes it to sys.exit)."""
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] == ["train"]:  # every word after it is the training parser's (argparse cannot pass "--x" on)
        args = argparse.Namespace(command="train", arguments=words[1:])
    else:
        parsed = parse_or_exit_code(build_parser(), words)
        if isinstance(parsed, int):
            return parsed
        args = parsed
    console = Console(sys.stdout, sys.stderr)
    previous = None
    try:
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread (e.g. called from a test runner's worker): leave SIGTERM alone
        pass
    try:
        return COMMANDS[args.command].run(args, console)
    except JeirtError as error:
        console.err.write(f"{PROG}: error: {error_text(error, partial(flag_for, args))}\n")
        return _stopped(console, "stopped", 1)
    except KeyboardInterrupt:
        console.err.write(f"\n{PROG}: interrupted\n")
        return _stopped(console, "interrupted", 130)
    except Terminated:
        console.err.write(f"\n{PROG}: terminated (SIGTERM)\n")
        return _stopped(console, "terminated", 143)
    except BrokenPipeError:
        # The reader of our stdout went away (e.g. `| head`); silence the flush at exit, as other CLIs do.
        _silence_stdout()
        return 0
    except OSError as error:  # an unreadable input or an unwritable output folder, disk full
        console.err.write(f"{PROG}: error: {error}\n")
        return _stopped(console, "stopped", 1)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _stopped(console: Console, how: str, code: int) -> int:
    """Adds how far the command got (when it can say) after the error or interruption message."""
    if console.stopped_note is not None:
        console.err.write(console.stopped_note(how))
    return code


def _silence_stdout() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
