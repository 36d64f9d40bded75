"""Hostile command lines: numbers out of their bounds end in exit 2 and one message (never an out-of-memory kill
or a hang), and LLM names that hold commas can be passed to --llms."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jeirt_lite
import pytest
from jeirt_lite._limits import MAX_THREADS
from jeirt_lite.cli import main
from tiny_router import build_tiny_router

ODD_NAME = "gpt-4o-2024-05-13 (May-2024 run, eval_results/gpt4o)"


@pytest.fixture(scope="module")
def comma_router(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_router(tmp_path_factory.mktemp("routers") / "commas", llm_names=[ODD_NAME, "b", "c"])


def _routed(capsys: pytest.CaptureFixture[str], router: Path, *llms: str) -> set[str]:
    args = ["route", "what is the price", "--router", str(router), "--k", "2", "--json"]
    assert main([*args, *(arg for name in llms for arg in ("--llms", name))]) == 0
    return {entry["llm"] for entry in json.loads(capsys.readouterr().out)["route"]}


def test_a_name_with_commas_passes_whole_and_lists_still_split(
    comma_router: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _routed(capsys, comma_router, ODD_NAME, "c") == {ODD_NAME, "c"}
    assert _routed(capsys, comma_router, "b,c") == {"b", "c"}
    assert _routed(capsys, comma_router, "b", "c") == {"b", "c"}
    assert main(["route", "what is the price", "--router", str(comma_router), "--llms", "b,nope"]) == 2
    assert "unknown LLM 'nope'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["route", "q", "--threads", "1000000"], f"must be at most {MAX_THREADS}, got 1,000,000"),
        (["route", "q", "--threads", "0"], "must be at least 1"),
        (["route", "q", "--cost-weight", "nan"], "must be a finite number in [0, inf), got nan"),
        (["route", "q", "--cost-weight", "-1"], "must be a finite number in [0, inf), got -1"),
        (["route", "q", "--min-probability", "1.5"], "must be a finite number in [0, 1], got 1.5"),
        (["route", "q", "--k", "99999999999"], "must be at most"),
        (["score", "bank.csv", "-o", "x.csv", "--chunk-size", "10000000000"], "must be at most 1,048,576"),
        (["report", "--data", "d", "-o", "r.html", "--max-questions", "-1"], "must be at least 0, got -1"),
        (["add-llm", "--name", "x", "--answers", "a.csv", "-o", "r", "--cost", "inf"], "finite number"),
    ],
)
def test_numbers_out_of_bounds_exit_2_naming_the_option(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    assert main(args) == 2
    assert message in capsys.readouterr().err


def test_a_million_threads_is_refused_at_once_not_killed(tiny_router_path: Path) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(jeirt_lite.__file__).resolve().parents[1]), env.get("PYTHONPATH", "")]
    )
    done = subprocess.run(
        [sys.executable, "-m", "jeirt_lite", "route", "What is 2+2?", "--threads", "1000000",
         "--router", str(tiny_router_path)],
        capture_output=True, text=True, timeout=60, env=env, check=False,
    )
    assert done.returncode == 2 and "--threads" in done.stderr and "Traceback" not in done.stderr
