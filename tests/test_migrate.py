"""`python -m jeirt_lite.migrate`: its options, and what it says of each folder (the conversion itself:
tests/test_artifact_tamper.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from jeirt_lite.migrate import main
from tiny_router import copy_router


def test_help_shows_an_example_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "usage: python -m jeirt_lite.migrate [-h] ROUTER_FOLDER [ROUTER_FOLDER ...]" in out
    assert "example:\n  python -m jeirt_lite.migrate ~/routers/my_router" in out


def test_no_folder_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main([])
    assert done.value.code == 2
    assert "the following arguments are required: ROUTER_FOLDER" in capsys.readouterr().err


def test_each_folder_is_reported_and_the_first_bad_one_stops_the_run(
    tiny_router_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    current = copy_router(tiny_router_path, tmp_path / "current")
    damaged = copy_router(tiny_router_path, tmp_path / "damaged")
    with open(damaged / "tokenizer.json", "a", encoding="utf-8") as handle:
        handle.write(" ")
    assert main([str(current), str(damaged), str(tmp_path / "never read")]) == 1
    captured = capsys.readouterr()
    assert captured.out == f"{current}: already in format 2\n"
    assert captured.err.startswith(f"python -m jeirt_lite.migrate: error: {damaged / 'tokenizer.json'}: sha256 ")
    assert (current / "router.json").read_bytes() == (tiny_router_path / "router.json").read_bytes()


def test_a_path_that_is_not_a_folder_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "file").write_text("x")
    for path in (tmp_path / "missing", tmp_path / "file"):
        assert main([str(path)]) == 1
        assert capsys.readouterr().err == f"python -m jeirt_lite.migrate: error: {path}: no router folder here\n"
