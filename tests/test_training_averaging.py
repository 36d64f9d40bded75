"""The moving average of the trained weights (jeirt_lite_training.averaging, JeirtConfig.ema_epochs): its arithmetic, and that a
run with it on validates on, stops on and returns the averaged weights (adapter, LLM table, a fine-tuned token
table), while the raw training underneath is unchanged."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from jeirt_lite_training.averaging import WeightAverage, ema_decay
from jeirt_lite_training.fit import steps_per_epoch
from jeirt_lite_training.model import JeirtPredictor
from jeirt_lite_training.types import Responses
from test_training_model import _synthetic


def test_the_average_is_the_bias_corrected_weighted_mean_of_the_steps() -> None:
    layer = torch.nn.Linear(1, 1, bias=False)
    decay = 0.5
    average = WeightAverage(layer, decay)
    values = [3.0, -1.0, 4.0]
    for v in values:
        with torch.no_grad():
            layer.weight.fill_(v)
        average.update()
    # weights decay^age: 0.25, 0.5, 1 on 3, -1, 4
    expected = (0.25 * 3 - 0.5 * 1 + 4) / 1.75
    assert float(average.average[0]) == pytest.approx(expected)
    with average.applied():
        assert float(layer.weight.detach()) == pytest.approx(expected)
    assert float(layer.weight.detach()) == 4.0  # the raw weight back after the block
    saved = average.state()
    average.update()
    average.load(saved)
    assert float(average.average[0]) == pytest.approx(expected) and average.updates == 3
    assert ema_decay(2.0, 10) == pytest.approx(math.exp(-1 / 20))
    for epochs, steps in ((0.0, 10), (-2.0, 10), (2.0, 0), (2.0, -1)):
        with pytest.raises(ValueError, match="ema_epochs and steps_per_epoch must be > 0"):
            ema_decay(epochs, steps)
    assert ema_decay(2.0, 1) == pytest.approx(math.exp(-1 / 2))  # one step an epoch: a tiny data set
    for bad in (1.0, 1.5, -0.1):
        with pytest.raises(ValueError, match="decay must be in"):
            WeightAverage(layer, bad)
    assert WeightAverage(layer, 0.0).decay == 0.0  # no averaging: the average is the last weights


def test_steps_per_epoch_counts_the_batches() -> None:
    _, train, _, _ = _synthetic()
    from jeirt_lite_training.fit import cell_batches

    for size in (1, 64, 5000):
        batches = list(cell_batches(train, size, np.random.default_rng(0)))
        assert steps_per_epoch(train, size) == len(batches)


def test_a_run_returns_the_averaged_weights_over_the_same_raw_training() -> None:
    emb, train, val, k = _synthetic()
    kw = {"dim": 8, "batch_size": 64, "lr": 3e-3, "seed": 1}
    schedule = [3e-3] * 6
    raw = JeirtPredictor(ema_epochs=0.0, **kw).fit_schedule(emb, train, k, schedule)
    averaged = JeirtPredictor(ema_epochs=2.0, **kw).fit_schedule(emb, train, k, schedule)
    # A time constant far below one step keeps only the last step: the raw weights, so the raw training underneath
    # is the same and only the returned weights differ.
    last = JeirtPredictor(ema_epochs=1e-6, **kw).fit_schedule(emb, train, k, schedule)
    np.testing.assert_allclose(last.llm_vectors, raw.llm_vectors, atol=1e-6)
    np.testing.assert_allclose(last.question_vectors(emb), raw.question_vectors(emb), atol=1e-6)
    assert np.abs(averaged.llm_vectors - raw.llm_vectors).max() > 1e-3
    assert np.abs(averaged.question_vectors(emb) - raw.question_vectors(emb)).max() > 1e-3
    with pytest.raises(ValueError, match="ema_epochs must be >= 0"):
        JeirtPredictor(ema_epochs=-1.0, **kw).fit_schedule(emb, train, k, schedule)


def test_early_stopping_validates_and_returns_the_averaged_weights() -> None:
    emb, train, val, k = _synthetic()
    p = JeirtPredictor(dim=8, batch_size=64, lr=3e-3, max_epochs=40, patience=4, ema_epochs=1.0).fit(
        emb, train, val, k)
    probs = p.predict_proba(emb, val.question, val.llm)
    y = val.correct
    bce = -np.mean(y * np.log(probs) + (1 - y) * np.log(1 - probs))
    assert bce == pytest.approx(p.best_val_loss, rel=1e-4)  # the weights returned are the ones validated
    assert p.best_val_loss == pytest.approx(min(h["val_loss"] for h in p.history), abs=1e-5)


def test_a_fine_tuned_token_table_is_averaged_with_the_rest() -> None:
    from jeirt_lite_training.static_finetune import token_bags, train_table

    class _Tokenizer:  # [CLS]=1, one id per word (its length + 2), [SEP]=2
        class _Encoding:
            def __init__(self, ids: list[int]) -> None:
                self.ids, self.attention_mask = ids, [1] * len(ids)

        def encode_batch(self, texts: list[str]) -> list[_Tokenizer._Encoding]:
            return [self._Encoding([1, *(2 + len(w) for w in t.split()), 2]) for t in texts]

    rng = np.random.default_rng(0)
    texts = [" ".join("x" * int(n) for n in rng.integers(1, 8, size=3)) for _ in range(60)]
    question, llm = np.meshgrid(np.arange(60), np.arange(4), indexing="ij")
    correct = np.array([(len(texts[i].split()[0]) + j) % 2 for i, j in zip(question.ravel(), llm.ravel())], np.float32)
    cells = Responses(question.ravel().astype(np.int64), llm.ravel().astype(np.int64), correct)
    start = rng.normal(size=(12, 6)).astype(np.float32)
    bags = token_bags(texts, _Tokenizer())
    hyper = {"dim": 4, "dropout": 0.0, "batch_size": 16, "seed": 0}
    tables = {}
    for ema in (1e-6, 2.0):
        predictor, table = train_table(start, bags, {**hyper, "ema_epochs": ema}, cells, None, 4, pull=0.1,
                                       schedule=[1e-2] * 4)
        model = predictor.model
        assert model is not None
        delta = model.questions.delta.weight.detach().numpy()[:-1]  # the weights the run returned, in the model
        moved = bags.tokens_of(np.arange(60))
        np.testing.assert_allclose(table[moved], start[moved] + delta, atol=1e-6)
        tables[ema] = table
        assert np.abs(table - start).max() > 0
    assert np.abs(tables[2.0] - tables[1e-6]).max() > 1e-4  # the exported table is the averaged one


def test_fit_averages_by_default_and_refuses_a_negative_time_constant() -> None:
    from jeirt_lite_training.__main__ import fit_options, fit_parser
    from jeirt_lite_training.network import JeirtConfig

    def options(*extra: str) -> dict:  # type: ignore[type-arg]
        return fit_options(fit_parser("fit").parse_args(["--data", "d", "--out", "r", *extra]))

    assert options()["ema_epochs"] == JeirtConfig().ema_epochs > 0
    assert options("--ema-epochs", "0")["ema_epochs"] == 0.0
    with pytest.raises(SystemExit) as refused:  # bounded where it is parsed (jeirt_lite.cli._options)
        options("--ema-epochs=-1")
    assert refused.value.code == 2
