"""The onboarding comparison's baselines (experiments.onboarding_methods.fit_baseline, experiments.onboarding_ood's
--baseline-features and --logistic-care): they read the features given for them, the logistic regression's care
widens its grid, frees its intercept and chooses its standardisation, and each row records what was chosen."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from jeirt_lite._metrics import log_loss, roc_auc

from experiments.onboarding_methods import (
    KNN_K,
    LOGISTIC_CARES,
    LOGISTIC_STRENGTHS,
    SAME_CARE_STRENGTHS,
    SCALINGS,
    fit_baseline,
    fit_method,
)
from experiments.onboarding_ood import Baselines, baselines_for, evaluate_draw, main, summary
from experiments.onboarding_tables import baselines_table, paired

N, D, P = 600, 8, 24
GIVEN, SCORED = np.arange(0, 240), np.arange(240, N)


def _unit(x: np.ndarray) -> np.ndarray:
    unit: np.ndarray = x / np.linalg.norm(x, axis=1, keepdims=True)
    return unit


@pytest.fixture(scope="module")
def world() -> dict[str, np.ndarray]:
    """Question vectors and router features that say nothing about the answers; MiniLM-like unit features whose
    first direction decides them."""
    rng = np.random.default_rng(0)
    minilm = _unit(rng.standard_normal((N, P)) + np.eye(P)[0] * 0.5)
    y = (rng.random(N) < 1 / (1 + np.exp(-12.0 * (minilm[:, 0] - minilm[:, 0].mean())))).astype(np.float64)
    return {"q": rng.standard_normal((N, D)), "f": _unit(rng.standard_normal((N, P))), "minilm": minilm, "y": y}


def _draw(world: dict[str, np.ndarray], baselines: Baselines) -> dict[str, dict[str, Any]]:
    y = world["y"]
    return evaluate_draw(world["q"], world["f"], np.zeros(D), GIVEN, y[GIVEN], SCORED, y[SCORED], 0,
                         baselines=baselines)


@pytest.mark.parametrize("care", LOGISTIC_CARES)
def test_the_baselines_read_the_features_given_for_them(world: dict[str, np.ndarray], care: str) -> None:
    on_minilm = _draw(world, Baselines(world["minilm"], care))
    on_router = _draw(world, Baselines(None, care))
    for method, bar in (("logistic", 0.8), ("knn", 0.7)):
        assert on_minilm[method]["auc"] > bar, (method, on_minilm[method])
        assert on_router[method]["auc"] < 0.6, (method, on_router[method])
    # add_llm and the vector read the router's side whatever the baselines read.
    for method in ("vector", "add_llm"):
        assert on_minilm[method]["auc"] == on_router[method]["auc"]


def test_each_row_records_the_setting_each_baseline_chose(world: dict[str, np.ndarray]) -> None:
    published = _draw(world, Baselines(world["minilm"], "published"))
    assert set(published["logistic"]["chosen"]) == {"strength"}
    assert published["logistic"]["chosen"]["strength"] in LOGISTIC_STRENGTHS
    assert published["knn"]["chosen"]["k"] in KNN_K
    same = _draw(world, Baselines(world["minilm"], "same"))["logistic"]["chosen"]
    assert same["scaling"] in SCALINGS and same["strength"] in SAME_CARE_STRENGTHS
    averaged = _draw(world, Baselines(world["minilm"], "same_average"))["logistic"]["chosen"]
    fits = averaged["fits"]
    assert sum(fit["weight"] for fit in fits) == pytest.approx(1.0, abs=1e-3)
    assert fits[0]["weight"] == max(fit["weight"] for fit in fits)
    assert (averaged["scaling"], averaged["strength"]) == (fits[0]["scaling"], fits[0]["strength"])
    assert "chosen" not in published["vector"] and "chosen" not in published["add_llm"]


def test_the_summary_counts_the_choices_and_pairs_add_llm_with_each_baseline(world: dict[str, np.ndarray]) -> None:
    rows: list[dict[str, Any]] = [{"llm": "a", "seed": 0, **_draw(world, Baselines(world["minilm"], "same"))}]
    rows.append({"llm": "b", "seed": 0, **_draw(world, Baselines(None, "same"))})
    out = summary(rows)["all"]
    assert sum(out["logistic_chosen"].values()) == 2 and sum(out["knn_chosen"].values()) == 2
    assert all(key.startswith("scaling=") for key in out["logistic_chosen"])
    diff = [row["add_llm"]["auc"] - row["logistic"]["auc"] for row in rows]
    assert out["add_llm_minus_logistic"]["auc"] == pytest.approx(np.mean(diff))
    assert out["add_llm_minus_logistic"]["auc_above"] == sum(d > 0 for d in diff)


def test_paired_gives_the_mean_difference_its_standard_error_and_the_draws_above() -> None:
    rows = [{"a": {"auc": 0.7, "log_loss": 0.5}, "b": {"auc": 0.6, "log_loss": 0.6}},
            {"a": {"auc": 0.9, "log_loss": 0.4}, "b": {"auc": 0.6, "log_loss": 0.4}}]
    out = paired(rows, "a", "b")
    assert out["auc"] == pytest.approx(0.2) and out["auc_se"] == pytest.approx(0.1)
    assert out["log_loss"] == pytest.approx(-0.05) and out["auc_above"] == 2


def test_the_published_logistic_regression_is_unchanged(world: dict[str, np.ndarray]) -> None:
    """The default rows of docs/results/ stay reproducible: fit_method's logistic is the published care."""
    f, y = world["minilm"], world["y"]
    old = fit_method("logistic", world["q"][GIVEN], f[GIVEN], y[GIVEN], np.zeros(D), 3)
    new, _ = fit_baseline("logistic", f[GIVEN], y[GIVEN], 3)
    np.testing.assert_array_equal(old(world["q"][SCORED], f[SCORED]), new(world["q"][SCORED], f[SCORED]))


def test_same_care_frees_the_intercept() -> None:
    """On features that say nothing, a penalised intercept is held short of the base rate (the published fit trades
    a weaker penalty for it, fitting noise); add_llm's free intercept, which the same care gets, keeps it."""
    rng = np.random.default_rng(1)
    f, y = _unit(rng.standard_normal((600, P))), (rng.random(600) < 0.85).astype(np.float64)
    train, new = slice(0, 300), slice(300, 600)
    published, _ = fit_baseline("logistic", f[train], y[train], 0, "published")
    same, _ = fit_baseline("logistic", f[train], y[train], 0, "same")
    assert np.mean(same(f[new], f[new])) == pytest.approx(y[train].mean(), abs=0.01)
    assert np.mean(published(f[new], f[new])) < y[train].mean() - 0.03
    assert log_loss(y[new], same(f[new], f[new])) < log_loss(y[new], published(f[new], f[new])) - 0.02


def test_same_care_chooses_per_feature_scaling_where_the_signal_is_in_a_narrow_feature() -> None:
    """One feature of a hundredth of the others' spread carries the answers: global scaling leaves it almost
    unusable under the penalty, per-feature standardisation does not."""
    rng = np.random.default_rng(2)
    f = rng.standard_normal((400, P))
    f[:, 0] *= 0.01
    y = (rng.random(400) < 1 / (1 + np.exp(-300.0 * f[:, 0]))).astype(np.float64)
    same, chosen = fit_baseline("logistic", f[:200], y[:200], 0, "same")
    published, _ = fit_baseline("logistic", f[:200], y[:200], 0, "published")
    assert chosen["scaling"] == "per_feature"
    assert roc_auc(y[200:], same(f[200:], f[200:])) > roc_auc(y[200:], published(f[200:], f[200:])) + 0.05


def test_bad_values_are_refused_with_the_choices() -> None:
    f, y = np.eye(12), np.tile([0.0, 1.0], 6)
    with pytest.raises(ValueError, match="unknown logistic care 'careful'; choose from published, same, same_average"):
        fit_baseline("logistic", f, y, 0, "careful")
    with pytest.raises(ValueError, match="unknown baseline 'svm'"):
        fit_baseline("svm", f, y, 0)
    with pytest.raises(SystemExit, match="unknown baseline features 'bert'; choose from encoder, minilm"):
        baselines_for("bert", "same", None)
    with pytest.raises(SystemExit, match="unknown logistic care 'careful'"):
        baselines_for("minilm", "careful", None)


@pytest.mark.parametrize("option", ["--baseline-features", "--logistic-care"])
def test_the_command_line_refuses_a_bad_value_naming_the_choices(
    option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--data", "data/none", "--out", "none.json", option, "nonsense"])
    assert exit_info.value.code == 2
    assert f"argument {option}: invalid choice: 'nonsense'" in capsys.readouterr().err


def _result(features: str | None, logistic_auc: float, add_llm_auc: float = 0.7) -> dict[str, Any]:
    setup = {"data": "d"} if features is None else {"data": "d", "baseline_features": features, "logistic_care": "same"}
    cell = {"auc": 0.6, "log_loss": 0.5}
    rows = [{"llm": llm, "seed": 0, "vector": cell, "add_llm": {"auc": add_llm_auc, "log_loss": 0.45},
             "logistic": {"auc": logistic_auc + shift, "log_loss": 0.5}, "knn": cell}
            for llm, shift in (("a", 0.0), ("b", 0.1))]
    return {"setup": setup, "rows": rows}


def test_the_baselines_table_pairs_runs_on_the_same_draws() -> None:
    table = baselines_table([_result(None, 0.6), _result("minilm", 0.66)])
    assert "| logistic regression, the router's features, published care | 0.6500 | 0.5000 | +0.0500 ± 0.0500 |" in table
    assert "| logistic regression, MiniLM embeddings, same care | 0.7100 | 0.5000 | -0.0100 ± 0.0500 | -0.0500" in table
    assert table.endswith("| cosine KNN, MiniLM embeddings | 0.6000 | 0.5000 | +0.1000 ± 0.0000 | -0.0500 ± 0.0000 | 2/2 |")
    with pytest.raises(SystemExit, match="cannot be paired"):
        baselines_table([_result(None, 0.6), _result("minilm", 0.6, add_llm_auc=0.71)])


def test_in_distribution_only_draws_from_the_flagged_questions(world: dict[str, np.ndarray]) -> None:
    from jeirt_lite_training.types import Dataset, Responses

    from experiments.onboarding_ood import out_of_domain

    y = world["y"]
    questions = np.tile(np.arange(N), 2)
    data = Dataset("toy", [f"q{i}" for i in range(N)], [f"text {i}" for i in range(N)], np.array(["b"] * N),
                   np.array(["s"] * N), ["a", "b"], Responses(questions, np.repeat([0, 1], N), np.tile(y, 2)))
    flags = np.arange(N) < 300
    every = out_of_domain(data, world["q"], world["f"], np.zeros(D), 0.1, [0], flags)
    flagged = out_of_domain(data, world["q"], world["f"], np.zeros(D), 0.1, [0], flags, flagged_only=True)
    assert [row["answers"] for row in every] == [60, 60] and [row["answers"] for row in flagged] == [30, 30]
    with pytest.raises(ValueError, match="needs the router's flags"):
        out_of_domain(data, world["q"], world["f"], np.zeros(D), 0.1, [0], None, flagged_only=True)


def test_in_distribution_only_is_refused_in_domain(capsys: pytest.CaptureFixture[str]) -> None:
    from experiments import onboarding_weighting

    with pytest.raises(SystemExit) as exit_info:
        main(["--data", "data/none", "--out", "none.json", "--held-out", "--in-distribution-only"])
    assert exit_info.value.code == 2 and "not --held-out" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        onboarding_weighting.main(["--setup", "in_domain", "--seeds", "1", "--out", "none.json",
                                   "--in-distribution-only"])
    assert exit_info.value.code == 2 and "out-of-domain setups" in capsys.readouterr().err
