"""`jeirt-lite score --engine ray` as the terminal sees it, with `score_file_on_ray` replaced by a fake that records
what the command asks of it: the progress rule and `-q` of the local `score`, and how far a failed run got. No Ray
runtime starts here; tests/test_ray.py runs the command on a real one."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Optional

import pytest
from jeirt_lite._errors import JeirtError
from jeirt_lite.batch import ScoreState, ScoreSummary
from jeirt_lite.cli import main, score

pytest.importorskip("ray", reason='needs Ray: pip install "jeirt-lite[ray]"')

import jeirt_lite.ray_engine as engine  # noqa: E402 - after the skip: the module imports Ray


def fake_engine(
    monkeypatch: pytest.MonkeyPatch, run: Optional[Callable[[ScoreState], None]] = None
) -> list[dict[str, Any]]:
    """`score_file_on_ray` replaced: records its keyword arguments, then runs `run` on the state it was given (which
    may raise, as a failed run does) and returns an empty run's summary."""
    calls: list[dict[str, Any]] = []

    def score_file_on_ray(input_path: Any, **kwargs: Any) -> ScoreSummary:
        calls.append(kwargs)
        if run is not None:
            run(kwargs["state"])
        return ScoreSummary(rows=0, skipped=0, seconds=0.5, output=kwargs["output"])

    monkeypatch.setattr(engine, "score_file_on_ray", score_file_on_ray)
    return calls


@pytest.mark.parametrize(("terminal", "quiet", "progress"),
                         [(False, False, False), (True, False, True), (True, True, False), (False, True, False)])
def test_ray_progress_bars_follow_the_local_progress_line_s_rule_and_q_quiets_ray(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tiny_router_path: Path, tmp_path: Path,
    terminal: bool, quiet: bool, progress: bool,
) -> None:
    """Bars only on a terminal and without -q: a log file gets no redraws."""
    calls = fake_engine(monkeypatch)
    monkeypatch.setattr(score, "stderr_is_terminal", lambda: terminal)
    bank = tmp_path / "bank.parquet"
    bank.write_bytes(b"PAR1")  # the command checks the suffix and that it is a file; the fake reads nothing
    flags = ["-q"] if quiet else []
    code = main(["score", str(bank), "-o", str(tmp_path / "s.parquet"), "--router", str(tiny_router_path),
                 "--engine", "ray", *flags])
    assert code == 0, capsys.readouterr().err
    assert [(call["show_progress"], call["quiet"]) for call in calls] == [(progress, quiet)]


def failing_after(rows: int, started: bool = True) -> Callable[[ScoreState], None]:
    def run(state: ScoreState) -> None:
        state.workers_started, state.rows_scored = started, rows
        raise JeirtError("row with id 'q9': has no text (missing or null)")
    return run


@pytest.mark.parametrize(("rows", "started", "note"), [
    (0, True, "stopped before any row's scores came back from the Ray workers"),
    (80, True, "stopped after scoring 80 rows"),
    (0, False, "stopped before Ray started"),  # a check of the bank failed: no worker was given a row
])
def test_a_failed_ray_run_says_how_far_it_got_and_that_no_output_was_written(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tiny_router_path: Path, tmp_path: Path,
    rows: int, started: bool, note: str,
) -> None:
    fake_engine(monkeypatch, failing_after(rows, started))
    bank, output = tmp_path / "bank.parquet", tmp_path / "s.parquet"
    bank.write_bytes(b"PAR1")
    code = main(["score", str(bank), "-o", str(output), "--router", str(tiny_router_path), "--engine", "ray"])
    assert code == 1
    # The workers read the rows, so the driver cannot say how many were read: no "(of N read)".
    assert capsys.readouterr().err.splitlines() == [
        "jeirt-lite: error: row with id 'q9': has no text (missing or null)",
        f"jeirt-lite: {note}; no output was written ({output} left untouched)",
    ]


@pytest.mark.parametrize(("flags", "refusal"), [
    (["--vectors", "v.npy"], "--vectors runs on one machine"),
    (["bank.parquet", "--vectors", "v.npy"], "--vectors runs on one machine"),
    (["bank.parquet", "--ids", "ids.txt"], "--ids runs on one machine"),
])
def test_what_the_ray_engine_does_not_take_is_refused_not_ignored(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tiny_router_path: Path, tmp_path: Path,
    flags: list[str], refusal: str,
) -> None:
    """--vectors and --ids were dropped on the way to Ray: the bank was scored without them, or with no bank at
    all, the run ended in a TypeError's traceback."""
    calls = fake_engine(monkeypatch)
    monkeypatch.chdir(tmp_path)
    code = main(["score", *flags, "-o", "s.parquet", "--router", str(tiny_router_path), "--engine", "ray"])
    assert code == 2 and refusal in capsys.readouterr().err
    assert calls == []
