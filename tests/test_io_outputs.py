"""Where outputs go, on their own (jeirt_lite._io.outputs): which leftover partial files a new run removes, an output
that is a folder or has no folder, and outputs that are inputs under another name. tests/test_io_hostile.py kills a
real run to leave a partial file; tests/test_batch.py interrupts one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from jeirt_lite import JeirtError
from jeirt_lite._io import outputs
from jeirt_lite._io.outputs import (
    atomic_output,
    check_output_path,
    partial_path,
    refuse_inputs,
    remove_stale_partials,
)


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_only_the_partial_files_of_dead_runs_to_the_same_output_are_removed(tmp_path: Path) -> None:
    output = tmp_path / "scores.parquet"
    dead = _dead_pid()
    dead_main = tmp_path / f".scores.parquet.partial-{dead}"
    dead_widened = tmp_path / f".scores.parquet.partial-{dead}.text-ids"  # the Parquet writer's side file
    mine = partial_path(output)
    kept = [
        mine,  # this process's own run
        Path(f"{mine}.text-ids"),
        tmp_path / ".scores.parquet.partial-notapid",
        tmp_path / f".other.parquet.partial-{dead}",  # another output's
        tmp_path / f"scores.parquet.partial-{dead}",  # not hidden: not ours
    ]
    for path in [dead_main, dead_widened, *kept]:
        path.write_text("x")
    assert sorted(remove_stale_partials(output)) == sorted([dead_main, dead_widened])
    assert all(path.exists() for path in kept) and not dead_main.exists() and not dead_widened.exists()


def test_a_live_run_keeps_its_file_and_is_only_asked_whether_it_exists(tmp_path: Path) -> None:
    output = tmp_path / "scores.csv"
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        theirs = tmp_path / f".scores.csv.partial-{alive.pid}"
        theirs.write_text("a run still going")
        assert remove_stale_partials(output) == [] and theirs.exists()
        with pytest.raises(subprocess.TimeoutExpired):  # signal 0 delivers nothing: any other would end it
            alive.wait(timeout=0.5)
    finally:
        alive.kill()
        alive.wait()


def test_a_process_that_cannot_be_asked_about_keeps_its_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(pid: int, signal: int) -> None:
        raise PermissionError(1, "Operation not permitted")  # a live process of another user

    output = tmp_path / "scores.csv"
    theirs = tmp_path / f".scores.csv.partial-{_dead_pid()}"
    theirs.write_text("x")
    monkeypatch.setattr(outputs.os, "kill", refused)
    assert remove_stale_partials(output) == [] and theirs.exists()


def test_a_missing_output_folder_has_no_partials_and_is_refused(tmp_path: Path) -> None:
    output = tmp_path / "nowhere" / "scores.csv"
    assert remove_stale_partials(output) == []
    with pytest.raises(JeirtError, match=r"nowhere: no such folder for the output"):
        check_output_path(output, [])


def test_an_output_that_is_a_folder_is_told_a_file_name(tmp_path: Path) -> None:
    folder = tmp_path / "out.csv"
    folder.mkdir()
    with pytest.raises(JeirtError, match=r"out\.csv: is a folder; give a file name such as .*out\.csv/scores\.parquet"):
        check_output_path(folder, [])


def test_an_output_that_is_an_input_under_another_name_is_refused(tmp_path: Path) -> None:
    bank = tmp_path / "bank.csv"
    bank.write_text("text\nWhat is 7 * 8?\n")
    (tmp_path / "hard.csv").hardlink_to(bank)
    (tmp_path / "soft.csv").symlink_to(bank)
    (tmp_path / "sub").mkdir()
    for output in (bank, tmp_path / "hard.csv", tmp_path / "soft.csv", tmp_path / "sub" / ".." / "bank.csv"):
        with pytest.raises(JeirtError, match=r"is also the input .*bank\.csv; write the output to another path"):
            check_output_path(output, [bank])
    assert check_output_path(tmp_path / "scores.csv", [bank]) == "csv"
    refuse_inputs(tmp_path, [None, bank])  # a folder written beside its input, not over it
    with pytest.raises(JeirtError, match=r"holds the input .*bank\.csv, which writing it would delete"):
        refuse_inputs(tmp_path, [None, bank], replaces_folder=True)


def test_a_failed_write_leaves_the_previous_output_and_no_partial(tmp_path: Path) -> None:
    output = tmp_path / "scores.csv"
    output.write_text("the previous run's\n")
    with pytest.raises(RuntimeError, match="midway"), atomic_output(output) as temporary:
        temporary.write_text("half")
        raise RuntimeError("midway")
    assert output.read_text() == "the previous run's\n" and not temporary.exists()
    with atomic_output(output) as temporary:
        temporary.write_text("new\n")
    assert output.read_text() == "new\n" and not temporary.exists() and os.listdir(tmp_path) == ["scores.csv"]
