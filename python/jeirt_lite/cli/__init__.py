"""The `jeirt-lite` command line: route questions, score question banks, describe a router, onboard an LLM.

One module per command, each with `add_parser(subparsers)` and `run(args, console)`; `COMMANDS` lists them in
the order `--help` shows them.

Exit codes: 0 done; 1 a bad input, output path or router folder, or a stdout that a command whose job is to print
cannot write (closed, full: cli/_stdout.py) (the message says which, no traceback); 2 a command line argparse cannot
parse, or options that cannot run (out of the router's bounds, excluding each other); 130 interrupted (Ctrl-C); 143
terminated (SIGTERM). An interrupted or failed command leaves no output. A stderr that cannot be written loses the
messages, never the result nor the exit code (cli/_stderr.py).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from functools import partial
from typing import Any, Callable, Optional, Protocol, TextIO, cast

from .._errors import JeirtError, error_text, is_option_error
from . import add_llm, info, report, route, score, serve, train
from ._options import OptionParser, parse_or_exit_code
from ._shared import FORMATTER, PROG, Console, Terminated, flag_for
from ._signals import stop_signals
from ._stderr import LossyStderr, reserve_closed_descriptors
from ._stdout import ClosedStdout, FailsInOneLine, OutlivesItsReader, silence_stdout


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

__all__ = ["COMMANDS", "build_parser", "main", "run_command"]


# The commands whose result is a file or folder: they outlive the reader of their stdout (cli/_stdout.py); `score`
# without -o prints its result.
WRITE_RESULTS = frozenset({"train", "score", "add-llm", "report"})


def writes_result(args: argparse.Namespace) -> bool:
    return args.command in WRITE_RESULTS and not (args.command == "score" and args.output is None)


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


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line; returns the exit code (the console script passes it to sys.exit)."""
    words = list(sys.argv[1:] if argv is None else argv)
    return run_command(lambda: _parsed(words))


def run_command(
    parse: Callable[[], argparse.Namespace | int],
    command: Optional[Callable[[argparse.Namespace, Console], int]] = None,
    result_is_written: Callable[[argparse.Namespace], bool] = writes_result,
) -> int:
    """A command line parsed and run as every command's is: its streams, signals, one-line errors and exit codes
    (`python -m jeirt_lite_training` runs its own so). `command` runs the parsed words (default: COMMANDS's), and
    `result_is_written` says whether its result is a file, printing only beside it (cli/_stdout.py)."""
    reserve_closed_descriptors()
    stderr = sys.stderr
    sys.stderr = cast(TextIO, LossyStderr(stderr))  # what Python prints there (warnings, progress) goes through it too
    try:
        parsed = parse()
        if isinstance(parsed, int):  # --help, --version (0) or a refused word (2): the parser has said why
            return parsed
        return _run_with_streams(parsed, command or COMMANDS[parsed.command].run, result_is_written(parsed))
    finally:
        sys.stderr = stderr


def _parsed(words: list[str]) -> argparse.Namespace | int:
    if words[:1] == ["train"]:  # every word after it is the training parser's (argparse cannot pass "--x" on)
        return argparse.Namespace(command="train", arguments=words[1:])
    return parse_or_exit_code(build_parser(), words)


def _run_with_streams(
    args: argparse.Namespace, command: Callable[[argparse.Namespace, Console], int], result_is_written: bool
) -> int:
    stdout = sys.stdout
    given = stdout if stdout is not None else cast(TextIO, ClosedStdout())
    # print() in the training library goes through it too
    sys.stdout = cast(TextIO, OutlivesItsReader(given) if result_is_written else FailsInOneLine(given))
    console = Console(sys.stdout, sys.stderr)
    try:
        with stop_signals():
            return _run(args, console, command)
    except KeyboardInterrupt:  # the first signal, come while a failure was being reported: its message is out
        return 130
    except Terminated:
        return 143
    finally:
        sys.stdout = stdout


def _run(args: argparse.Namespace, console: Console, command: Callable[[argparse.Namespace, Console], int]) -> int:
    """The command, and how it ended: its exit code, after one line naming the failure."""
    # On a terminal the message starts on a line of its own, after the progress line or the echoed ^C.
    lead = "\n" if console.err.isatty() else ""
    try:
        code = command(args, console)
        console.out.flush()  # a full disk shows here, as the command's error, not in the flush at exit
        return code
    except JeirtError as error:
        console.err.write(f"{PROG}: error: {error_text(error, partial(flag_for, args))}\n")
        if is_option_error(error):  # the options cannot run together: nothing was started to say how far it got
            return 2
        return _stopped(console, "stopped", 1)
    except KeyboardInterrupt:
        console.err.write(f"{lead}{PROG}: interrupted\n")
        return _stopped(console, "interrupted", 130)
    except Terminated:
        console.err.write(f"{lead}{PROG}: terminated (SIGTERM)\n")
        return _stopped(console, "terminated", 143)
    except BrokenPipeError:
        # The reader of our stdout went away (e.g. `| head`); silence the flush at exit, as other CLIs do.
        silence_stdout()
        return 0
    except OSError as error:  # an unreadable input or an unwritable output folder, disk full
        console.err.write(f"{PROG}: error: {error}\n")
        return _stopped(console, "stopped", 1)


def _stopped(console: Console, how: str, code: int) -> int:
    """Adds how far the command got (when it can say) after the error or interruption message."""
    if console.stopped_note is not None:
        console.err.write(console.stopped_note(how))
    return code
