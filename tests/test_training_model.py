"""JE-IRT model unit tests: the logit and loss against hand computations, shapes, determinism, input checks."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from jeirt_lite_training.model import Adapter, JeirtModel, JeirtPredictor, jeirt_logit_matrix, jeirt_logits
from jeirt_lite_training.types import Responses


def test_logit_matches_hand_computation() -> None:
    # q = (3, 4): |q| = 5; m = (1, 2): q·m = 11  →  11/5 − 5 = −2.8
    q = torch.tensor([[3.0, 4.0], [0.0, 2.0], [0.3, 0.4]])
    m = torch.tensor([[1.0, 2.0], [-1.0, 0.5], [1.0, 2.0]])
    # second row: |q| = 2, q·m = 1  →  1/2 − 2 = −1.5; third, an easy question (|q| < 1): 1.1/0.5 − 0.5 = 1.7
    got = jeirt_logits(q, m)
    assert got.tolist() == pytest.approx([-2.8, -1.5, 1.7], abs=1e-6)
    assert jeirt_logit_matrix(q, m[:1]).reshape(-1).tolist() == pytest.approx([-2.8, 0.0, 1.7], abs=1e-6)


def test_loss_is_bce_of_that_logit() -> None:
    q = torch.tensor([[3.0, 4.0]])
    m = torch.tensor([[1.0, 2.0]])
    logit = jeirt_logits(q, m)
    loss_correct = torch.nn.functional.binary_cross_entropy_with_logits(logit, torch.tensor([1.0]))
    loss_wrong = torch.nn.functional.binary_cross_entropy_with_logits(logit, torch.tensor([0.0]))
    p = 1 / (1 + math.exp(2.8))
    assert float(loss_correct) == pytest.approx(-math.log(p), rel=1e-5)
    assert float(loss_wrong) == pytest.approx(-math.log(1 - p), rel=1e-5)


def test_zero_question_vector_gives_finite_logit() -> None:
    q = torch.zeros(1, 4, requires_grad=True)
    m = torch.ones(1, 4)
    logit = jeirt_logits(q, m)
    assert torch.isfinite(logit).all() and float(logit.detach()) == 0.0
    logit.sum().backward()
    assert q.grad is not None and torch.isfinite(q.grad).all()


def test_logit_matrix_agrees_with_pairwise() -> None:
    g = torch.Generator().manual_seed(1)
    q, m = torch.randn(5, 8, generator=g), torch.randn(3, 8, generator=g)
    mat = jeirt_logit_matrix(q, m)
    qi, mi = torch.meshgrid(torch.arange(5), torch.arange(3), indexing="ij")
    pair = jeirt_logits(q[qi.reshape(-1)], m[mi.reshape(-1)]).reshape(5, 3)
    torch.testing.assert_close(mat, pair)


@pytest.mark.parametrize("dim", [1, 16, 96])
def test_adapter_and_model_shapes(dim: int) -> None:
    adapter = Adapter(384, dim, dropout=0.3)
    assert adapter(torch.zeros(7, 384)).shape == (7, dim)
    hidden = adapter.net[0]
    assert isinstance(hidden, torch.nn.Linear) and hidden.out_features == 768  # D → 2D
    model = JeirtModel(384, 5, dim, 0.1)
    assert model.llms.weight.shape == (5, dim)
    assert model(torch.zeros(7, 384), torch.arange(7) % 5).shape == (7,)


def _synthetic(n_q: int = 120, n_llms: int = 6, dim_in: int = 12, seed: int = 0):  # type: ignore[no-untyped-def]
    """A tiny problem with real structure: correctness depends on the embedding and the LLM."""
    rng = np.random.default_rng(seed)
    emb = rng.normal(size=(n_q, dim_in)).astype(np.float32)
    skill = rng.normal(size=(n_llms, dim_in))
    qq, ll = np.meshgrid(np.arange(n_q), np.arange(n_llms), indexing="ij")
    qq, ll = qq.reshape(-1), ll.reshape(-1)
    logits = (emb[qq] * skill[ll]).sum(1)
    correct = (rng.random(qq.size) < 1 / (1 + np.exp(-logits))).astype(np.float32)
    cells = Responses(qq.astype(np.int64), ll.astype(np.int64), correct)
    train = cells.subset(qq < 90)
    val = cells.subset(qq >= 90)
    return emb, train, val, n_llms


def test_same_seed_same_model_other_seed_other_model() -> None:
    emb, train, val, k = _synthetic()
    kw = {"dim": 8, "max_epochs": 5, "patience": 5, "batch_size": 64}
    a = JeirtPredictor(seed=3, **kw).fit(emb, train, val, k)
    b = JeirtPredictor(seed=3, **kw).fit(emb, train, val, k)
    c = JeirtPredictor(seed=4, **kw).fit(emb, train, val, k)
    np.testing.assert_array_equal(a.llm_vectors, b.llm_vectors)
    np.testing.assert_array_equal(a.question_vectors(emb), b.question_vectors(emb))
    assert not np.array_equal(a.llm_vectors, c.llm_vectors)
    assert a.llm_vectors.shape == (k, 8) and a.llm_vectors.dtype == np.float32


def test_training_lowers_validation_loss_and_restores_best() -> None:
    emb, train, val, k = _synthetic()
    p = JeirtPredictor(dim=8, max_epochs=40, patience=5, batch_size=64, lr=3e-3).fit(emb, train, val, k)
    losses = [h["val_loss"] for h in p.history]
    assert min(losses) < losses[0]  # warm start is the per-LLM accuracy; training must improve on it
    assert p.best_val_loss == pytest.approx(min(losses), abs=1e-5)  # gains under 1e-5 do not count as a new best
    assert p.history[p.best_epoch]["val_loss"] == pytest.approx(p.best_val_loss)
    # The returned weights are the best epoch's, not the last one's.
    probs = p.predict_proba(emb, val.question, val.llm)
    y = val.correct
    bce = -np.mean(y * np.log(probs) + (1 - y) * np.log(1 - probs))
    assert bce == pytest.approx(p.best_val_loss, rel=1e-4)


def test_learning_rate_drops_at_plateaus_then_stops() -> None:
    emb, train, val, k = _synthetic()
    kw = {"dim": 8, "max_epochs": 200, "patience": 3, "batch_size": 64, "lr": 3e-3}
    p = JeirtPredictor(lr_drops=2, lr_drop_patience=2, **kw).fit(emb, train, val, k)
    lrs = [h["lr"] for h in p.history]
    assert lrs == sorted(lrs, reverse=True)  # never raised
    assert sorted(set(lrs), reverse=True) == pytest.approx([3e-3, 3e-4, 3e-5])  # two drops, each by 10
    # A drop comes after lr_drop_patience epochs without a new best; stopping after patience more at the last rate.
    first_drop = next(i for i, h in enumerate(p.history) if h["lr"] < 3e-3)
    best_before = min(range(first_drop), key=lambda i: p.history[i]["val_loss"])
    assert first_drop - 1 - best_before == 2
    assert len(p.history) - 1 < 200
    plain = JeirtPredictor(lr_drops=0, **kw).fit(emb, train, val, k)
    assert {h["lr"] for h in plain.history} == {3e-3}
    with pytest.raises(ValueError, match="lr_drop_patience >= 1"):
        JeirtPredictor(lr_drop_patience=0, **kw).fit(emb, train, val, k)


@pytest.mark.parametrize("patience", [1, 3])
def test_training_stops_exactly_patience_epochs_after_the_best(patience: int) -> None:
    """Without learning-rate drops, the last epoch run is the best epoch + patience: one epoch later (a > for >=) or
    earlier would change every router's schedule."""
    emb, train, val, k = _synthetic()
    kw = {"dim": 8, "max_epochs": 200, "batch_size": 64, "lr": 3e-2, "lr_drops": 0, "ema_epochs": 0.0}
    p = JeirtPredictor(patience=patience, **kw).fit(emb, train, val, k)
    last = p.history[-1]["epoch"]
    assert last < 200  # it stopped early, not at max_epochs
    assert last == p.best_epoch + patience
    # No epoch between the best and the stop improved on the best by the 1e-5 that counts.
    assert all(h["val_loss"] >= p.best_val_loss - 1e-5 for h in p.history[p.best_epoch + 1 :])


def test_llm_table_learns_at_its_own_rate() -> None:
    emb, train, _, k = _synthetic()
    kw = {"dim": 8, "max_epochs": 1, "batch_size": 64, "lr": 1e-3, "lr_drops": 0, "seed": 2}

    def moved(scale: float) -> tuple[float, float]:
        """How far one epoch moves the LLM vectors and the question vectors (validated on the training cells, so
        that the epoch counts as an improvement and its weights are kept)."""
        start = JeirtPredictor(llm_lr_scale=scale, **{**kw, "max_epochs": 0}).fit(emb, train, train, k)
        p = JeirtPredictor(llm_lr_scale=scale, **kw).fit(emb, train, train, k)
        assert p.best_epoch == 1
        return (float(np.abs(p.llm_vectors - start.llm_vectors).max()),
                float(np.abs(p.question_vectors(emb) - start.question_vectors(emb)).max()))

    (llm_1, q_1), (llm_10, q_10) = moved(1.0), moved(10.0)
    # Adam moves each weight by about lr a step: 10x the table's rate moves the LLM vectors ~10x as far, while the
    # adapter keeps its own rate.
    assert llm_10 > 5 * llm_1
    assert 0.5 < q_10 / q_1 < 2
    with pytest.raises(ValueError, match="llm_lr_scale must be > 0"):
        JeirtPredictor(llm_lr_scale=0.0, **kw).fit(emb, train, train, k)
    with pytest.raises(ValueError, match=r"seed must be in 0\.\.9223372036854775807, got -3"):
        JeirtPredictor(**{**kw, "seed": -3}).fit(emb, train, train, k)


def test_predict_proba_shape_and_range(capfd: pytest.CaptureFixture[str]) -> None:
    emb, train, val, k = _synthetic()
    p = JeirtPredictor(dim=4, max_epochs=2).fit(emb, train, val, k)
    assert capfd.readouterr() == ("", "")  # a library call is quiet unless asked for progress
    out = p.predict_proba(emb, np.array([[0, 1], [2, 2]]), np.array([[0, 5], [1, 2]]))
    assert out.shape == (2, 2) and ((out > 0) & (out < 1)).all()


def test_bad_inputs_raise_clear_errors() -> None:
    emb, train, val, k = _synthetic()
    with pytest.raises(RuntimeError, match="not fitted"):
        JeirtPredictor().predict_proba(emb, np.array([0]), np.array([0]))
    with pytest.raises(TypeError, match="unknown JE-IRT hyper-parameters"):
        JeirtPredictor(dimension=3)
    with pytest.raises(IndexError, match="llm index"):
        JeirtPredictor(max_epochs=1).fit(emb, train, val, n_llms=k - 1)
    bad = Responses(train.question, train.llm, np.where(train.correct > 0, 2.0, 0.0).astype(np.float32))
    with pytest.raises(ValueError, match="0 or 1"):
        JeirtPredictor(max_epochs=1).fit(emb, bad, val, k)
    holed = emb.copy()
    holed[3, 1] = np.nan
    with pytest.raises(ValueError, match=r"NaN or infinite values in 1 rows \(first: \[3\]\)"):
        JeirtPredictor(max_epochs=1).fit(holed, train, val, k)
    p = JeirtPredictor(dim=4, max_epochs=1).fit(emb, train, val, k)
    for wrong in (k, k + 1, -1):  # -1 would silently wrap to the last LLM
        with pytest.raises(IndexError, match="llm index out of range"):
            p.predict_proba(emb, np.array([0]), np.array([wrong]))
    for question, llm in (([0, 1], [0]), ([0], [0, 1])):
        with pytest.raises(ValueError, match="same shape"):
            p.predict_proba(emb, np.array(question), np.array(llm))
    assert p.predict_proba(emb, np.array([4]), np.array([k - 1])).shape == (1,)  # no LLM 0 asked: fine


def test_a_run_on_a_fixed_schedule_is_quiet_and_takes_hard_labels_by_default(capfd: pytest.CaptureFixture[str]) -> None:
    emb, train, _, k = _synthetic()
    p = JeirtPredictor(dim=4).fit_schedule(emb, train, k, [1e-3, 5e-4])
    assert capfd.readouterr() == ("", "") and p.schedule == [1e-3, 5e-4]
    soft = Responses(train.question, train.llm, np.full(len(train), 0.7, np.float32))
    with pytest.raises(ValueError, match="0 or 1"):
        JeirtPredictor(dim=4).fit_schedule(emb, soft, k, [1e-3])
    assert JeirtPredictor(dim=4).fit_schedule(emb, soft, k, [1e-3], soft_targets=True).model is not None
