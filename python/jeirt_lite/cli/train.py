"""`jeirt-lite train`: a router trained on your own data (needs the `train` extra).

The training itself is the package `jeirt_lite_training`, shipped in the wheel beside jeirt_lite (`python -m
jeirt_lite_training fit` runs the same code): this command hands its arguments to that package's `fit_main`, so both
run one implementation with one set of options. It is imported only here, when asked for, so that the runtime never
loads torch.
"""

from __future__ import annotations

import argparse
from typing import Any

from .._errors import JeirtError
from ._shared import FORMATTER, PROG, Console

TRAIN_EXTRA = 'pip install "jeirt-lite[train]" (from a checkout: pip install ".[train]")'


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


def _fit_main() -> Any:
    try:
        from jeirt_lite_training.__main__ import fit_main
    except ImportError as error:  # torch, transformers, ... come with the extra, not with jeirt-lite itself
        missing = f" ({error.name} is not installed)" if error.name else ""
        raise JeirtError(f"`{PROG} train` needs the train extra{missing}: {TRAIN_EXTRA}") from None
    return fit_main


def run(args: argparse.Namespace, console: Console) -> int:
    fit_main = _fit_main()
    try:
        code: int = fit_main(list(args.arguments), prog=f"{PROG} train")
    except ValueError as error:  # a bad data file or option, named by the training code: no traceback
        raise JeirtError(str(error)) from None
    except SystemExit as done:  # argparse's --help (0) or a usage error (2)
        return done.code if isinstance(done.code, int) else 2
    return code
