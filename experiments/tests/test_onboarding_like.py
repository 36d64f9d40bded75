"""experiments.onboarding_like: the groups cover every LLM once and span strong to weak, add_llm's own rule on a draw
is what add_llm fits, and the summary pairs every method with the logistic regression on the same draws."""

from __future__ import annotations

import numpy as np
import pytest
from jeirt_lite_training.types import Dataset, Responses

from experiments.onboarding_like import METHODS, evaluate, llm_groups, summary

N, D, P = 500, 6, 16


def _dataset(n_llms: int) -> Dataset:
    rng = np.random.default_rng(0)
    questions, llms = np.meshgrid(np.arange(200), np.arange(n_llms), indexing="ij")
    skill = np.linspace(0.9, 0.1, n_llms)  # LLM k's accuracy falls with k
    correct = (rng.random(questions.shape) < skill[llms]).astype(np.float32)
    ids = [f"q{i}" for i in range(200)]
    return Dataset("toy", ids, [f"question {i}" for i in range(200)], np.array(["b"] * 200),
                   np.array(["s"] * 200), [f"llm-{k}" for k in range(n_llms)],
                   Responses(questions.ravel(), llms.ravel(), correct.ravel()))


def test_the_groups_cover_every_llm_once_and_span_strong_to_weak() -> None:
    groups = llm_groups(_dataset(12), 4)
    assert sorted(k for g in groups for k in g) == list(range(12))
    assert all(len(g) == 3 for g in groups)
    # Dealt in order of accuracy: every group holds one of the four strongest and one of the four weakest.
    assert all(min(g) < 4 and max(g) >= 8 for g in groups), groups


@pytest.fixture(scope="module")
def draw() -> dict[str, object]:
    rng = np.random.default_rng(1)
    q = rng.standard_normal((N, D))
    f = rng.standard_normal((N, P))
    y = (rng.random(N) < 1 / (1 + np.exp(-(q[:, 0] + 2.0 * f[:, 0])))).astype(np.float64)
    given, scored = np.arange(250), np.arange(250, N)
    flags = np.zeros(N, dtype=bool)  # none in distribution: add_llm averages its fits
    return evaluate(q, f, np.zeros(D), flags, given, y[given], scored, y[scored], 0)


def test_the_hybrid_rule_on_a_draw_is_add_llm(draw: dict[str, object]) -> None:
    assert set(METHODS) <= set(draw)
    assert draw["like_router"] is False
    assert draw["hybrid"]["auc"] == pytest.approx(draw["add_llm"]["auc"], abs=1e-6)  # type: ignore[index]
    # The features carry most of the signal: the correction beats the vector alone, the regression reads them too.
    assert draw["add_llm"]["auc"] > draw["vector"]["auc"] + 0.05  # type: ignore[index]
    assert draw["logistic"]["auc"] > draw["vector"]["auc"]  # type: ignore[index]


def test_the_summary_pairs_each_method_with_the_logistic_regression() -> None:
    def row(fraction: float, auc: dict[str, float]) -> dict[str, object]:
        return {"fraction": fraction, "like_router": True, "in_distribution": 0.9,
                **{m: {"auc": auc.get(m, 0.6), "log_loss": 0.5} for m in METHODS}}

    rows = [row(0.1, {"add_llm": 0.70, "logistic": 0.65}), row(0.1, {"add_llm": 0.66, "logistic": 0.67}),
            row(0.25, {"add_llm": 0.8})]
    out = summary(rows)
    assert set(out) == {"0.1", "0.25"} and out["0.1"]["draws"] == 2 and out["0.1"]["like_router"] == 2
    diff = out["0.1"]["add_llm_minus_logistic"]
    assert diff["auc"] == pytest.approx(0.02) and diff["auc_above"] == 1
    assert diff["auc_se"] == pytest.approx(np.std([0.05, -0.01], ddof=1) / np.sqrt(2))
    assert "logistic_minus_logistic" not in out["0.1"]
