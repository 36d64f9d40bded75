"""experiments.onboarding_repeats on a slice of real data with the shipped router: three folds per draw, and folds
over repeated answers reporting a better cross-validated AUC than the LLM's other questions give."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from jeirt_lite import Router
from make_data_slice import write_slice

from experiments.onboarding_repeats import FOLDS, run

DATA = Path(__file__).resolve().parents[2] / "data" / "mmlu_pro"


def test_repeated_answers_over_answer_folds_report_memory(tmp_path: Path) -> None:
    data = write_slice(DATA, tmp_path / "slice", 50, seed=3)
    result = run(Router.load(threads=1), data, fraction=0.5, repeats=3, seeds=[0])
    assert result["draws"] >= 10 and len(result["rows"]) == result["draws"]
    assert all(set(FOLDS) <= set(row) for row in result["rows"])
    mean = result["mean"]
    assert mean["over answers"]["cv_auc"] > mean["grouped"]["cv_auc"] + 0.1
    assert np.isfinite([mean[f]["test_auc"] for f in FOLDS]).all()
