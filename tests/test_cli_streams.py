"""The commands with a standard stream closed (`>&-`, `2>&-`) or full (`> /dev/full`), each in a subprocess: a
command whose job is to print fails in one line and exit 1, as coreutils' do; one whose result is a file writes it;
a stderr that cannot be written loses the messages, never the result nor the exit status."""

from __future__ import annotations

import errno
import faulthandler
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from child_env import cli_env
from jeirt_lite._limits import MAX_LINE_BYTES
from jeirt_lite.cli._stderr import LossyStderr

QUESTION = "What is 7 * 8?"
CLOSED, FULL = ">&-", ">/dev/full"
STRERROR = {CLOSED: os.strerror(errno.EBADF), FULL: os.strerror(errno.ENOSPC)}

# A POSIX shell for every test; /dev/full (Linux, not macOS) only for the full stream's cases, so that macOS still
# runs the closed streams'.
pytestmark = pytest.mark.skipif(os.name == "nt", reason="needs a POSIX shell")
NEEDS_FULL = pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
STDOUT_REDIRECTS = [CLOSED, pytest.param(FULL, marks=NEEDS_FULL)]


def _jeirt(redirect: str, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[str]:
    """`python -m jeirt_lite ARGS` with the shell's `redirect` applied (what it leaves open is captured)."""
    script = f'exec "$0" -m jeirt_lite "$@" {redirect}'
    done = subprocess.run(["sh", "-c", script, sys.executable, *args], input=stdin, capture_output=True,
                          env=cli_env(), timeout=300)
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), done.stderr.decode())


@pytest.fixture(scope="module")
def bank(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bank") / "bank.csv"
    path.write_text(f"id,text\n1,{QUESTION}\n2,Who wrote Hamlet?\n")
    return path


@pytest.mark.parametrize("redirect", STDOUT_REDIRECTS)
@pytest.mark.parametrize("command", [["route", QUESTION], ["info"], ["score", "BANK", "--forecast"]])
def test_a_command_whose_job_is_to_print_fails_in_one_line_when_stdout_cannot_be_written(
    bank: Path, command: list[str], redirect: str
) -> None:
    done = _jeirt(redirect, *[str(bank) if word == "BANK" else word for word in command], "--threads", "1")
    assert done.returncode == 1, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == f"jeirt-lite: error: stdout: write error: {STRERROR[redirect]}", done.stderr
    assert "Traceback" not in done.stderr and len(lines) <= 2  # score adds how far it got


@pytest.mark.parametrize("redirect", STDOUT_REDIRECTS)
def test_score_to_a_file_writes_it_whole_when_stdout_cannot_be_written(
    bank: Path, tmp_path: Path, redirect: str
) -> None:
    output = tmp_path / "scores.csv"
    done = _jeirt(redirect, "score", str(bank), "-o", str(output), "--forecast", "--threads", "1")
    assert done.returncode == 0, done.stderr
    assert len(output.read_text().splitlines()) == 3
    assert f"jeirt-lite: note: stdout: write error: {STRERROR[redirect]}; what this command prints is dropped" in (
        done.stderr) and "Traceback" not in done.stderr


@NEEDS_FULL
def test_add_llm_writes_its_router_with_stdout_closed_and_stderr_full(tmp_path: Path) -> None:
    answers = tmp_path / "answers.csv"
    answers.write_text("text,correct\n" + "".join(f"Question {i} on topic {i % 7}?,{i % 2}\n" for i in range(40)))
    done = _jeirt(">&- 2>/dev/full", "add-llm", "--name", "new-llm", "--answers", str(answers),
                  "-o", str(tmp_path / "grown"), "--threads", "1")
    assert done.returncode == 0
    assert (tmp_path / "grown" / "router.json").is_file()


@pytest.mark.parametrize("redirect", ["2>&-", pytest.param("2>/dev/full", marks=NEEDS_FULL)])
def test_a_stderr_that_cannot_be_written_loses_the_notes_not_the_result_nor_the_failure(
    bank: Path, tmp_path: Path, redirect: str
) -> None:
    done = _jeirt(redirect, "route", QUESTION, "--threads", "1")
    assert done.returncode == 0 and done.stdout.startswith(f"{QUESTION}\n  1. ")
    output = tmp_path / "scores.csv"  # score prints its summary on stderr
    assert _jeirt(redirect, "score", str(bank), "-o", str(output), "--threads", "1").returncode == 0
    assert len(output.read_text().splitlines()) == 3
    assert _jeirt(redirect, "route", " ", "--threads", "1").returncode == 1
    assert _jeirt(redirect, "route", "--k", "0").returncode == 2


def test_a_descriptor_started_closed_is_no_number_a_later_file_gets() -> None:
    opened = "import os; from jeirt_lite.cli._stderr import reserve_closed_descriptors as r; r(); " \
             "raise SystemExit(os.open(os.devnull, os.O_RDONLY))"
    done = subprocess.run(["sh", "-c", '"$0" -c "$1" >&- 2>&-', sys.executable, opened], env=cli_env(), timeout=60)
    assert done.returncode > 2


def test_an_overlong_stdin_line_ends_in_one_line_naming_it() -> None:
    done = _jeirt("", "route", "--threads", "1", stdin=f"{QUESTION}\n".encode() + b"a" * (MAX_LINE_BYTES + 1))
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == (f"jeirt-lite: error: stdin line 2 is longer than {MAX_LINE_BYTES:,} bytes, the longest line "
                           "route reads (a router reads at most the first 1,048,576 characters of a text)\n")


def test_a_stderr_started_closed_has_no_descriptor_as_io_streams_say_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # ray.init enables faulthandler on sys.stderr, guarded against io.UnsupportedOperation (a stream without a
    # descriptor): the stand-in of a closed stderr raised AttributeError there, and `score --engine ray 2>&-` ended
    # in a traceback no one saw, exit 1, its output unwritten (tests/test_ray.py runs that command).
    monkeypatch.setattr(sys, "stderr", LossyStderr(None))
    with pytest.raises(io.UnsupportedOperation):
        faulthandler.enable()


@NEEDS_FULL
@pytest.mark.parametrize(
    "asked", [["--help"], ["--version"], ["route", "--help"], ["score", "--help"], ["train", "--help"]]
)
def test_help_and_version_that_reach_no_one_fail_in_one_line(asked: list[str]) -> None:
    # argparse dropped the failed write and exited 0, as if the text had been read; `train`, whose parser runs in
    # the command (with the stdout of a command whose result is a file), dropped it with a note.
    done = _jeirt(FULL, *asked)
    assert done.returncode == 1
    assert done.stderr == f"jeirt-lite: error: stdout: write error: {STRERROR[FULL]}\n"


def test_help_whose_reader_leaves_ends_quietly() -> None:
    script = 'set -o pipefail; "$0" -m jeirt_lite route --help | head -n 1'  # the status is jeirt-lite's
    done = subprocess.run(["bash", "-c", script, sys.executable], capture_output=True, env=cli_env(), timeout=120)
    assert done.stdout.decode().startswith("usage: jeirt-lite route")
    assert done.returncode == 0 and done.stderr == b""
