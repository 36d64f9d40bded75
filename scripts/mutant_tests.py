"""The tests run against a mutated copy of `python/`: how `scripts.recheck_mutants` and `scripts.mutate_bindings` both
judge a mutant."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parents[1]
PYTEST = ("-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "--hypothesis-seed=0")


def tests_pass(python: Path, tests: list[str], timeout: float) -> Optional[bool]:
    """Whether `tests` pass, run from the checkout with `python` (a copy of its python/ folder) first on the path;
    None when they run past `timeout` seconds. The whole process group is then ended: a mutant that hangs a test can
    leave worker processes behind it."""
    # No bytecode written: a mutant of the original's size within the same second could otherwise run stale.
    env = dict(os.environ, PYTHONPATH=str(python), PYTHONDONTWRITEBYTECODE="1")
    process = subprocess.Popen([sys.executable, *PYTEST, *tests], cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        return process.wait(timeout=timeout) == 0
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        return None
