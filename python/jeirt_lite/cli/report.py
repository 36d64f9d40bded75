"""`jeirt-lite report`: one HTML page about a router on a data folder or table (needs the `report` extra)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .._errors import JeirtError
from .._io.vectors import read_id_lines
from .._io.vocabulary import CORRECT_COLUMNS, LLM_COLUMNS, QUESTION_COLUMNS, TEXT_COLUMNS
from ._options import at_most, output_path
from ._shared import (
    PROG,
    Console,
    add_command,
    chosen_router,
    load_router,
)

# The columns of a table the report reads as train does, named by --ROLE-column (Columns' fields).
COLUMN_ROLES = ("question", "text", "llm", "correct")


def add_parser(subparsers: Any) -> None:
    report = add_command(
        subparsers,
        "report",
        positional_router=True,
        help="one HTML page about a router on a data folder or table: difficulty, taxonomy, calibration, alignment",
        description=(
            "Embed the questions of a data folder (questions.csv, models.csv, responses.csv) or of a table of\n"
            "answers as train reads it (a long or wide table; needs the train extra) with the router, and write\n"
            "one self-contained HTML page of plots with their numbers: difficulty, taxonomy, LLM vectors,\n"
            "calibration, a probe, onboarding from a few answers, routing value and its quality-cost curve,\n"
            "alignment. Every section is computed from the router and the data, on the questions the router\n"
            "did not learn from: its test split when it can be drawn again (the data it was trained on, rows in\n"
            "the same order), else those its record of training questions does not hold (else all, and the page\n"
            'says they include training questions). Needs matplotlib: pip install "jeirt-lite[report]".'
        ),
        epilog=(
            "examples:\n"
            f"  {PROG} report --data data/mmlu_pro -o report.html      # in a checkout of the repository\n"
            f"  {PROG} report --data data/mmlu_pro --max-questions 300 -o small.html\n"
            f"  {PROG} report --data my_answers.csv -o mine.html    # a long or wide table, as train reads it"
        ),
    )
    report.add_argument("--data", type=Path, required=True, metavar="DIR_OR_TABLE",
                        help="data folder in the project format (e.g. data/mmlu_pro of a checkout of the repository), "
                        "or one long or wide table of answers (.csv, .tsv, .jsonl, .parquet) as train reads it")
    for role, names in zip(COLUMN_ROLES, (QUESTION_COLUMNS, TEXT_COLUMNS, LLM_COLUMNS, CORRECT_COLUMNS)):
        report.add_argument(f"--{role}-column", metavar="NAME", default=None,
                            help=f"the table's {role} column, as given to train; default: the first of "
                            f"{', '.join(names)}")
    report.add_argument("-o", "--output", type=output_path, default=Path("report.html"), metavar="HTML",
                        help="the page to write (default: report.html)")
    report.add_argument("--question-ids", type=Path, default=None, metavar="FILE",
                        help="only the question ids in FILE (one per line); default: the router's test split when "
                        "it can be drawn again (needs the train extra), else the questions it did not learn from, "
                        "else every question")
    report.add_argument("--max-questions", type=at_most, default=3000, metavar="N",
                        help="embed a subject-stratified sample of at most N questions; 0: all (default 3000)")


def run(args: argparse.Namespace, console: Console) -> int:
    try:
        from ..analysis.report import build_report, require_matplotlib

        require_matplotlib()
    except ImportError as err:  # matplotlib is an optional extra: say which, without a traceback
        raise JeirtError(str(err)) from err
    ids = None
    if args.question_ids is not None:
        ids = read_id_lines(args.question_ids)
    if not args.output.parent.is_dir():  # a mistyped folder is an error, not a folder created in passing
        raise JeirtError(f"-o {args.output}: folder {args.output.parent} does not exist")
    columns = {role: getattr(args, f"{role}_column") for role in COLUMN_ROLES}
    path = build_report(
        load_router(chosen_router(args), args.threads), args.data, args.output, question_ids=ids,
        max_questions=args.max_questions or None, columns={role: name for role, name in columns.items() if name},
    )
    console.out.write(f"wrote {path}\n")
    return 0
