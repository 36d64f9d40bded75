"""Mutation testing of the PyO3 bindings (rust/src/python/), which only the Python tests reach.

    python -m scripts.mutate_bindings --file rust/src/python/votes.rs --tests "tests/test_vote_kernel.py"

`make mutants-rust` runs cargo-mutants with cargo's tests, which build the kernels without the bindings (the `python`
feature), so a mutant of the bindings survives there whatever the Python tests would say. This takes cargo-mutants'
list of mutants for the file and tries each in a copy of the crate in a temporary folder: the mutated source is
built as the extension (release, without link-time optimisation, incrementally), the build goes into a copy of
`python/`, and the tests run from the checkout with that copy first on the path. A mutant that does not compile is
unviable (most of cargo-mutants' replacements of a `PyResult` do not); one whose tests fail or run past the timeout
is caught. Prints one line per viable mutant and the counts; exits 1 when the tests fail on the unmutated code.

A function returning a tuple of arrays gets thousands of replacements, nearly all of them unviable, each a failed
build: `--per-function N` tries the first N of each function's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from scripts.mutant_tests import REPO, tests_pass

BUILD_ENV = {  # a release build, as the tests expect, but one that rebuilds in seconds rather than minutes
    "CARGO_PROFILE_RELEASE_LTO": "false",
    "CARGO_PROFILE_RELEASE_CODEGEN_UNITS": "16",
    "CARGO_PROFILE_RELEASE_INCREMENTAL": "true",
}


def list_mutants(file: str) -> list[dict[str, Any]]:
    """cargo-mutants' mutants of one source file, with their spans and replacements."""
    listed = subprocess.run(["cargo", "mutants", "--list", "--json", "--file", file], cwd=REPO, check=True,
                            capture_output=True, text=True)
    return list(json.loads(listed.stdout))


def first_of_each_function(mutants: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """The first `limit` mutants of each function, in cargo-mutants' order; mutants outside a function all."""
    seen: Counter[str] = Counter()
    kept = []
    for mutant in mutants:
        function = (mutant.get("function") or {}).get("function_name")
        if function is not None:
            seen[function] += 1
            if seen[function] > limit:
                continue
        kept.append(mutant)
    return kept


def mutated(source: str, mutant: dict[str, Any]) -> str:
    """`source` with the mutant's span (1-based lines and columns, the end exclusive) replaced."""
    starts = [0]
    for line in source.split("\n"):  # lines as Rust counts them: str.splitlines would also split at \x0c
        starts.append(starts[-1] + len(line) + 1)
    span = mutant["span"]
    begin = starts[span["start"]["line"] - 1] + span["start"]["column"] - 1
    end = starts[span["end"]["line"] - 1] + span["end"]["column"] - 1
    return source[:begin] + mutant["replacement"] + source[end:]


class Workspace:
    """A copy of the crate and of python/ in which one mutant at a time is built and tested."""

    def __init__(self, root: Path) -> None:
        self.crate = root / "crate"
        self.python = root / "python"
        self.target = root / "target"
        self.crate.mkdir()
        for name in ("Cargo.toml", "Cargo.lock"):
            shutil.copy2(REPO / name, self.crate / name)
        shutil.copytree(REPO / "rust", self.crate / "rust")
        shutil.copytree(REPO / "python", self.python, ignore=shutil.ignore_patterns("__pycache__"))

    def build(self) -> bool:
        """Build the extension from the crate's current sources into the copy of python/; False if it fails."""
        done = subprocess.run(["cargo", "build", "--release", "--lib", "--features", "python", "--quiet"],
                              cwd=self.crate, env={**os.environ, **BUILD_ENV, "CARGO_TARGET_DIR": str(self.target)},
                              capture_output=True, check=False)
        if done.returncode != 0:
            return False
        library = "libjeirt_lite.dylib" if sys.platform == "darwin" else "libjeirt_lite.so"
        shutil.copy2(self.target / "release" / library, self.python / "jeirt_lite" / "_core.abi3.so")
        return True

def outcome(workspace: Workspace, mutant: dict[str, Any], tests: list[str], timeout: float) -> str:
    source_path = workspace.crate / mutant["file"]
    original = source_path.read_text(encoding="utf-8")
    source_path.write_text(mutated(original, mutant), encoding="utf-8")
    try:
        if not workspace.build():
            return "unviable"
        passed = tests_pass(workspace.python, tests, timeout)
        return "missed" if passed else ("timeout" if passed is None else "caught")
    finally:
        source_path.write_text(original, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.mutate_bindings", description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", required=True, help="a source file of the bindings, e.g. rust/src/python/votes.rs")
    parser.add_argument("--tests", required=True, help="the pytest arguments, e.g. 'tests/test_vote_kernel.py'")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds the tests may take on one mutant")
    parser.add_argument("--only", default=None, help="only the mutants whose name holds this text (a recheck)")
    parser.add_argument("--per-function", type=int, default=None, help="try only the first N mutants of a function")
    parser.add_argument("--json", type=Path, default=None, help="also write every mutant's outcome to this file")
    args = parser.parse_args(argv)
    tests = args.tests.split()
    mutants = list_mutants(args.file)
    if args.per_function is not None:
        mutants = first_of_each_function(mutants, args.per_function)
    if args.only is not None:
        mutants = [mutant for mutant in mutants if args.only in mutant["name"]]
    with tempfile.TemporaryDirectory(prefix="mutate-bindings-") as root:
        workspace = Workspace(Path(root))
        if not workspace.build() or not tests_pass(workspace.python, tests, args.timeout):
            print("the tests fail (or the extension does not build) on the unmutated code", file=sys.stderr)
            return 1
        results = []
        for mutant in mutants:
            verdict = outcome(workspace, mutant, tests, args.timeout)
            results.append({"name": mutant["name"], "outcome": verdict})
            if verdict != "unviable":
                print(f"{verdict:8} {mutant['name']}", flush=True)
    counts = Counter(result["outcome"] for result in results)
    print(", ".join(f"{counts[kind]} {kind}" for kind in ("caught", "timeout", "missed", "unviable")))
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
