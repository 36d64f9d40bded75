"""jeirt_lite_training.fit, the training loop's parts: the warm start, the smoothed accuracies it starts from, the
input and setting checks, the mean training loss it reports, the learning rates after a drop, the progress bar."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from jeirt_lite_training.config import JeirtConfig
from jeirt_lite_training.fit import (
    WARM_NORM,
    _set_lr,
    llm_accuracies,
    mean_bce,
    train_model,
    train_on_schedule,
)
from jeirt_lite_training.model import JeirtPredictor
from jeirt_lite_training.types import Responses
from synthetic_answers import embedding_cells


def _problem() -> tuple[np.ndarray, Responses, Responses]:
    emb, cells = embedding_cells(60, 5, 8, 0)  # 60 questions x 5 LLMs, 8-dimensional embeddings
    return emb, cells.subset(cells.question < 45), cells.subset(cells.question >= 45)


def test_accuracies_are_smoothed_by_one_right_and_one_wrong_answer_per_prior_unit() -> None:
    cells = Responses(np.arange(5), np.array([0, 0, 0, 1, 1]), np.array([1, 1, 0, 0, 0], np.float32))
    np.testing.assert_allclose(llm_accuracies(cells, 3), [3 / 5, 1 / 4, 1 / 2])  # LLM 2 has no cells: a half
    np.testing.assert_allclose(llm_accuracies(cells, 3, prior=2.0), [4 / 7, 2 / 6, 1 / 2])


def test_the_warm_start_puts_every_llm_on_one_direction_at_its_accuracy_s_logit() -> None:
    emb, train, val = _problem()
    start = JeirtPredictor(dim=6, max_epochs=0, seed=1).fit(emb, train, val, 5)
    bias = start.model.adapter.net[-1].bias.detach().numpy()
    u = bias / WARM_NORM
    assert np.linalg.norm(u) == pytest.approx(1.0, rel=1e-6)  # the adapter's output starts at WARM_NORM * u
    acc = llm_accuracies(train, 5)
    np.testing.assert_allclose(start.llm_vectors, (np.log(acc / (1 - acc)) + WARM_NORM)[:, None] * u, rtol=1e-5,
                               atol=1e-6)
    # So the first logits are about each LLM's training accuracy: q·m/|q| - |q| with q near WARM_NORM * u.
    p = start.predict_proba(emb, np.repeat(np.arange(60), 5), np.tile(np.arange(5), 60)).reshape(60, 5)
    np.testing.assert_allclose(p.mean(axis=0), acc, atol=0.05)
    rand = JeirtPredictor(dim=6, max_epochs=0, seed=1, llm_init="random").fit(emb, train, val, 5)
    assert not np.allclose(rand.llm_vectors / np.linalg.norm(rand.llm_vectors, axis=1, keepdims=True),
                           rand.llm_vectors[:1] / np.linalg.norm(rand.llm_vectors[0]), atol=0.1)
    with pytest.raises(ValueError, match="llm_init must be 'accuracy' or 'random', got 'zeros'"):
        JeirtPredictor(dim=6, max_epochs=0, llm_init="zeros").fit(emb, train, val, 5)


def test_cells_outside_the_embeddings_or_the_llms_are_refused_by_part() -> None:
    emb, train, val = _problem()
    past = Responses(np.array([0, 60]), np.array([0, 1]), np.array([1.0, 0.0], np.float32))
    with pytest.raises(IndexError, match="^val: question index outside the 60 embedding rows$"):
        train_model(JeirtConfig(max_epochs=1), emb, train, past, 5)
    for llm in (-1, 5):
        wrong = Responses(np.array([0, 1]), np.array([0, llm]), np.array([1.0, 0.0], np.float32))
        with pytest.raises(IndexError, match=r"^train: llm index outside \[0, 5\)$"):
            train_model(JeirtConfig(max_epochs=1), emb, wrong, val, 5)
    soft = Responses(train.question, train.llm, np.full(len(train), 0.5, np.float32))
    with pytest.raises(ValueError, match="train: 'correct' must be 0 or 1"):
        train_on_schedule(JeirtConfig(), emb, soft, 5, [1e-3])  # soft targets only when asked for
    with pytest.raises(ValueError, match="a schedule needs at least one epoch and positive learning rates"):
        train_on_schedule(JeirtConfig(), emb, train, 5, [1e-3, 0.0])


def test_one_epoch_of_patience_before_a_drop_is_allowed_and_none_is_not() -> None:
    emb, train, val = _problem()
    run = train_model(JeirtConfig(dim=4, max_epochs=30, lr=3e-2, lr_drop_patience=1), emb, train, val, 5)
    assert len({h["lr"] for h in run.history}) > 1
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
    assert start.best_val_loss == pytest.approx(mean_bce(start.model, torch.from_numpy(emb), train), rel=1e-6)


def test_a_learning_rate_set_reaches_the_llm_table_and_a_trained_question_source_at_their_own_multiples() -> None:
    cfg = JeirtConfig(llm_lr_scale=10.0)
    weights = [torch.nn.Parameter(torch.zeros(1)) for _ in range(4)]
    opt = torch.optim.AdamW([{"params": [weights[0]]}, {"params": [weights[1]]},
                             {"params": [weights[2]], "lr_scale": 0.5}, {"params": [weights[3]], "lr_scale": 3.0}])
    _set_lr(opt, cfg, 1e-4)
    assert [g["lr"] for g in opt.param_groups] == pytest.approx([1e-4, 1e-3, 5e-5, 3e-4])


def test_the_progress_bar_counts_the_epochs_run(capfd: pytest.CaptureFixture[str]) -> None:
    emb, train, val = _problem()
    train_model(JeirtConfig(dim=4, max_epochs=3, patience=10, lr_drops=0), emb, train, val, 5, progress=True)
    assert "JE-IRT d=4" in (err := capfd.readouterr().err) and "3/3" in err and "4/3" not in err
    train_on_schedule(JeirtConfig(dim=4), emb, train, 5, [1e-3, 1e-3], progress=True)
    assert "2/2" in capfd.readouterr().err
