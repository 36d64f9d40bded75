"""Baselines on a small synthetic world where the truth is known, plus the 2PL diagnostic and the harness."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from jeirt_lite._metrics import log_loss, roc_auc
from jeirt_lite_training.splits import make_split
from jeirt_lite_training.types import Dataset, Responses

from experiments.baselines import EmbedLlmMF, KnnPerLlm, LlmAccuracy, TextMirt, TwoPL, fit_2pl
from experiments.baselines.irt2pl import subject_order_flips
from experiments.baselines.llm_accuracy import smoothed_llm_accuracy
from experiments.baselines.torch_fit import FitSettings
from experiments.compare import run_comparison, subset_questions, to_markdown

N_Q, N_LLM, DIM = 900, 12, 16


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def world() -> tuple[Dataset, np.ndarray]:
    """Questions in two topics; LLMs good at one or the other, plus an overall skill; 10% of cells missing."""
    rng = np.random.default_rng(0)
    topic = rng.integers(0, 2, N_Q)
    emb = rng.standard_normal((N_Q, DIM)).astype(np.float32) * 0.5
    emb[:, 0] += np.where(topic == 1, 1.5, -1.5)  # the topic is visible in the embedding
    difficulty = emb[:, 1] * 1.5
    skill = rng.normal(0, 1, N_LLM)
    topic_pref = rng.choice([-1.5, 1.5], N_LLM)
    logit = skill[None, :] + topic_pref[None, :] * np.where(topic == 1, 1, -1)[:, None] - difficulty[:, None]
    y = (rng.random((N_Q, N_LLM)) < 1 / (1 + np.exp(-logit))).astype(np.float32)
    q, m = np.nonzero(rng.random((N_Q, N_LLM)) > 0.1)
    subjects = np.where(topic == 1, "one", "two")
    data = Dataset("syn", [str(i) for i in range(N_Q)], [f"text {i}" for i in range(N_Q)], subjects, subjects,
                   [f"llm{k}" for k in range(N_LLM)], Responses(q.astype(np.int64), m.astype(np.int64), y[q, m]))
    return data, emb


def parts(data: Dataset) -> tuple[Responses, Responses, Responses]:
    split = make_split(data, seed=0)
    return split.responses(data, "train"), split.responses(data, "val"), split.responses(data, "test")


FAST = FitSettings(max_epochs=30, patience=3, batch_size=512, lr=5e-3)


def test_llm_accuracy_floor(world: tuple[Dataset, np.ndarray]) -> None:
    data, emb = world
    train, val, test = parts(data)
    model = LlmAccuracy().fit(emb, train, val, data.n_llms)
    p = model.predict_proba(emb, test.question, test.llm)
    per_llm = np.bincount(train.llm, train.correct, N_LLM) / np.bincount(train.llm, minlength=N_LLM)
    assert np.allclose(p, smoothed_llm_accuracy(train, N_LLM, model.strength)[test.llm])
    assert np.abs(smoothed_llm_accuracy(train, N_LLM, 0.0) - per_llm).max() < 1e-3
    assert roc_auc(test.correct, p) > 0.55  # skill differs between LLMs
    # An LLM with no training cells gets the global rate.
    empty = Responses(train.question[train.llm != 0], train.llm[train.llm != 0], train.correct[train.llm != 0])
    assert smoothed_llm_accuracy(empty, N_LLM, 1.0)[0] == pytest.approx(empty.correct.mean())


@pytest.mark.parametrize("make", [lambda: KnnPerLlm(),
                                  lambda: EmbedLlmMF(grid=({"dim": 16, "dropout": 0.0},), settings=FAST),
                                  lambda: TextMirt(grid=({"dim": 2},), settings=FAST)],
                         ids=["knn", "embedllm_mf", "mirt_text"])
def test_text_baselines_beat_the_floor(world: tuple[Dataset, np.ndarray], make) -> None:  # type: ignore[no-untyped-def]
    data, emb = world
    train, val, test = parts(data)
    floor = LlmAccuracy().fit(emb, train, val, N_LLM).predict_proba(emb, test.question, test.llm)
    model = make().fit(emb, train, val, N_LLM)
    p = model.predict_proba(emb, test.question, test.llm)
    assert p.shape == (len(test),) and np.all((p >= 0) & (p <= 1))
    assert roc_auc(test.correct, p) > roc_auc(test.correct, floor) + 0.05  # the topic signal is learnable
    assert log_loss(test.correct, p) < log_loss(test.correct, floor)


def test_knn_uses_only_cells_each_llm_answered() -> None:
    # Two training questions identical in embedding; LLM 0 answered only the first (correct), LLM 1 only the second.
    emb = np.array([[1, 0], [1, 0], [0, 1], [1, 0.01]], dtype=np.float32)
    train = Responses(np.array([0, 1, 2, 2]), np.array([0, 1, 0, 1]), np.array([1, 0, 0, 1], np.float32))
    val = Responses(np.array([3, 3]), np.array([0, 1]), np.array([1, 0], np.float32))
    knn = KnnPerLlm(k_grid=(1,), alpha_grid=(1e-6,), tau_grid=(None,)).fit(emb, train, val, 2)
    p = knn.predict_proba(emb, np.array([3, 3]), np.array([0, 1]))
    assert p == pytest.approx([1.0, 0.0], abs=1e-4)


def test_2pl_recovers_negative_items_and_refuses_unseen() -> None:
    rng = np.random.default_rng(1)
    n_items, n_llms = 400, 40
    a = rng.uniform(0.8, 2.0, n_items)
    a[:40] = -1.5  # 10% of items favour the weaker LLMs
    theta = rng.standard_normal(n_llms)
    b = rng.normal(0, 1, n_items)
    q, m = np.meshgrid(np.arange(n_items), np.arange(n_llms), indexing="ij")
    q, m = q.ravel(), m.ravel()
    y = (rng.random(q.size) < 1 / (1 + np.exp(-(a[q] * theta[m] - b[q])))).astype(np.float32)
    fit = fit_2pl(Responses(q, m, y), n_llms)
    assert 0.07 <= fit.share_negative() <= 0.13
    assert np.corrcoef(fit.theta, theta)[0, 1] > 0.95
    assert np.mean(fit.a[:40] < 0) > 0.9
    model = TwoPL().fit(np.zeros((n_items + 1, 1)), Responses(q, m, y), Responses(q[:0], m[:0], y[:0]), n_llms)
    assert model.predict_proba(np.zeros(1), np.array([3]), np.array([0])).shape == (1,)
    with pytest.raises(ValueError, match="seen in training"):
        model.predict_proba(np.zeros(1), np.array([n_items]), np.array([0]))


def test_subject_flips(world: tuple[Dataset, np.ndarray]) -> None:
    data, _ = world
    flips = subject_order_flips(data, data.responses)
    assert flips["pairs"] == N_LLM * (N_LLM - 1) // 2
    assert 0 < flips["flipping_pairs"] <= flips["pairs"]  # opposite topic preferences flip many pairs
    assert len(flips["examples"]) == min(5, flips["flipping_pairs"])


def test_harness_runs_any_predictor_list(world: tuple[Dataset, np.ndarray]) -> None:
    data, emb = world
    small = subset_questions(data, np.arange(0, N_Q, 2))
    assert small.n_questions == N_Q // 2 and set(small.responses.question.tolist()) <= set(range(N_Q // 2))
    result = run_comparison(small, make_split(small), emb[::2], [LlmAccuracy(), KnnPerLlm()], log=lambda s: None)
    assert list(result["methods"]) == ["llm_accuracy", "knn"]
    assert set(result["methods"]["knn"]["test"]["by_subject"]) == {"one", "two"}
    assert "k" in result["methods"]["knn"]["tuned"]
    assert "by_benchmark" not in result["methods"]["knn"]["test"]  # benchmarks equal subjects here
    text = to_markdown(result)
    assert "| knn |" in text and "per subject" in text
    two_benchmarks = Dataset(small.name, small.question_ids, small.texts,
                             np.where(np.arange(small.n_questions) % 2 == 0, "b1", "b2"), small.subjects,
                             small.llm_names, small.responses)
    result = run_comparison(two_benchmarks, make_split(two_benchmarks), emb[::2], [LlmAccuracy()], log=lambda s: None)
    assert set(result["methods"]["llm_accuracy"]["test"]["by_benchmark"]) == {"b1", "b2"}
    assert "per benchmark" in to_markdown(result)
    with pytest.raises(ValueError, match="rows"):
        run_comparison(small, make_split(small), emb, [LlmAccuracy()], log=lambda s: None)


def _compare_cli(tmp_path: Path, *args: str) -> dict[str, Any]:
    """Run experiments.compare's CLI on the real zeroeval data (slice and embeddings as `args` say); its JSON result."""
    from experiments.compare import main

    data_dir = Path(__file__).resolve().parents[2] / "data" / "zeroeval_crux_gsm_math"
    threads = torch.get_num_threads()
    try:
        assert main(["--data", str(data_dir), *args, "--out", str(tmp_path)]) == 0
    finally:
        torch.set_num_threads(threads)  # main() sets the process-wide torch thread count
    result: dict[str, Any] = json.loads((tmp_path / "zeroeval_crux_gsm_math.json").read_text())
    return result


def test_compare_cli_on_a_real_slice(tmp_path: Path) -> None:
    result = _compare_cli(tmp_path, "--max-questions", "300", "--random-embeddings", "8",
                          "--methods", "llm_accuracy,knn")
    assert result["n_questions"] == 300 and list(result["methods"]) == ["llm_accuracy", "knn"]
    assert result["diagnostic_2pl"]["items"] == result["split"]["train"]
    assert 0.5 < result["methods"]["llm_accuracy"]["test"]["overall"]["auc"] < 1.0
    assert (tmp_path / "zeroeval_crux_gsm_math.md").read_text().startswith("## zeroeval_crux_gsm_math")


def test_compare_cli_records_the_tuned_rows_choice(tmp_path: Path) -> None:
    # The tuned row alone (no jeirt_fit row to take it from) trains its own choice; --jeirt-hyper passes settings.
    result = _compare_cli(tmp_path, "--max-questions", "200", "--random-embeddings", "8", "--no-2pl",
                          "--methods", "jeirt", "--jeirt-hyper", '{"max_epochs": 2}')
    (row,) = result["methods"].values()
    selection = row["tuned"]["selection"]
    assert len(selection["candidates"]) == 6
    assert selection["chosen"] in [{"dim": c["dim"], "dropout": c["dropout"]} for c in selection["candidates"]]
    assert row["tuned"]["config"]["max_epochs"] == 2 and 1 <= len(selection["schedule"]) <= 2


def test_summary_over_splits_counts_wins_and_paired_differences() -> None:
    from experiments.compare import seeds_markdown, summarise_seeds

    def split(auc_ref: float, ll_ref: float, auc_mf: float, ll_mf: float) -> dict:  # type: ignore[type-arg]
        def overall(auc: float, ll: float) -> dict:  # type: ignore[type-arg]
            return {"test": {"overall": {"accuracy": 0.7, "auc": auc, "log_loss": ll, "brier": 0.2, "ece": 0.01}}}
        return {"methods": {"mf": overall(auc_mf, ll_mf), "JE-IRT": overall(auc_ref, ll_ref)}}

    per_seed = {0: split(0.80, 0.50, 0.81, 0.49), 1: split(0.82, 0.47, 0.80, 0.48), 2: split(0.83, 0.46, 0.82, 0.47)}
    summary = summarise_seeds(per_seed, reference="JE-IRT")
    mf = summary["methods"]["mf"]
    assert mf["reference_better"] == {"auc": 2, "log_loss": 2}
    assert mf["reference_minus_method"]["auc"] == pytest.approx((-0.01 + 0.02 + 0.01) / 3)
    assert mf["auc"]["mean"] == pytest.approx(0.81) and mf["auc"]["sd"] == pytest.approx(0.01)
    assert "reference_better" not in summary["methods"]["JE-IRT"]
    text = seeds_markdown("toy", summary, reference="JE-IRT")
    assert "over 3 splits (seeds 0, 1, 2)" in text and "| mf | 0.700 | 0.8100 ± 0.0100 |" in text
    assert mf["reference_minus_method_se"]["auc"] == pytest.approx(np.std([-0.01, 0.02, 0.01], ddof=1) / np.sqrt(3))
    assert "2/3 / 2/3 | +0.0067 ± 0.0088 |" in text


def test_compare_cli_over_several_splits(tmp_path: Path) -> None:
    result = _compare_cli(tmp_path, "--max-questions", "200", "--random-embeddings", "8", "--no-2pl",
                          "--methods", "llm_accuracy,knn", "--seeds", "3,4")
    assert result["settings"]["seeds"] == [3, 4] and sorted(result["per_seed"]) == ["3", "4"]
    # Different seeds draw different splits, so the two test scores differ.
    aucs = [result["per_seed"][s]["knn"]["test"]["auc"] for s in ("3", "4")]
    assert aucs[0] != aucs[1]
    assert result["over_seeds"]["methods"]["knn"]["auc"]["mean"] == pytest.approx(sum(aucs) / 2)
    text = (tmp_path / "zeroeval_crux_gsm_math.md").read_text()
    assert text.startswith("## zeroeval_crux_gsm_math: test metrics over 2 splits (seeds 3, 4)")
    assert "test metrics on the first split (seed 3)" in text


def test_jeirt_is_tuned_over_d_and_dropout_on_validation(world: tuple[Dataset, np.ndarray]) -> None:
    from experiments.tuned_jeirt import TunedJeirt

    data, emb = world
    split = make_split(data)
    tuned = TunedJeirt(dims=(4, 8), dropouts=(0.0, 0.5)).fit(
        emb, split.responses(data, "train"), split.responses(data, "val"), data.n_llms
    )
    grid = [(c["dim"], c["dropout"]) for c in tuned.candidates]
    assert grid == [(4, 0.0), (4, 0.5), (8, 0.0), (8, 0.5)]
    best = min(tuned.candidates, key=lambda c: c["val_loss"])
    assert tuned.best_val_loss == best["val_loss"]
    assert (tuned.config.dim, tuned.config.dropout) == (best["dim"], best["dropout"])
