"""Run the surviving mutants of a cosmic-ray session (`make mutants-python`) again, against the tests as they are now.

    python -m scripts.recheck_mutants --tests "tests/test_onboarding.py tests/test_corrections.py"

After a mutation round, tests are written for the survivors worth one; this says which survivors the new tests
catch, without a whole new round: each survivor's diff is applied in turn to one copy of `python/` (the built
extension included) in a temporary folder, the tests run from the checkout with that copy first on the path, and
the mutated file is restored before the next. Prints one line per survivor (caught, survives, or stale: its diff no
longer matches the file, which has changed since the round, so it is skipped) and the counts; exits 0 either way.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import sys
import tempfile
from collections import Counter
from pathlib import Path

from scripts.mutant_tests import REPO, tests_pass

SURVIVORS = (
    "SELECT s.start_pos_row, s.operator_name, r.diff FROM work_results r JOIN mutation_specs s ON s.job_id = r.job_id "
    "WHERE r.test_outcome = 'SURVIVED' ORDER BY s.start_pos_row"
)


class StaleDiff(Exception):
    """The mutant's diff no longer matches its file: the code changed since the round."""


def changed_lines(diff: str) -> str:
    """The diff's removed and added lines, stripped, joined by ' => '."""
    lines = [line[1:].strip() for line in diff.splitlines() if line[:1] in "+-" and not line.startswith(("---", "+++"))]
    return " => ".join(lines)


def mutated_file(diff: str) -> str:
    """The path, relative to the checkout, of the file a cosmic-ray diff changes."""
    return next(line[len("+++ b/") :] for line in diff.splitlines() if line.startswith("+++ b/"))


def apply_diff(diff: str, root: Path) -> None:
    """Apply a cosmic-ray diff (one file, one-line hunks) under `root`. Done here rather than with `patch`: the
    diffs can carry a context line past the end of the file."""
    lines = diff.splitlines()
    target = mutated_file(diff)
    path = root / target
    source = path.read_text().splitlines(keepends=True)
    out: list[str] = []
    position = 0
    for i, line in enumerate(lines):
        if not line.startswith("@@"):
            continue
        start = int(line.split()[1].lstrip("-").split(",")[0]) - 1
        out += source[position:start]
        position = start
        for body in lines[i + 1 :]:
            if body.startswith("@@"):
                break
            if body.startswith("+"):
                out.append(body[1:] + "\n")
            elif position < len(source):  # a context or removed line: it must be the file's
                if source[position].rstrip("\n") != body[1:]:
                    raise StaleDiff(f"the mutant's diff does not match {target} at line {position + 1}")
                if body.startswith(" "):
                    out.append(source[position])
                position += 1
    path.write_text("".join(out + source[position:]))


def caught(diff: str, copy: Path, tests: list[str], timeout: float) -> bool:
    """Whether `tests` fail (or run past `timeout` seconds) with the mutant applied to `copy` (a copy of the
    checkout's python/ folder under a scratch root), which is restored after."""
    path = copy / mutated_file(diff)
    original = path.read_text()
    apply_diff(diff, copy)  # writes nothing when it raises StaleDiff
    try:
        return tests_pass(copy / "python", tests, timeout) is not True  # failed, or ran past the timeout
    finally:
        path.write_text(original)


def main() -> int:
    ap = argparse.ArgumentParser(prog="python -m scripts.recheck_mutants", description=__doc__.split("\n")[0])
    ap.add_argument("--session", type=Path, default=REPO / ".mutants" / "session.sqlite",
                    help="the cosmic-ray session (default: make mutants-python's)")
    ap.add_argument("--tests", required=True, help="test files to run, one string (as MUTATION_TESTS)")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds before a run counts as caught")
    args = ap.parse_args()
    if not args.session.is_file():
        raise SystemExit(f"{args.session}: no such cosmic-ray session")
    with sqlite3.connect(args.session) as db:
        survivors = db.execute(SURVIVORS).fetchall()
    verdicts: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as scratch:  # one copy (the built extension in it), each mutant undone after
        shutil.copytree(REPO / "python", Path(scratch) / "python", ignore=shutil.ignore_patterns("__pycache__"))
        for row, operator, diff in survivors:
            try:
                verdict = "caught" if caught(diff, Path(scratch), args.tests.split(), args.timeout) else "SURVIVES"
            except StaleDiff:
                verdict = "stale"
            verdicts[verdict] += 1
            print(f"{verdict:<8} line {row} {operator.split('/')[-1]}: {changed_lines(diff)[:160]}", flush=True)
    print(f"{len(survivors)} survivors in the session; {verdicts['SURVIVES']} survive the tests as they are now, "
          f"{verdicts['stale']} no longer apply (their file changed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
