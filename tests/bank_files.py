"""Question-bank files the tests write and read: JSONL rows, a small id,text CSV bank, a CSV bank large enough to be
read in many blocks, and a CSV output's rows."""

from __future__ import annotations

import csv
import json
from pathlib import Path

LARGE_BANK_ROWS = 20_000
# A small bank the routing tests score: subjects apart, and one text twice (encoded once, scored in its place).
ROUTED_QUESTIONS = [
    "What is the derivative of x**3 at x = 2?",
    "Which court hears a contract dispute?",
    "Who wrote Hamlet?",
    "Which enzyme unwinds DNA during replication?",
    "What is the capital of Australia?",
    "Who wrote Hamlet?",
]


def write_jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def write_large_csv_bank(path: Path) -> Path:
    """An id,text CSV of LARGE_BANK_ROWS rows (about 2 MB), rows of nearly equal length."""
    path.write_text("id,text\n" + "".join(f"q{i},{'what is the price of a market ' * 3}{i}\n"
                                          for i in range(LARGE_BANK_ROWS)))
    return path


def write_csv_bank(path: Path, texts: list[str]) -> Path:
    """An id,text CSV of `texts`, their ids q0, q1, ... (texts without commas or quotes)."""
    path.write_text("id,text\n" + "".join(f"q{i},{text}\n" for i, text in enumerate(texts)))
    return path


def read_csv_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))
