"""Run the surviving mutants of a cosmic-ray session (`make mutants-python`) again, against the tests as they are now.

    python -m scripts.recheck_mutants --tests "tests/test_onboarding.py tests/test_corrections.py"

After a mutation round, tests are written for the survivors worth one; this says which survivors the new tests
catch, without a whole new round: each survivor's diff is applied to a copy of `python/` (the built extension
included) in a temporary folder, the tests run from the checkout with that copy first on the path, and the copy is
removed. Prints one line per survivor (caught or survives) and the count; exits 0 either way.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SURVIVORS = (
    "SELECT s.start_pos_row, s.operator_name, r.diff FROM work_results r JOIN mutation_specs s ON s.job_id = r.job_id "
    "WHERE r.test_outcome = 'SURVIVED' ORDER BY s.start_pos_row"
)


def changed_lines(diff: str) -> str:
    """The diff's removed and added lines, stripped, joined by ' => '."""
    lines = [line[1:].strip() for line in diff.splitlines() if line[:1] in "+-" and not line.startswith(("---", "+++"))]
    return " => ".join(lines)


def apply_diff(diff: str, root: Path) -> None:
    """Apply a cosmic-ray diff (one file, one-line hunks) under `root`. Done here rather than with `patch`: the
    diffs can carry a context line past the end of the file."""
    lines = diff.splitlines()
    target = next(line[len("+++ b/"):] for line in lines if line.startswith("+++ b/"))
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
                    raise SystemExit(f"the mutant's diff does not match {target} at line {position + 1}")
                if body.startswith(" "):
                    out.append(source[position])
                position += 1
    path.write_text("".join(out + source[position:]))


def caught(diff: str, tests: list[str], timeout: float) -> bool:
    """Whether `tests` fail (or run past `timeout` seconds) with the mutant applied to a copy of python/."""
    with tempfile.TemporaryDirectory() as scratch:
        shutil.copytree(REPO / "python", Path(scratch) / "python")
        apply_diff(diff, Path(scratch))
        env = dict(os.environ, PYTHONPATH=str(Path(scratch) / "python"))
        try:
            run = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests],
                                 cwd=REPO, env=env, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return True
        return run.returncode != 0


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
    still = 0
    for row, operator, diff in survivors:
        now_caught = caught(diff, args.tests.split(), args.timeout)
        still += not now_caught
        print(f"{'caught  ' if now_caught else 'SURVIVES'} line {row} {operator.split('/')[-1]}: "
              f"{changed_lines(diff)[:160]}", flush=True)
    print(f"{len(survivors)} survivors in the session; {still} survive the tests as they are now")
    return 0


if __name__ == "__main__":
    sys.exit(main())
