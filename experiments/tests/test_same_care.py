"""The careful training loop of the torch baselines (experiments/baselines/torch_fit.py): the per-epoch decay, the
stop `patience` epochs after the best, fit's drops, the weight average that is returned, the grid's choice, and the
refit on training + validation cells (the recorded learning-rate path and its replay)."""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
import torch
from jeirt_lite_training.types import Responses
from torch import nn

from experiments.baselines import torch_fit
from experiments.baselines.embedllm import same_care_mf, same_care_mf_refit
from experiments.baselines.mirt import SAME_CARE_GRID, issue_recipe_mirt, same_care_mirt, same_care_mirt_refit
from experiments.baselines.torch_fit import (
    SAME_CARE,
    FitSettings,
    choose_on_grid,
    evaluate_loss,
    fit_best_on_grid,
    fit_cells,
    train_on_path,
)

N_Q, N_LLM, D = 240, 6, 8


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _cells(rng: np.random.Generator, questions: np.ndarray, emb: np.ndarray, noise: bool = False) -> Responses:
    q = np.repeat(questions, N_LLM)
    m = np.tile(np.arange(N_LLM), len(questions))
    logit = 2.0 * emb[q, 0] * np.where(m % 2 == 0, 1.0, -1.0) + 0.3 * m - 0.8
    p = np.full(len(q), 0.5) if noise else 1 / (1 + np.exp(-logit))
    return Responses(q.astype(np.int64), m.astype(np.int64), (rng.random(len(q)) < p).astype(np.float32))


@pytest.fixture(scope="module")
def world() -> tuple[np.ndarray, Responses, Responses]:
    rng = np.random.default_rng(0)
    emb = rng.standard_normal((N_Q, D)).astype(np.float32)
    return emb, _cells(rng, np.arange(0, 160), emb), _cells(rng, np.arange(160, N_Q), emb)


class _Linear(nn.Module):
    """logit = w_m · x + b_m: small enough to train in a blink."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Embedding(N_LLM, D)
        self.b = nn.Embedding(N_LLM, 1)

    def forward(self, x: torch.Tensor, llm: torch.Tensor) -> torch.Tensor:
        return (self.w(llm) * x).sum(-1) + self.b(llm).squeeze(-1)


def test_the_rate_is_multiplied_by_the_decay_after_every_epoch(world: tuple[np.ndarray, Responses, Responses]) -> None:
    emb, train, val = world
    history: list[dict[str, float]] = []
    fit_cells(_Linear(), emb, train, val, FitSettings(lr=1e-2, lr_decay=0.7, max_epochs=6, patience=50,
                                                      batch_size=128), history)
    lrs = [h["lr"] for h in history]
    assert len(lrs) == 6
    assert lrs == pytest.approx([1e-2 * 0.7**k for k in range(6)])


def test_training_stops_exactly_patience_epochs_after_the_best(world: tuple[np.ndarray, Responses, Responses]) -> None:
    emb, train, _ = world
    rng = np.random.default_rng(1)
    noise = _cells(rng, np.arange(160, N_Q), emb, noise=True)  # coin-flip validation labels: overfitting shows
    for patience in (1, 3):
        history: list[dict[str, float]] = []
        _, best_loss, best_epoch = fit_cells(_Linear(), emb, train, noise,
                                             FitSettings(lr=5e-2, patience=patience, max_epochs=200), history)
        assert len(history) == best_epoch + patience < 200
        assert best_loss == min(h["val_loss"] for h in history)
        assert all(h["val_loss"] >= best_loss - 1e-5 for h in history[best_epoch:])


def test_fits_drops_divide_the_rate_by_ten_at_plateaus(world: tuple[np.ndarray, Responses, Responses]) -> None:
    emb, train, _ = world
    noise = _cells(np.random.default_rng(2), np.arange(160, N_Q), emb, noise=True)
    history: list[dict[str, float]] = []
    fit_cells(_Linear(), emb, train, noise, FitSettings(lr=5e-2, lr_drops=2, lr_drop_patience=2, patience=3,
                                                        max_epochs=200), history)
    assert sorted({h["lr"] for h in history}, reverse=True) == pytest.approx([5e-2, 5e-3, 5e-4])
    assert len(history) < 200


def test_the_averaged_weights_are_validated_and_returned(world: tuple[np.ndarray, Responses, Responses],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    emb, train, val = world
    made: list[torch_fit.WeightAverage] = []

    class Recorded(torch_fit.WeightAverage):
        def __init__(self, model: nn.Module, decay: float) -> None:
            super().__init__(model, decay)
            made.append(self)

    monkeypatch.setattr(torch_fit, "WeightAverage", Recorded)
    settings = FitSettings(lr=2e-2, ema_epochs=1.0, max_epochs=8, patience=8, batch_size=64)
    model, best_loss, _ = fit_cells(_Linear(), emb, train, val, settings)
    assert len(made) == 1 and made[0].updates > 0
    for param, average in zip(model.parameters(), made[0].average):
        assert torch.equal(param.detach(), average)
    x, m, y = torch_fit.cell_tensors(emb, val)
    assert evaluate_loss(model, x, m, y) == pytest.approx(best_loss, rel=1e-6)
    raw, raw_loss, _ = fit_cells(_Linear(), emb, train, val, replace(settings, ema_epochs=0.0))
    assert raw_loss != pytest.approx(best_loss, rel=1e-6)  # the average is not the raw weights


def test_the_grid_chooses_the_lowest_validation_loss(world: tuple[np.ndarray, Responses, Responses]) -> None:
    emb, train, val = world
    grid = ({"scale": 0.0}, {"scale": 3.0})
    schedules = (FitSettings(lr=1e-4, max_epochs=3, name="slow"), FitSettings(lr=3e-2, max_epochs=3, name="fast"))

    def build(config: dict[str, float]) -> nn.Module:
        model = _Linear()
        with torch.no_grad():
            model.w.weight.mul_(config["scale"])
        return model

    losses = {(s.name, c["scale"]): fit_cells(build(c), emb, train, val, s)[1] for s in schedules for c in grid}
    loss, _, config, _ = fit_best_on_grid(grid, build, emb, train, val, schedules)
    assert loss == pytest.approx(min(losses.values()))
    assert losses[(config["schedule"], config["scale"])] == pytest.approx(loss)  # type: ignore[index]
    one, _, config_one, _ = fit_best_on_grid(grid, build, emb, train, val, schedules[1])
    assert "schedule" not in config_one and one == pytest.approx(min(v for k, v in losses.items() if k[0] == "fast"))


def test_the_same_care_baselines_search_the_leading_recipe() -> None:
    assert {4, 16} <= {c["dim"] for c in SAME_CARE_GRID}
    assert all(c["activation"] == "relu" and c["theta_sd"] == 0.1 for c in SAME_CARE_GRID)
    decay = next(s for s in SAME_CARE if s.name == "decay 0.7")
    assert (decay.lr, decay.weight_decay, decay.lr_decay, decay.batch_size, decay.patience) == (1e-3, 0.01, 0.7, 512, 10)
    drops = next(s for s in SAME_CARE if s.name == "drops + averaging")
    assert drops.lr_drops == 2 and drops.ema_epochs == 0.5
    mirt, mf = same_care_mirt(seed=3), same_care_mf(seed=3)
    assert mirt.name == "mirt_text_same_care" and mf.name == "embedllm_mf_same_care"
    assert all(s.seed == 3 for s in (*mirt.settings, *mf.settings))  # type: ignore[union-attr]


def test_the_issues_recipe_is_its_d_and_its_decay_alone_without_a_refit() -> None:
    recipe = issue_recipe_mirt(seed=2)
    assert recipe.name == "mirt_text_issue_recipe" and not recipe.refit
    assert [c["dim"] for c in recipe.grid] == [4, 16]
    assert all(c["activation"] == "relu" and c["theta_sd"] == 0.1 for c in recipe.grid)
    (decay,) = recipe.settings  # type: ignore[misc]
    assert (decay.name, decay.lr, decay.weight_decay, decay.lr_decay, decay.batch_size, decay.patience, decay.seed) == (
        "decay 0.7", 1e-3, 0.01, 0.7, 512, 10, 2)
    assert (decay.lr_drops, decay.ema_epochs) == (0, 0.0)


def test_bad_schedules_are_refused(world: tuple[np.ndarray, Responses, Responses]) -> None:
    emb, train, val = world
    for bad in (FitSettings(lr_decay=0.0), FitSettings(lr_decay=1.5), FitSettings(patience=0),
                FitSettings(ema_epochs=-1.0)):
        with pytest.raises(ValueError):
            fit_cells(_Linear(), emb, train, val, bad)


def _scripted(monkeypatch: pytest.MonkeyPatch, losses: list[float]) -> None:
    """Validation losses in a given order: the drops and the stop then fall on known epochs."""
    sequence: Iterator[float] = iter(losses)
    monkeypatch.setattr(torch_fit, "_val_loss", lambda *_: next(sequence))


def test_the_path_leaves_out_the_epochs_a_drop_undid(world: tuple[np.ndarray, Responses, Responses],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    emb, train, val = world
    # Best at 2; flat 3-4: drop 1 restores epoch 2's weights (3 and 4 undone); best at 5 (1e-3); flat 6-7: drop 2
    # restores epoch 5's (6 and 7 undone); best at 8 (1e-4); flat 9-10: stop.
    _scripted(monkeypatch, [1.0, 0.9, 0.95, 0.96, 0.85, 0.86, 0.87, 0.84, 0.9, 0.9])
    history: list[dict[str, float]] = []
    path: list[float] = []
    _, best, epoch = fit_cells(_Linear(), emb, train, val, FitSettings(lr=1e-2, lr_drops=2, lr_drop_patience=2,
                                                                       patience=2), history, path)
    assert (best, epoch, len(history)) == (0.84, 8, 10)
    assert path == pytest.approx([1e-2, 1e-2, 1e-3, 1e-4])


def test_without_drops_the_path_is_the_rates_up_to_the_best(world: tuple[np.ndarray, Responses, Responses]) -> None:
    emb, train, _ = world
    noise = _cells(np.random.default_rng(4), np.arange(160, N_Q), emb, noise=True)
    history: list[dict[str, float]] = []
    path: list[float] = []
    _, _, best_epoch = fit_cells(_Linear(), emb, train, noise, FitSettings(lr=5e-2, lr_decay=0.8, patience=3),
                                 history, path)
    assert 0 < best_epoch < len(history)  # epochs after the best were trained, and are not on the path
    assert path == [h["lr"] for h in history[:best_epoch]]


def test_the_refit_trains_one_epoch_per_rate_of_the_path(world: tuple[np.ndarray, Responses, Responses],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    emb, train, val = world
    set_rates: list[list[float]] = []
    trained_on: list[int] = []
    original = torch_fit._train_epoch

    def recording(model: nn.Module, optimiser: torch.optim.Optimizer, cells: tuple[torch.Tensor, ...],
                  *rest: object) -> None:
        set_rates.append([group["lr"] for group in optimiser.param_groups])  # what the epoch really trains at
        trained_on.append(len(cells[2]))
        original(model, optimiser, cells, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(torch_fit, "_train_epoch", recording)
    path = [1e-2, 1e-2, 1e-3, 1e-4, 1e-4]
    history: list[dict[str, float]] = []
    cells = Responses.concatenate([train, val])
    train_on_path(_Linear(), emb, cells, FitSettings(weight_decay=0.01, batch_size=64), path, history)
    assert set_rates == [[lr] for lr in path]
    assert trained_on == [len(cells)] * len(path)
    assert [h["lr"] for h in history] == path
    for bad in ([], [1e-3, 0.0]):
        with pytest.raises(ValueError):
            train_on_path(_Linear(), emb, cells, FitSettings(), bad)


def test_replaying_the_path_on_the_same_cells_gives_the_early_stopped_weights(
        world: tuple[np.ndarray, Responses, Responses]) -> None:
    """Without drops nothing on the path was undone: the same seed, batches, rates and average reproduce the
    returned weights exactly (an off-by-one in the path, or a rate set after its epoch, would not)."""
    emb, train, _ = world
    noise = _cells(np.random.default_rng(5), np.arange(160, N_Q), emb, noise=True)
    settings = FitSettings(lr=3e-2, lr_decay=0.7, weight_decay=0.01, ema_epochs=0.5, batch_size=128, patience=3)
    start = _Linear()
    path: list[float] = []
    early, _, best_epoch = fit_cells(copy.deepcopy(start), emb, train, noise, settings, path=path)
    assert 1 < best_epoch == len(path)
    replayed = train_on_path(copy.deepcopy(start), emb, train, settings, path)
    for a, b in zip(early.parameters(), replayed.parameters()):
        assert torch.equal(a, b)
    shorter = train_on_path(copy.deepcopy(start), emb, train, settings, path[:-1])
    assert not torch.equal(next(shorter.parameters()), next(early.parameters()))


def test_the_refit_averages_over_its_own_cells(world: tuple[np.ndarray, Responses, Responses],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    emb, train, val = world
    made: list[Any] = []
    real = torch_fit.WeightAverage  # type: ignore[attr-defined]

    def recording(model: nn.Module, decay: float) -> Any:
        made.append(real(model, decay))
        return made[-1]

    monkeypatch.setattr(torch_fit, "WeightAverage", recording)
    cells = Responses.concatenate([train, val])
    model = train_on_path(_Linear(), emb, cells, FitSettings(ema_epochs=0.5, batch_size=64), [1e-2, 1e-2])
    steps = math.ceil(len(cells) / 64)  # training + validation cells' steps: the time constant is half an epoch
    assert made[0].decay == pytest.approx(math.exp(-1 / (0.5 * steps))) and made[0].updates == 2 * steps
    for param, average in zip(model.parameters(), made[0].average):
        assert torch.equal(param.detach(), average)


def test_the_refit_makes_the_same_choice_and_learns_from_the_validation_cells(
        world: tuple[np.ndarray, Responses, Responses], monkeypatch: pytest.MonkeyPatch) -> None:
    emb, train, val = world
    grid = ({"scale": 0.0}, {"scale": 3.0})
    schedules = (FitSettings(lr=3e-2, lr_decay=0.7, max_epochs=6, name="decay"),
                 FitSettings(lr=3e-2, lr_drops=1, ema_epochs=0.5, max_epochs=6, name="drops"))

    def build(config: dict[str, float]) -> nn.Module:
        model = _Linear()
        with torch.no_grad():
            model.w.weight.mul_(config["scale"])
        return model

    refits: list[tuple[Responses, FitSettings, list[float]]] = []
    original = torch_fit.train_on_path

    def recording(model: nn.Module, embeddings: np.ndarray, cells: Responses, settings: FitSettings,
                  path: list[float], history: list[dict[str, float]] | None = None) -> nn.Module:
        refits.append((cells, settings, list(path)))
        return original(model, embeddings, cells, settings, path, history)

    monkeypatch.setattr(torch_fit, "train_on_path", recording)
    plain = choose_on_grid(grid, build, emb, train, val, schedules)
    assert not refits and not plain.refitted
    refitted = choose_on_grid(grid, build, emb, train, val, schedules, refit=True)
    assert refitted.refitted and len(refits) == 1
    assert (refitted.val_loss, refitted.config, refitted.epochs, refitted.path) == (
        plain.val_loss, plain.config, plain.epochs, plain.path)
    cells, settings, path = refits[0]
    assert settings.name == plain.config["schedule"] and path == plain.path and len(path) >= 1
    assert len(cells) == len(train) + len(val)
    seen = set(zip(cells.question.tolist(), cells.llm.tolist()))
    assert set(zip(val.question.tolist(), val.llm.tolist())) <= seen
    assert set(zip(train.question.tolist(), train.llm.tolist())) <= seen
    assert plain.model is not None and refitted.model is not None
    x, m, y = torch_fit.cell_tensors(emb, val)
    assert evaluate_loss(refitted.model, x, m, y) != pytest.approx(evaluate_loss(plain.model, x, m, y), rel=1e-6)
    one = fit_best_on_grid(grid, build, emb, train, val, schedules, refit=True)
    assert one[2] == plain.config and one[0] == plain.val_loss


def test_the_refit_baselines_record_their_path_and_the_old_ones_do_not_refit(
        world: tuple[np.ndarray, Responses, Responses], monkeypatch: pytest.MonkeyPatch) -> None:
    from experiments.compare import DEFAULT_METHODS, make_predictors, tuned_settings

    emb, train, val = world
    old = same_care_mirt(seed=1)
    new = same_care_mirt_refit(seed=1)
    assert (old.refit, new.refit) == (False, True) and old.grid == new.grid and old.settings == new.settings
    assert (same_care_mf(seed=1).refit, same_care_mf_refit(seed=1).settings) == (False, same_care_mf(1).settings)

    def no_refit(*_: object) -> nn.Module:
        raise AssertionError("the _same_care rows must not refit")

    real = torch_fit.train_on_path
    monkeypatch.setattr(torch_fit, "train_on_path", no_refit)
    old.fit(emb, train, val, N_LLM)
    assert old.refit_path is None and "refit_path" not in tuned_settings(old)
    monkeypatch.setattr(torch_fit, "train_on_path", real)
    new.fit(emb, train, val, N_LLM)
    assert (new.config, new.epochs, new.val_log_loss) == (old.config, old.epochs, old.val_log_loss)
    assert new.refit_path and len(new.refit_path) <= 30
    assert tuned_settings(new)["refit_path"] == new.refit_path
    p_old, p_new = (m.predict_proba(emb, val.question, val.llm) for m in (old, new))
    assert not np.allclose(p_old, p_new)
    made = make_predictors(["mirt_text_same_care_refit", "embedllm_mf_same_care_refit", "mirt_text_same_care"], 2)
    assert [(p.name, p.refit) for p in made] == [
        ("mirt_text_same_care_refit", True), ("embedllm_mf_same_care_refit", True), ("mirt_text_same_care", False)]
    assert not any(m.endswith("_refit") for m in DEFAULT_METHODS)


def _run(seed: int, **aucs: float) -> dict[str, object]:
    def overall(auc: float) -> dict[str, float]:
        return {"n": 100.0, "auc": auc, "log_loss": 1 - auc, "accuracy": auc - 0.1, "brier": 0.2, "ece": 0.01,
                "aiq": auc - 0.05}

    return {"dataset": "toy", "settings": {"seed": seed}, "n_llms": 2, "n_questions": 10, "ece_bins": 15,
            "split": {"train": 6, "val": 2, "test": 2, "test_cells": 100},
            "methods": {m: {"fit_seconds": 1.0, "tuned": {}, "val": {}, "test": {"overall": overall(a)}}
                        for m, a in aucs.items()}}


def test_paired_differences_over_accuracy_and_aiq_and_the_old_rows_labelled() -> None:
    from experiments.compare import seeds_markdown, summarise_seeds

    per_seed = {0: _run(0, fit=0.80, mirt_text=0.79), 1: _run(1, fit=0.81, mirt_text=0.83),
                2: _run(2, fit=0.82, mirt_text=0.80)}
    summary = summarise_seeds(per_seed, reference="fit")  # type: ignore[arg-type]
    paired = summary["methods"]["mirt_text"]["paired"]
    for metric in ("auc", "accuracy", "aiq"):  # each is the AUC shifted by a constant here
        assert paired[metric]["mean"] == pytest.approx(0.01 / 3)
        assert paired[metric]["sd"] == pytest.approx(np.std([0.01, -0.02, 0.02], ddof=1))
        assert paired[metric]["reference_better"] == 2
    assert paired["log_loss"]["reference_better"] == 2 and paired["log_loss"]["mean"] == pytest.approx(-0.01 / 3)
    text = seeds_markdown("toy", summary, reference="fit")
    assert "| mirt_text (constant lr, as before) | +0.0033 ± 0.0208 (2/3) | -0.0033 ± 0.0208 (2/3) |" in text


def test_merge_reuses_rows_from_several_earlier_results(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from experiments.compare import main, write_report

    def earlier(name: str, **aucs: float) -> object:
        runs = {s: _run(s, **aucs) for s in (0, 1)}
        write_report(dict(runs[0]), runs, tmp_path / name, "none")  # type: ignore[arg-type]
        return tmp_path / name / "toy.json"

    fit, static = earlier("fit", fit=0.8, knn=0.7), earlier("static", static=0.79)
    for s in (0, 1):
        (tmp_path / f"new{s}.json").write_text(json.dumps(_run(s, mirt_text_same_care=0.81)))
    merged = ["--merge", str(tmp_path / "new0.json"), str(tmp_path / "new1.json"), "--reference", "fit",
              "--out", str(tmp_path / "out")]
    assert main([*merged, "--reuse", str(fit), "--reuse-methods", "fit,knn", "--reuse", str(static),
                 "--reuse-methods", "static"]) == 0
    result = json.loads((tmp_path / "out" / "toy.json").read_text())
    assert sorted(result["per_seed"]["1"]) == ["fit", "knn", "mirt_text_same_care", "static"]
    assert result["per_seed"]["1"]["static"]["reused_from"] == str(static)
    assert result["over_seeds"]["methods"]["mirt_text_same_care"]["paired"]["auc"]["mean"] == pytest.approx(-0.01)
    with pytest.raises(SystemExit):  # a --reuse without its --reuse-methods
        main([*merged, "--reuse", str(fit), "--reuse", str(static), "--reuse-methods", "fit"])


def test_merge_takes_every_split_of_a_several_split_result(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from experiments.compare import main, write_report

    def several(name: str, **aucs: float) -> object:  # what `--seeds 0,1,2` writes
        runs = {s: _run(s, **{m: a + 0.01 * s for m, a in aucs.items()}) for s in (0, 1, 2)}
        write_report(dict(runs[0]), runs, tmp_path / name, "none")  # type: ignore[arg-type]
        return tmp_path / name / "toy.json"

    new, plain = several("new", new=0.80), several("plain", plain=0.79)
    assert main(["--merge", str(new), "--reuse", str(plain), "--reuse-methods", "plain", "--reference", "new",
                 "--out", str(tmp_path / "out")]) == 0
    result = json.loads((tmp_path / "out" / "toy.json").read_text())
    assert sorted(result["per_seed"]) == ["0", "1", "2"]
    assert result["per_seed"]["2"]["new"]["test"]["auc"] == pytest.approx(0.82)
    assert result["per_seed"]["2"]["plain"]["reused_from"] == str(plain)
    paired = result["over_seeds"]["methods"]["plain"]["paired"]["auc"]
    assert paired["mean"] == pytest.approx(0.01) and paired["reference_better"] == 3


def test_the_path_of_several_folds_is_their_median_as_fits() -> None:
    drops = replace(SAME_CARE[1], lr=1e-3)
    paths = [[1e-3, 1e-3, 1e-4], [1e-3, 1e-4, 1e-4, 1e-5], [1e-3, 1e-3, 1e-3]]  # 2-1-0, 1-2-1, 3-0-0 epochs a rate
    assert torch_fit.median_path(paths, drops) == pytest.approx([1e-3, 1e-3, 1e-4])
    decay = replace(SAME_CARE[0], lr=1e-3)
    assert torch_fit.median_path([[1e-3] * 2, [1e-3] * 5, [1e-3] * 3], decay) == pytest.approx(
        [1e-3, 7e-4, 4.9e-4])


def test_a_choice_on_folds_weighs_every_folds_cells_and_refits_on_all(
    world: tuple[np.ndarray, Responses, Responses],
) -> None:
    emb, train, val = world
    cells = Responses.concatenate([train, val])
    third = cells.question % 3 == 0  # folds of unequal size: a plain mean of their losses would differ
    folds = [(cells.subset(~third), cells.subset(third)), (cells.subset(third), cells.subset(~third))]
    schedule = FitSettings(lr=1e-2, max_epochs=8, patience=2, batch_size=128)
    with pytest.raises(ValueError, match="needs refit"):
        choose_on_grid([{}], lambda _: _Linear(), emb, train, val, schedule, folds=folds)
    torch.manual_seed(0)
    choice = choose_on_grid([{}], lambda _: _Linear(), emb, train, val, schedule, refit=True, folds=folds)
    losses = []
    for fold_train, fold_val in folds:
        torch.manual_seed(0)
        losses.append(fit_cells(_Linear(), emb, fold_train, fold_val, schedule)[1])
    n = [len(fold_val) for _, fold_val in folds]
    assert choice.val_loss == pytest.approx(np.dot(losses, n) / sum(n)) and n[0] != n[1]
    assert choice.val_loss != pytest.approx(np.mean(losses))
    assert choice.refitted and len(choice.path) >= 1
