"""`jeirt-lite suggest`: which questions to ask a new LLM first (most informative for its vector)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from .._io.formats import known_suffixes, read_question_table
from .._io.outputs import atomic_output, check_output_folder, refuse_inputs
from .._io.vocabulary import TEXT_COLUMN
from ._shared import (
    FORMATTER,
    PROG,
    Console,
    add_router_arguments,
    chosen_router,
    load_router,
    positive_int,
    router_option,
    threads_option,
)


def add_parser(subparsers: Any) -> None:
    suggest = subparsers.add_parser(
        "suggest",
        parents=[threads_option(), router_option()],
        formatter_class=FORMATTER,
        help="which questions to ask a new LLM first (most informative for learning its vector)",
        epilog=f"example:\n  {PROG} suggest --questions bank.jsonl --budget 50 -o ask.jsonl",
    )
    add_router_arguments(suggest)
    suggest.add_argument(
        "--questions", type=Path, required=True, metavar="FILE", help=f"question bank: {known_suffixes()} (format from the suffix)"
    )
    suggest.add_argument("--budget", type=positive_int, required=True, help="how many questions to pick")
    suggest.add_argument(
        "--text-column", default=TEXT_COLUMN, metavar="NAME",
        help=f"the bank's column holding the question text (default: {TEXT_COLUMN})",
    )
    suggest.add_argument(
        "-o",
        "--output",
        type=Path,
        default=None,
        metavar="FILE",
        help="write the picks as JSONL ({rank, row, id, text}; row: the bank's data row, 1-based as in error "
        "messages); default: print to stdout",
    )


def run(args: argparse.Namespace, console: Console) -> int:
    from .._router import DEFAULT_ROUTER_PATH  # here: loading the router package is the slow part of a run

    router_path = chosen_router(args)
    if args.output is not None:
        check_output_folder(args.output)
        refuse_inputs(args.output, [args.questions, router_path or DEFAULT_ROUTER_PATH])
    router = load_router(router_path, args.threads)
    bank = read_question_table(args.questions, args.text_column)
    texts, ids = bank.texts, bank.ids
    picks = router.suggest_questions(texts, args.budget)
    lines = [
        json.dumps({"rank": r + 1, "row": i + 1, "id": ids[i], "text": texts[i]}, default=str)  # row: 1-based
        for r, i in enumerate(picks)
    ]
    if args.output is None:
        console.out.write("\n".join(lines) + "\n")
    else:
        with atomic_output(args.output) as temporary:
            temporary.write_text("\n".join(lines) + "\n", encoding="utf-8")
        console.out.write(f"wrote {len(picks)} questions to {args.output}\n")
    return 0
