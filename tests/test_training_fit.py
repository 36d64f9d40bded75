"""jeirt_lite_training.fit, the training loop's parts: the warm and the random start, the smoothed accuracies the warm
start reads, the batches, the input and setting checks, the mean losses it reports, the learning rates after a drop,
the progress bar."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from jeirt_lite_training.config import JeirtConfig
from jeirt_lite_training.fit import (
    WARM_NORM,
    _set_lr,
    cell_batches,
    init_llm_vectors,
    llm_accuracies,
    mean_bce,
    train_model,
    train_on_schedule,
)
from jeirt_lite_training.model import JeirtModel, JeirtPredictor
from jeirt_lite_training.types import Responses
from synthetic_answers import embedding_cells


def _problem() -> tuple[np.ndarray, Responses, Responses]:
    emb, cells = embedding_cells(60, 5, 8, 0)  # 60 questions x 5 LLMs, 8-dimensional embeddings
    return emb, cells.subset(cells.question < 45), cells.subset(cells.question >= 45)


def test_accuracies_are_smoothed_by_one_right_and_one_wrong_answer_per_prior_unit() -> None:
    cells = Responses(np.arange(5), np.array([0, 0, 0, 1, 1]), np.array([1, 1, 0, 0, 0], np.float32))
    np.testing.assert_allclose(llm_accuracies(cells, 3), [3 / 5, 1 / 4, 1 / 2])  # LLM 2 has no cells: a half
    np.testing.assert_allclose(llm_accuracies(cells, 3, prior=3.0), [5 / 9, 3 / 8, 1 / 2])


def test_the_warm_start_puts_every_llm_on_one_direction_at_its_accuracy_s_logit() -> None:
    emb, train, val = _problem()
    start = JeirtPredictor(dim=6, max_epochs=0, seed=1).fit(emb, train, val, 5)
    bias = start.model.adapter.net[-1].bias.detach().numpy()
    u = bias / WARM_NORM
    assert np.linalg.norm(u) == pytest.approx(1.0, rel=1e-6)  # the adapter's output starts at WARM_NORM * u
    # Every question starts near WARM_NORM * u (the adapter's last layer scaled down): one difficulty for all.
    assert np.linalg.norm(start.question_vectors(emb) - bias, axis=1).max() < 0.25
    acc = llm_accuracies(train, 5)
    np.testing.assert_allclose(start.llm_vectors, (np.log(acc / (1 - acc)) + WARM_NORM)[:, None] * u, rtol=1e-5,
                               atol=1e-6)
    # So the first logits are about each LLM's training accuracy: q·m/|q| - |q| with q near WARM_NORM * u.
    p = start.predict_proba(emb, np.repeat(np.arange(60), 5), np.tile(np.arange(5), 60)).reshape(60, 5)
    np.testing.assert_allclose(p.mean(axis=0), acc, atol=0.05)
    typed = "".join(["ran", "dom"])  # a name as a command line gives it: equal to "random", not the same object
    rand = JeirtPredictor(dim=6, max_epochs=0, seed=1, llm_init=typed).fit(emb, train, val, 5)
    assert not np.allclose(rand.llm_vectors / np.linalg.norm(rand.llm_vectors, axis=1, keepdims=True),
                           rand.llm_vectors[:1] / np.linalg.norm(rand.llm_vectors[0]), atol=0.1)
    for unknown in ("zeros", "a"):  # after and before both names in sort order
        with pytest.raises(ValueError, match=f"llm_init must be 'accuracy' or 'random', got '{unknown}'"):
            JeirtPredictor(dim=6, max_epochs=0, llm_init=unknown).fit(emb, train, val, 5)


def test_a_random_start_draws_each_entry_from_a_normal_of_variance_one_over_d() -> None:
    model = JeirtModel(8, 500, 16, 0.0)
    cells = Responses(np.zeros(1, np.int64), np.zeros(1, np.int64), np.ones(1, np.float32))
    init_llm_vectors(model, cells, 500, "random", torch.Generator().manual_seed(0))
    table = model.llms.weight.detach().numpy()
    assert abs(table.mean()) < 0.01 and table.std() == pytest.approx(1 / 4, rel=0.03)  # 8,000 draws


def test_batches_hold_every_cell_once_with_all_of_a_question_s_cells_together() -> None:
    _, train, _ = _problem()  # 45 questions x 5 LLMs
    for batch_size in (1, 12, 64, 10_000):
        batches = list(cell_batches(train, batch_size, np.random.default_rng(3)))
        seen = []
        for rows, local, llm, y in batches:
            question = rows.numpy()[local.numpy()]
            assert len(set(rows.numpy())) == len(rows)
            assert len(question) == 5 * len(rows)  # all five LLMs' cells of each question in the batch
            seen += list(zip(question.tolist(), llm.numpy().tolist(), y.numpy().tolist()))
        assert sorted(seen) == sorted(zip(train.question.tolist(), train.llm.tolist(), train.correct.tolist()))
        per_batch = max(1, round(batch_size / 5))  # questions a batch: about batch_size cells, at least one question
        assert len(batches) == math.ceil(45 / per_batch)


def test_cells_outside_the_embeddings_or_the_llms_are_refused_by_part() -> None:
    emb, train, val = _problem()
    for question in (60, 61, -1):
        past = Responses(np.array([0, question]), np.array([0, 1]), np.array([1.0, 0.0], np.float32))
        with pytest.raises(IndexError, match="^val: question index outside the 60 embedding rows$"):
            train_model(JeirtConfig(max_epochs=1), emb, train, past, 5)
    empty = train.subset(np.zeros(len(train), bool))
    with pytest.raises(ValueError, match="^val has no cells$"):
        train_model(JeirtConfig(max_epochs=1), emb, train, empty, 5)
    halves = Responses(val.question, val.llm, np.full(len(val), 0.5, np.float32))
    with pytest.raises(ValueError, match=r"^val: 'correct' must be 0 or 1; found \[0.5 0.5 0.5\]$"):
        train_model(JeirtConfig(max_epochs=1), emb, train, halves, 5, soft_targets=True)  # soft for train only
    with pytest.raises(ValueError, match=r"embeddings must be 2-D \(n_questions, D\), got shape \(60,\)"):
        train_model(JeirtConfig(max_epochs=1), emb[:, 0], train, val, 5)
    holed = emb.copy()
    holed[[3, 9, 11, 20, 31, 40, 59], 2] = np.inf
    with pytest.raises(ValueError, match=r"NaN or infinite values in 7 rows \(first: \[3, 9, 11, 20, 31\]\)$"):
        train_model(JeirtConfig(max_epochs=1), holed, train, val, 5)
    for llm in (-1, 5):
        wrong = Responses(np.array([0, 1]), np.array([0, llm]), np.array([1.0, 0.0], np.float32))
        with pytest.raises(IndexError, match=r"^train: llm index outside \[0, 5\)$"):
            train_model(JeirtConfig(max_epochs=1), emb, wrong, val, 5)
    soft = Responses(train.question, train.llm, np.full(len(train), 0.5, np.float32))
    with pytest.raises(ValueError, match="train: 'correct' must be 0 or 1"):
        train_on_schedule(JeirtConfig(), emb, soft, 5, [1e-3])  # soft targets only when asked for
    with pytest.raises(ValueError, match="train: 'correct' must be 0 or 1"):
        train_model(JeirtConfig(), emb, soft, val, 5)
    with pytest.raises(ValueError, match="a schedule needs at least one epoch and positive learning rates"):
        train_on_schedule(JeirtConfig(), emb, train, 5, [1e-3, 0.0])
    cfg = JeirtConfig(dim=4, max_epochs=1)
    for value in (0.0, 0.3, 1.0):
        probabilities = Responses(train.question, train.llm, np.full(len(train), value, np.float32))
        assert train_model(cfg, emb, probabilities, val, 5, soft_targets=True).best_epoch >= 0
    for value in (-0.1, 1.1, np.nan):
        outside = Responses(train.question, train.llm, np.full(len(train), value, np.float32))
        with pytest.raises(ValueError, match=r"train: 'correct' must be a probability in \[0, 1\] \(soft targets\)"):
            train_model(cfg, emb, outside, val, 5, soft_targets=True)


def test_one_epoch_of_patience_before_a_drop_is_allowed_and_none_is_not() -> None:
    emb, train, val = _problem()
    run = train_model(JeirtConfig(dim=4, max_epochs=60, lr=3e-2, lr_drops=3, lr_drop_patience=1, patience=3), emb,
                      train, val, 5)
    assert sorted({h["lr"] for h in run.history}, reverse=True) == pytest.approx([3e-2, 3e-3, 3e-4, 3e-5])
    # Stopping waits for the drops: a patience shorter than the wait before a drop still drops.
    run = train_model(JeirtConfig(dim=4, max_epochs=60, lr=3e-2, lr_drops=1, lr_drop_patience=3, patience=1), emb,
                      train, val, 5)
    assert len({h["lr"] for h in run.history}) == 2
    for drops, patience in ((-1, 2), (2, 0)):
        with pytest.raises(ValueError, match="lr_drops must be >= 0 and lr_drop_patience >= 1"):
            train_model(JeirtConfig(lr_drops=drops, lr_drop_patience=patience), emb, train, val, 5)


def test_the_reported_training_loss_is_the_mean_over_the_epoch_s_cells() -> None:
    emb, train, _ = _problem()
    cfg = JeirtConfig(dim=4, dropout=0.0, batch_size=64, seed=2)
    # At a learning rate of 1e-30 no weight moves: the epoch's loss is the starting model's mean over every cell,
    # whatever the batches (of unequal sizes here) were.
    run = train_on_schedule(cfg, emb, train, 5, [1e-30])
    start = train_model(JeirtConfig(**{**cfg.to_dict(), "max_epochs": 0}), emb, train, train, 5)
    assert run.history[0]["train_loss"] == pytest.approx(start.best_val_loss, rel=1e-5)
    whole = mean_bce(start.model, torch.from_numpy(emb), train)
    assert start.best_val_loss == pytest.approx(whole, rel=1e-6)
    assert mean_bce(start.model, torch.from_numpy(emb), train, chunk=7) == pytest.approx(whole, rel=1e-6)


def test_a_learning_rate_set_reaches_the_llm_table_and_a_trained_question_source_at_their_own_multiples() -> None:
    cfg = JeirtConfig(llm_lr_scale=10.0)
    weights = [torch.nn.Parameter(torch.zeros(1)) for _ in range(4)]
    opt = torch.optim.AdamW([{"params": [weights[0]]}, {"params": [weights[1]]},
                             {"params": [weights[2]], "lr_scale": 0.5}, {"params": [weights[3]], "lr_scale": 3.0}])
    _set_lr(opt, cfg, 1e-4)
    assert [g["lr"] for g in opt.param_groups] == pytest.approx([1e-4, 1e-3, 5e-5, 3e-4])


def test_a_new_best_must_gain_more_than_1e_5_and_the_run_stops_patience_epochs_after_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import jeirt_lite_training.fit as fit

    emb, train, val = _problem()
    # Validation losses of epochs 0..4, scripted: epoch 2 is within 1e-5 of epoch 1 (worse, or better by less).
    for near in (0.900005, 0.899995):
        losses = iter([1.0, 0.9, near, 0.95, 0.95, 0.95])
        monkeypatch.setattr(fit, "_val_loss", lambda *_, scripted=losses: next(scripted))
        run = train_model(JeirtConfig(dim=4, max_epochs=10, lr_drops=0, patience=2), emb, train, val, 5)
        assert (run.best_epoch, run.best_val_loss, run.history[-1]["epoch"]) == (1, 0.9, 3), near


def test_a_run_records_its_epochs_from_one_and_the_seconds_it_took() -> None:
    emb, train, val = _problem()
    began = time.perf_counter()
    run = train_on_schedule(JeirtConfig(dim=4), emb, train, 5, [1e-3, 1e-3, 1e-4])
    took = time.perf_counter() - began
    assert [h["epoch"] for h in run.history] == [1, 2, 3] and run.schedule == [1e-3, 1e-3, 1e-4]
    assert 0 < run.seconds <= took
    began = time.perf_counter()
    run = train_model(JeirtConfig(dim=4, max_epochs=2), emb, train, val, 5)
    assert 0 < run.seconds <= time.perf_counter() - began


def test_the_progress_bar_counts_the_epochs_run_on_a_terminal_only(capfd: pytest.CaptureFixture[str],
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from jeirt_lite_training import progress

    emb, train, val = _problem()
    train_model(JeirtConfig(dim=4, max_epochs=2), emb, train, val, 5)
    train_on_schedule(JeirtConfig(dim=4), emb, train, 5, [1e-3])
    assert capfd.readouterr().err == ""  # quiet unless asked
    monkeypatch.setattr(progress, "stderr_is_terminal", lambda: False)  # a log, a pipe, a batch job
    train_model(JeirtConfig(dim=4, max_epochs=2), emb, train, val, 5, progress=True)
    assert capfd.readouterr().err == ""  # asked, but not drawn into a file
    monkeypatch.setattr(progress, "stderr_is_terminal", lambda: True)
    train_model(JeirtConfig(dim=4, max_epochs=3, patience=10, lr_drops=0), emb, train, val, 5, progress=True)
    assert "JE-IRT d=4" in (err := capfd.readouterr().err) and "3/3" in err and "4/3" not in err
    train_on_schedule(JeirtConfig(dim=4), emb, train, 5, [1e-3, 1e-3], progress=True)
    assert "2/2" in capfd.readouterr().err
