"""A small real data folder: a seeded sample of a data folder's questions with all their cells (same three files).

    python tests/make_data_slice.py data/mmlu_pro slice --questions 150

CI trains a router from the installed wheel on such a slice (.ci/run); the command-line tests use it too.
"""

from __future__ import annotations

import argparse
import csv
import random
import sys
from pathlib import Path


def write_slice(source: Path, out: Path, n_questions: int, seed: int = 0) -> Path:
    """`out` gets n_questions of `source`'s questions (seeded), models.csv as is, and those questions' cells."""
    csv.field_size_limit(1 << 30)
    with open(source / "questions.csv", newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        fields, questions = reader.fieldnames or [], list(reader)
    keep = random.Random(seed).sample(questions, min(n_questions, len(questions)))
    ids = {row["question_id"] for row in keep}
    out.mkdir(parents=True)
    with open(out / "questions.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(keep)
    (out / "models.csv").write_bytes((source / "models.csv").read_bytes())
    with open(source / "responses.csv", newline="", encoding="utf-8") as src, \
            open(out / "responses.csv", "w", newline="", encoding="utf-8") as dst:
        reader = csv.DictReader(src)
        writer = csv.DictWriter(dst, fieldnames=reader.fieldnames or [])
        writer.writeheader()
        writer.writerows(row for row in reader if row["question_id"] in ids)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("source", type=Path, help="a data folder (questions.csv, models.csv, responses.csv)")
    parser.add_argument("out", type=Path, help="the folder to create")
    parser.add_argument("--questions", type=int, default=150)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    write_slice(args.source, args.out, args.questions, args.seed)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
