"""`jeirt-lite report`: one HTML page about a router on a data folder (needs the `report` extra)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .._errors import JeirtError
from ._shared import FORMATTER, PROG, Console, load_router, threads_option


def add_parser(subparsers: Any) -> None:
    report = subparsers.add_parser(
        "report",
        parents=[threads_option()],
        formatter_class=FORMATTER,
        help="one HTML page about a router on a data folder: difficulty, taxonomy, calibration, alignment",
        description=(
            "Embed a data folder's questions (questions.csv, models.csv, responses.csv) with the router and write\n"
            "one self-contained HTML page of plots with their numbers. Observed error rates come from the data's\n"
            "responses; without --question-ids they may include the router's training questions. Needs\n"
            'matplotlib: pip install "jeirt-lite[report]".'
        ),
        epilog=(
            "examples:\n"
            f"  {PROG} report path/to/router --data data/mmlu_pro -o report.html\n"
            f"  {PROG} report path/to/router --data data/mmlu_pro --question-ids test_ids.txt --max-questions 0"
        ),
    )
    report.add_argument("router", type=Path, metavar="ROUTER", help="router folder")
    report.add_argument("--data", type=Path, default=Path("data/mmlu_pro"), metavar="DIR",
                        help="data folder in the project format (default: data/mmlu_pro)")
    report.add_argument("-o", "--output", type=Path, default=Path("report.html"), metavar="HTML",
                        help="the page to write (default: report.html)")
    report.add_argument("--question-ids", type=Path, default=None, metavar="FILE",
                        help="only the question ids in FILE (one per line), e.g. the router's test split")
    report.add_argument("--max-questions", type=int, default=3000, metavar="N",
                        help="embed a subject-stratified sample of at most N questions; 0: all (default 3000)")
    report.add_argument("--results", type=Path, default=Path("docs"), metavar="DIR",
                        help="folder with onboarding.json / routing.json curves (default: docs)")


def run(args: argparse.Namespace, console: Console) -> int:
    try:
        from ..analysis.report import build_report, require_matplotlib

        require_matplotlib()
    except ImportError as err:  # matplotlib is an optional extra: say which, without a traceback
        raise JeirtError(str(err)) from err
    ids = None
    if args.question_ids is not None:
        ids = [line.strip() for line in args.question_ids.read_text(encoding="utf-8").splitlines() if line.strip()]
    if args.max_questions < 0:
        raise JeirtError(f"--max-questions must be 0 (all) or positive, got {args.max_questions}")
    path = build_report(
        load_router(args.router, args.threads), args.data, args.output, question_ids=ids,
        max_questions=args.max_questions or None, results_dir=args.results,
    )
    console.out.write(f"wrote {path}\n")
    return 0
