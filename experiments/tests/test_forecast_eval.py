"""experiments.forecast_eval: the router's forecast of each shared LLM's accuracy on a bank, against the
accuracy found there and the one known from the reference data."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from jeirt_lite import Router
from jeirt_lite._training_questions import training_question_set
from jeirt_lite.artifact import load_artifact, save_artifact
from jeirt_lite_training.data import load_dataset
from tiny_router import build_tiny_router

from experiments.forecast_eval import evaluate, main, pair_order_agreement

TEXTS = ["what is the derivative of a function", "which court hears a contract law war",
         "how many prime number", "the acid base reaction in chemistry", "energy force mass velocity",
         "market price demand supply"]


def _folder(root: Path, answers: dict[str, list[int]], benchmarks: list[str]) -> Path:
    """The six questions, under `benchmarks`, answered by the named LLMs (-1: not answered)."""
    root.mkdir()
    pd.DataFrame({"question_id": [f"q{i}" for i in range(6)], "benchmark": benchmarks, "subject": "s",
                  "text": TEXTS}).to_csv(root / "questions.csv", index=False)
    pd.DataFrame({"model_id": [f"m{j}" for j in range(len(answers))], "name": list(answers)}).to_csv(
        root / "models.csv", index=False)
    rows = [(f"q{i}", f"m{j}", v)
            for j, values in enumerate(answers.values()) for i, v in enumerate(values) if v >= 0]
    responses = pd.DataFrame(rows, columns=["question_id", "model_id", "correct"])
    responses.to_csv(root / "responses.csv", index=False)
    return root


def test_pairs_are_counted_in_the_order_of_the_accuracies_found() -> None:
    assert pair_order_agreement([0.1, 0.2, 0.3], [0.5, 0.6, 0.7]) == 1.0
    assert pair_order_agreement([0.3, 0.2, 0.1], [0.5, 0.6, 0.7]) == 0.0
    assert pair_order_agreement([0.2, 0.2, 0.3], [0.5, 0.6, 0.7]) == pytest.approx(2.5 / 3)  # a tie: half
    assert pair_order_agreement([0.1, 0.2, 0.3], [0.5, 0.5, 0.7]) == 1.0  # a tie in accuracy is no pair
    assert np.isnan(pair_order_agreement([0.1, 0.2], [0.5, 0.5]))


def test_the_forecast_is_the_mean_probability_over_the_questions_each_llm_answered(tmp_path: Path) -> None:
    router = Router.load(build_tiny_router(tmp_path / "router", llm_names=["llm-a", "llm-b", "gone"]))
    answers = {"LLM_A": [1, 1, 0, -1, 1, 0], "llm.b": [0, 0, 0, 1, -1, -1]}  # named as the router does not
    bank = load_dataset(_folder(tmp_path / "bank", answers, ["x", "x", "y", "y", "y", "x"]))
    known = {"llm-a": [1] * 6, "llm-b": [1, 0, 0, 0, 0, 0]}
    reference = load_dataset(_folder(tmp_path / "ref", known, ["r"] * 6))
    result = evaluate(router, bank, reference, "benchmarks")
    p = router.predict_proba(TEXTS)
    a, b = result["llms"]
    assert (a["llm"], a["answers"], a["accuracy"]) == ("llm-a", 5, pytest.approx(3 / 5))
    assert a["forecast"] == pytest.approx(p[[0, 1, 2, 4, 5], 0].mean())
    mine = p[[0, 1, 2, 4, 5], 0].astype(np.float64)
    assert a["noise_floor"] == pytest.approx(np.sqrt(np.sum(mine * (1 - mine)) * 2 / np.pi) / 5)
    assert (a["reference_accuracy"], b["reference_accuracy"]) == (1.0, pytest.approx(1 / 6))
    assert b["forecast"] == pytest.approx(p[[0, 1, 2, 3], 1].mean())
    x_a, x_b = result["groups"]["x"]
    assert (x_a["answers"], x_a["accuracy"]) == (3, pytest.approx(2 / 3))
    assert x_a["forecast"] == pytest.approx(p[[0, 1, 5], 0].mean())
    assert (x_b["answers"], x_b["accuracy"]) == (2, 0.0)
    errors = [abs(a["forecast"] - 0.6), abs(b["forecast"] - 0.25)]
    assert result["scores"]["forecast_mae"] == pytest.approx(np.mean(errors))
    assert "reference_group_accuracy" not in x_a  # the reference holds other questions


def test_unseen_scores_the_questions_a_router_did_not_learn_from(tmp_path: Path) -> None:
    data = _folder(tmp_path / "data", {"llm-a": [1, 0, 1, 1, 0, 1], "llm-b": [0, 1, 0, 0, 1, 1]},
                   ["x", "y", "x", "y", "x", "y"])
    tiny = load_artifact(build_tiny_router(tmp_path / "tiny", llm_names=["llm-a", "llm-b"]))
    router_path = save_artifact(
        tmp_path / "router", llm_names=tiny.llm_names, llm_vectors=tiny.llm_vectors,
        tokenizer_json=tiny.tokenizer_path, encoder_onnx=tiny.encoder_path, encoder=tiny.encoder,
        training_questions=training_question_set(TEXTS[:4]))
    out = tmp_path / "out.json"
    assert main(["--data", str(data), "--reference", str(data), "--router", str(router_path), "--unseen",
                 "--json", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["questions"] == 2  # questions 5 and 6
    a = record["llms"][0]
    assert (a["accuracy"], a["reference_accuracy"]) == (0.5, 0.75)  # unseen: 0, 1; learned from: 1, 0, 1, 1
    assert record["groups"]["x"][0]["reference_group_accuracy"] == 1.0  # questions 1 and 3
