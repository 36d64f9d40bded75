"""`jeirt-lite add-llm` and `jeirt-lite suggest`: onboarding a new LLM from the command line.

    jeirt-lite add-llm ROUTER --name NEW --answers answers.csv -o NEW_ROUTER   # text + correct columns
    jeirt-lite suggest ROUTER --questions bank.jsonl --budget 50 [-o picks.jsonl]

Tables are CSV (header row), JSONL (one object per line) or Parquet (needs pyarrow), told apart by the suffix.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path
from typing import Any, Optional, TextIO

from .errors import JeirtError
from .readers import CSV_FIELD_LIMIT, format_of, require_pyarrow, text_problem

_TRUE = {"1", "1.0", "true", "yes"}
_FALSE = {"0", "0.0", "false", "no"}


def read_rows(path: Path) -> tuple[list[dict[str, Any]], str]:
    """All rows of a CSV/JSONL/Parquet table as dicts, and how to name row i in messages."""
    kind = format_of(path)
    if not path.is_file():
        raise JeirtError(f"{path}: no such file")
    if kind == "csv":
        csv.field_size_limit(CSV_FIELD_LIMIT)
        with open(path, newline="", encoding="utf-8-sig") as handle:
            return list(csv.DictReader(handle)), "csv"
    if kind == "jsonl":
        rows = []
        with open(path, encoding="utf-8-sig") as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as err:
                    raise JeirtError(f"{path} line {number}: not valid JSON ({err.msg})") from None
                if not isinstance(row, dict):
                    raise JeirtError(f"{path} line {number}: must be a JSON object")
                rows.append(row)
        return rows, "jsonl"
    table = require_pyarrow().parquet.read_table(path)
    return table.to_pylist(), "parquet"


def _column(rows: list[dict[str, Any]], wanted: str, path: Path, role: str) -> str:
    if rows and wanted not in rows[0]:
        raise JeirtError(f"{path}: no {role} column {wanted!r} (columns: {', '.join(map(str, rows[0]))})")
    return wanted


def _label(value: Any, where: str) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)) and value in (0, 1):
        return int(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return int(value.strip().lower() in _TRUE)
    raise JeirtError(f"{where}: label {value!r} is not 0/1 or true/false")


def read_questions(
    path: Path, text_column: str, label_column: Optional[str] = None
) -> tuple[list[str], Optional[list[int]], list[Any]]:
    """Texts (and labels when `label_column` is given) of a table; ids are the 'id' column or row numbers."""
    rows, kind = read_rows(path)
    if not rows:
        raise JeirtError(f"{path}: has no rows")
    _column(rows, text_column, path, "text")
    if label_column is not None:
        _column(rows, label_column, path, "label")
    texts, labels, ids = [], [], []
    for i, row in enumerate(rows):
        where = f"{path} row {i + 2 if kind == 'csv' else i + 1}"
        text = row.get(text_column)
        problem = text_problem(text) if text is not None else "has no text (missing or null)"
        if problem is None and not str(text).strip():
            problem = "has an empty text"
        if problem is not None:
            raise JeirtError(f"{where} {problem}")
        texts.append(str(text))
        if label_column is not None:
            labels.append(_label(row.get(label_column), where))
        ids.append(row.get("id", i))
    return texts, (labels if label_column is not None else None), ids


def add_parsers(commands: Any, common: argparse.ArgumentParser, formatter: Any, prog: str) -> None:
    add = commands.add_parser(
        "add-llm",
        parents=[common],
        formatter_class=formatter,
        help="add a new LLM to a router from its answers to some questions",
        epilog=f"example:\n  {prog} add-llm router/ --name my-llm --answers answers.csv -o router-plus/",
    )
    add.add_argument("router", type=Path, metavar="ROUTER", help="router folder to extend")
    add.add_argument("--name", required=True, help="the new LLM's name (must not be in the router)")
    add.add_argument(
        "--answers",
        type=Path,
        required=True,
        metavar="FILE",
        help="CSV/JSONL/Parquet with a text and a correct (0/1, true/false) column",
    )
    add.add_argument("-o", "--output", type=Path, required=True, metavar="NEW_ROUTER", help="folder to write")
    add.add_argument("--text-column", default="text")
    add.add_argument("--label-column", default="correct")
    add.add_argument(
        "--cost", type=float, default=None, help="the new LLM's cost, stored for cost-aware routing"
    )
    add.add_argument("--overwrite", action="store_true", help="replace NEW_ROUTER if it exists")

    suggest = commands.add_parser(
        "suggest",
        parents=[common],
        formatter_class=formatter,
        help="which questions to ask a new LLM first (most informative for learning its vector)",
        epilog=f"example:\n  {prog} suggest router/ --questions bank.jsonl --budget 50 -o ask.jsonl",
    )
    suggest.add_argument("router", type=Path, metavar="ROUTER", help="router folder")
    suggest.add_argument(
        "--questions", type=Path, required=True, metavar="FILE", help="CSV/JSONL/Parquet bank"
    )
    suggest.add_argument("--budget", type=int, required=True, help="how many questions to pick")
    suggest.add_argument("--text-column", default="text")
    suggest.add_argument(
        "-o",
        "--output",
        type=Path,
        default=None,
        metavar="FILE",
        help="write the picks as JSONL ({rank, row, id, text}); default: print to stdout",
    )


def run_add_llm(args: argparse.Namespace, out: TextIO) -> int:
    from .router import Router

    router = Router.load(args.router, threads=args.threads)
    if args.name in router.llms:
        raise JeirtError(f"LLM {args.name!r} is already in {args.router}; pick another --name")
    if args.output.exists() and not args.overwrite:
        raise JeirtError(f"{args.output} already exists (pass --overwrite to replace it)")
    texts, labels, _ = read_questions(args.answers, args.text_column, args.label_column)
    grown = router.add_llm(args.name, texts, labels or [], cost=args.cost)
    path = grown.save(args.output, overwrite=args.overwrite)
    out.write(f"added {args.name!r} from {len(texts)} answers ({sum(labels or [])} correct); wrote {path}\n")
    return 0


def run_suggest(args: argparse.Namespace, out: TextIO) -> int:
    from .router import Router

    router = Router.load(args.router, threads=args.threads)
    texts, _, ids = read_questions(args.questions, args.text_column)
    picks = router.suggest_questions(texts, args.budget)
    lines = [
        json.dumps({"rank": r + 1, "row": i, "id": ids[i], "text": texts[i]}, default=str)
        for r, i in enumerate(picks)
    ]
    if args.output is None:
        out.write("\n".join(lines) + "\n")
    else:
        args.output.write_text("\n".join(lines) + "\n", encoding="utf-8")
        out.write(f"wrote {len(picks)} questions to {args.output}\n")
    return 0
