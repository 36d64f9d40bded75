"""What a command prints that its stream's encoding cannot take: an emoji of a question on an ASCII locale's
stdout (LC_ALL=C without Python's UTF-8 mode), a router's label holding a byte that is not UTF-8 (a lone
surrogate) on a strict one (PYTHONIOENCODING=utf-8:strict). Each is printed as JSON's escape of it,
`\\ud83d\\ude00`, so the command still prints its result (and a JSON line stays JSON); it ended in a
traceback."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import pytest
from child_env import cli_env
from jeirt_lite.cli._stderr import LossyStderr
from jeirt_lite.cli._stdout import FailsInOneLine, OutlivesItsReader
from tiny_router import copy_router, edit_and_reseal

QUESTION = "What is 7 * 8? \U0001f600"
SHOWN = "What is 7 * 8? \\ud83d\\ude00"  # as JSON escapes it
LABEL = "caf\udcff"  # b"caf\xff" from the command line, as os.fsdecode keeps it
ASCII = {"LC_ALL": "C", "PYTHONUTF8": "0"}  # Python's UTF-8 mode, on by default in the C locale, off
STRICT = {"PYTHONIOENCODING": "utf-8:strict"}


def _jeirt(locale: dict[str, str], *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    unset = ("PYTHONIOENCODING", "PYTHONUTF8", "LANG")
    env = {name: value for name, value in cli_env().items() if name not in unset}
    done = subprocess.run([sys.executable, "-m", "jeirt_lite", *args, "--threads", "1"], input=stdin.encode(),
                          capture_output=True, env={**env, **locale}, timeout=300)
    stdout = done.stdout.decode("ascii")  # every character the stream lacked is escaped
    assert "Traceback" not in done.stderr.decode(errors="replace"), done.stderr
    assert done.returncode == 0, done.stderr
    return subprocess.CompletedProcess(done.args, 0, stdout, done.stderr.decode(errors="replace"))


def test_route_prints_a_question_with_an_emoji_on_an_ascii_locale(tiny_router_path: Path) -> None:
    done = _jeirt(ASCII, "route", "--router", str(tiny_router_path), stdin=QUESTION + "\n")
    assert done.stdout.startswith(f"{SHOWN}\n  1. ")


def test_route_json_on_an_ascii_locale_is_json_of_the_same_text(tiny_router_path: Path) -> None:
    done = _jeirt(ASCII, "route", "--json", "--router", str(tiny_router_path), stdin=QUESTION + "\n")
    assert json.loads(done.stdout)["text"] == QUESTION


def test_score_forecast_by_prints_a_group_with_an_emoji_on_an_ascii_locale(
    tiny_router_path: Path, tmp_path: Path
) -> None:
    bank = tmp_path / "bank.csv"
    rows = "1,what is an acid,bio \U0001f600\n2,who wrote it,history\n"
    bank.write_text(f"id,text,subject\n{rows}", encoding="utf-8")
    done = _jeirt(ASCII, "score", str(bank), "--forecast-by", "subject", "--router", str(tiny_router_path))
    assert "bio \\ud83d\\ude00" in done.stdout


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_info_prints_a_label_holding_a_byte_that_is_not_utf8_on_a_strict_stdout(
    tiny_router_path: Path, tmp_path: Path, json_flag: list[str]
) -> None:
    folder = copy_router(tiny_router_path, tmp_path / "labelled")
    edit_and_reseal(folder, lambda manifest: manifest.update(label=LABEL))
    done = _jeirt(STRICT, "info", *json_flag, "--router", str(folder))
    if json_flag:
        assert json.loads(done.stdout)["label"] == LABEL
    else:
        assert "caf\\udcff" in done.stdout


def _ascii_stream() -> tuple[io.BytesIO, io.TextIOWrapper]:
    raw = io.BytesIO()
    return raw, io.TextIOWrapper(raw, encoding="ascii", errors="strict")


@pytest.mark.parametrize("wrap", [FailsInOneLine, OutlivesItsReader, LossyStderr])
def test_each_stand_in_of_a_standard_stream_escapes_what_its_encoding_lacks(
    wrap: Callable[[Any], Any]
) -> None:
    # LossyStderr dropped the whole message (a UnicodeEncodeError is a ValueError); the others raised it.
    raw, stream = _ascii_stream()
    wrap(stream).write("caf\u00e9\n")
    stream.flush()
    assert raw.getvalue() == b"caf\\u00e9\n"

