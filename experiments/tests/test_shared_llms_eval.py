"""experiments.shared_llms_eval: a router's predictions for the LLMs another dataset also holds, on its questions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from jeirt_lite import Router
from jeirt_lite._metrics import roc_auc
from jeirt_lite_training.data import load_dataset
from tiny_router import build_tiny_router

from experiments.shared_llms_eval import main, shared_llms, shared_metrics

TEXTS = ["what is the derivative of a function", "which court hears a contract law war", "how many prime number",
         "the acid base reaction in chemistry", "energy force mass velocity", "market price demand supply",
         "python code returns a list value", "the mind and memory in psychology"]


def _folder(root: Path) -> Path:
    """Eight questions answered by three LLMs, two of them named as the tiny router names them (differently spelt)."""
    root.mkdir()
    pd.DataFrame({"question_id": [f"q{i}" for i in range(8)], "benchmark": "b", "subject": "s",
                  "text": TEXTS}).to_csv(root / "questions.csv", index=False)
    pd.DataFrame({"model_id": ["m0", "m1", "m2"], "name": ["Model.A-1", "other", "model_b"]}).to_csv(
        root / "models.csv", index=False)
    rng = np.random.default_rng(0)
    rows = [(f"q{i}", m, int(rng.random() < 0.5)) for i in range(8) for m in ("m0", "m1", "m2")]
    rows[0] = ("q0", "m0", 1)
    rows[3] = ("q1", "m0", 0)  # both answers for LLM A, whatever the draw
    pd.DataFrame(rows, columns=["question_id", "model_id", "correct"]).to_csv(root / "responses.csv", index=False)
    return root


def test_names_match_without_case_and_punctuation() -> None:
    assert shared_llms(["model_a-1", "Model-B", "gone"], ["Model.A-1", "other", "model_b"]) == {
        "model_a-1": "Model.A-1", "Model-B": "model_b"}
    assert shared_llms(["x"], ["y"]) == {}


def test_the_scores_are_the_routers_probabilities_on_the_shared_llms_answers(tmp_path: Path) -> None:
    router = Router.load(build_tiny_router(tmp_path / "router", llm_names=["model_a-1", "Model-B", "gone"]))
    data = load_dataset(_folder(tmp_path / "data"))
    pairs = shared_llms(router.llms, data.llm_names)
    out = shared_metrics(router, data, pairs)
    assert set(out["per_llm"]) == {"model_a-1", "Model-B"} and all(v["answers"] == 8 for v in out["per_llm"].values())
    p = router.predict_proba(TEXTS)[:, 0]
    cells = data.responses.subset(data.responses.llm == data.llm_names.index("Model.A-1"))
    expected = roc_auc(cells.correct, p[cells.question])
    assert out["per_llm"]["model_a-1"]["auc"] == pytest.approx(expected)
    # Encoded before: the same scores.
    assert shared_metrics(router, data, pairs, router.encode(TEXTS)) == out
    with pytest.raises(ValueError, match="share no LLM"):
        shared_metrics(router, data, {})


def test_the_command_writes_one_record_per_router(tmp_path: Path) -> None:
    import json

    build_tiny_router(tmp_path / "router", llm_names=["model_a-1", "Model-B", "gone"])
    out = tmp_path / "shared.json"
    assert main(["--data", str(_folder(tmp_path / "data")), "--router", str(tmp_path / "router"), "--json", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["data"] == "data" and len(record["routers"]) == 1
    assert "with_votes" not in record["routers"][0]  # the tiny router has no votes
    assert record["routers"][0]["shared_llms"] == {"model_a-1": "Model.A-1", "Model-B": "model_b"}
    assert 0.0 <= record["routers"][0]["without_votes"]["pooled"]["auc"] <= 1.0
