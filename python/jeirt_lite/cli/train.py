"""`jeirt-lite train`: a router trained on your own data (needs the `train` extra).

The training itself is the package `jeirt_lite_training`, shipped in the wheel beside jeirt_lite (`python -m
jeirt_lite_training fit` runs the same code): this command parses its arguments with that package's `fit` parser
(`jeirt_lite_training.options`, importable without torch, so `--help` and every bound work before the extra is
installed), then runs its `run_fit`. torch is imported only then, so that the runtime never loads it.
"""

from __future__ import annotations

import argparse
import importlib
from typing import Any, Callable

from .._errors import JeirtError, reraised_as
from ._options import parse_or_exit_code
from ._shared import FORMATTER, PROG, Console

TRAIN_EXTRA = 'pip install "jeirt-lite[train]" (from a checkout: pip install ".[train]")'
# What the training needs beyond jeirt-lite itself, checked before it starts.
EXTRA_MODULES = ("torch", "pandas")


def add_parser(subparsers: Any) -> None:
    train = subparsers.add_parser(
        "train",
        add_help=False,  # --help is the training parser's own (it lists every option with its default)
        formatter_class=FORMATTER,
        help="train a router on your own data: --data DIR --out ROUTER (needs the train extra)",
        description="Train a JE-IRT router on your own LLMs' answers.",
        usage=f"{PROG} train --data DIR_OR_TABLE --out ROUTER [options]   ({PROG} train --help lists them)",
    )
    train.add_argument("arguments", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)


def _needs_extra(error: ImportError) -> JeirtError:
    missing = f" ({error.name} is not installed)" if error.name else ""
    return JeirtError(f"`{PROG} train` needs the train extra{missing}: {TRAIN_EXTRA}")


def _training(module: str) -> Any:
    # By name: the training package is typed apart from this one (mypy checks python/jeirt_lite only).
    try:
        return importlib.import_module(f"jeirt_lite_training.{module}")
    except ImportError as error:  # torch, transformers, ... come with the extra, not with jeirt-lite itself
        raise _needs_extra(error) from None


def run(args: argparse.Namespace, console: Console) -> int:
    options = parse_or_exit_code(_training("options").fit_parser(f"{PROG} train"), args.arguments)
    if isinstance(options, int):  # --help (0) or an option out of its bound (2): the parser has said why
        return options
    for name in EXTRA_MODULES:
        try:
            importlib.import_module(name)
        except ImportError as error:
            raise _needs_extra(error) from None
    return run_training(_training("__main__").run_fit, options)


def run_training(command: Callable[[argparse.Namespace], int], options: argparse.Namespace) -> int:
    """A command of the training library (`train`'s, and `python -m jeirt_lite_training`'s) whose bad data file or
    option, named by the training code in a ValueError, is a JeirtError: one line, no traceback."""
    try:
        return command(options)
    except JeirtError:  # named by the package (an option error among them: exit 2)
        raise
    except ValueError as error:  # with its hint (skip_bad=True), which the command line, without such a flag, leaves out
        raise reraised_as(JeirtError(str(error)), error) from None
