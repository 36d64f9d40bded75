"""`jeirt-lite score` in process: its defaults, --no-neighbours, when the progress line is drawn, and what it hands
to the Ray engine (a stand-in here, so that no Ray runtime starts) or refuses before it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from bank_files import read_csv_rows, write_csv_bank
from jeirt_lite import Router, batch
from jeirt_lite._io import writers
from jeirt_lite.batch import ScoreSummary
from jeirt_lite.cli import main
from jeirt_lite.cli import score as score_command

QUESTIONS = ["What is the derivative of x**3 at x = 2?", "Which court hears a contract dispute?", "Who wrote Hamlet?"]


@pytest.fixture
def bank(tmp_path: Path) -> Path:
    return write_csv_bank(tmp_path / "bank.csv", QUESTIONS)


def test_one_llm_per_question_by_default_and_no_neighbours_scores_without_the_votes(
    bank: Path, tmp_path: Path
) -> None:
    router = Router.load(threads=1)
    for flags, scorer in (([], router), (["--no-neighbours"], router.with_neighbours(None))):
        out = tmp_path / f"scores{len(flags)}.csv"
        assert main(["score", str(bank), "-o", str(out), "--threads", "1", "-q", *flags]) == 0
        rows = read_csv_rows(out)
        assert list(rows[0]) == ["id", "llm_1", "p_1", "difficulty"]
        expected = scorer.route(QUESTIONS, 1)
        assert [row["llm_1"] for row in rows] == [names[0] for names in expected.names]
        assert np.allclose([float(row["p_1"]) for row in rows], expected.probabilities[:, 0], rtol=0, atol=1e-6)
    assert read_csv_rows(tmp_path / "scores0.csv") != read_csv_rows(tmp_path / "scores1.csv")


@pytest.mark.parametrize("where", ["open", "write"])
def test_an_output_that_cannot_be_written_is_named_in_the_error_and_nothing_is_left(
    bank: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    # A read-only folder refuses the hidden temporary file (its error named that file, not the output); a full disk
    # fails a write (its error named no file at all: "[Errno 28] No space left on device").
    def read_only(path: Path, *args: Any) -> None:
        raise OSError(30, "Read-only file system", str(path))

    def full(self: Any, chunk: Any) -> None:
        raise OSError(28, "No space left on device")

    if where == "open":
        monkeypatch.setattr(batch, "open_writer", read_only)
    else:
        monkeypatch.setattr(writers.CsvWriter, "write", full)
    out = tmp_path / "scores.csv"
    assert main(["score", str(bank), "-o", str(out), "--threads", "1", "-q"]) == 1
    why = "Read-only file system" if where == "open" else "No space left on device"
    assert capsys.readouterr().err.splitlines()[0] == f"jeirt-lite: error: {out}: cannot write the output ({why})"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["bank.csv"]


@pytest.mark.parametrize(("terminal", "quiet", "drawn"), [(True, False, True), (True, True, False), (False, False, False)])
def test_the_progress_line_is_drawn_only_at_a_terminal_and_not_with_quiet(
    bank: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    terminal: bool, quiet: bool, drawn: bool,
) -> None:
    monkeypatch.setattr(score_command, "stderr_is_terminal", lambda: terminal)
    flags = ["-q"] if quiet else []
    assert main(["score", str(bank), "-o", str(tmp_path / "s.csv"), "--threads", "1", *flags]) == 0
    err = capsys.readouterr().err
    assert ("\r3 rows" in err) is drawn
    assert ("scored 3 questions" in err) is not quiet


class FakeRay:
    """Stands in for `ray_engine.score_file_on_ray`: records what it was given."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def __call__(self, input_path: Path, **kwargs: Any) -> ScoreSummary:
        self.calls.append({"input_path": input_path, **kwargs})
        return ScoreSummary(rows=3, skipped=0, seconds=1.0, output=kwargs["output"])


@pytest.mark.parametrize(
    ("flags", "threads", "address", "ship", "progress"),
    [(["--engine", "ray"], 1, None, False, True),
     (["--engine", "ray", "--threads", "3", "--address", "auto", "--ship-router", "-q"], 3, "auto", True, False)],
)
def test_engine_ray_hands_the_run_to_the_ray_engine(
    bank: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    flags: list[str], threads: int, address: str | None, ship: bool, progress: bool,
) -> None:
    pytest.importorskip("ray")
    from jeirt_lite import ray_engine

    fake = FakeRay()
    monkeypatch.setattr(ray_engine, "score_file_on_ray", fake)
    monkeypatch.setattr("jeirt_lite.cli.score.stderr_is_terminal", lambda: True)  # bars only on a terminal
    out = tmp_path / "s.parquet"
    assert main(["score", str(bank), "-o", str(out), "--k", "2", *flags]) == 0
    (call,) = fake.calls
    assert (call["input_path"], call["output"], call["options"].k) == (bank, out, 2)
    assert (call["threads_per_worker"], call["address"], call["ship_router"]) == (threads, address, ship)
    assert call["show_progress"] is progress
    assert ("scored 3 questions to " + str(out) + " on Ray in 1.00 s" in capsys.readouterr().err) is progress


@pytest.mark.parametrize(
    ("flags", "message"),
    [(["--address", "auto"], "--address goes with --engine ray"),
     (["--ship-router"], "--ship-router goes with --engine ray"),
     (["--engine", "ray", "--no-neighbours"], "--no-neighbours runs on one machine")],
)
def test_ray_options_without_the_ray_engine_are_refused_before_ray_is_imported(
    bank: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    flags: list[str], message: str,
) -> None:
    monkeypatch.setitem(sys.modules, "jeirt_lite.ray_engine", None)  # importing it would fail
    assert main(["score", str(bank), "-o", str(tmp_path / "s.parquet"), *flags]) == 2  # a usage error
    assert message in capsys.readouterr().err


def test_engine_ray_without_the_ray_extra_is_a_clear_error(
    bank: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "jeirt_lite.ray_engine", None)
    assert main(["score", str(bank), "-o", str(tmp_path / "s.parquet"), "--engine", "ray"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("jeirt-lite: error: ") and "Traceback" not in err
