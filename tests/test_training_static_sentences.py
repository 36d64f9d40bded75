"""The static table fitted to a transformer's sentence embeddings (jeirt_lite_training.static_sentences): the fit
brings held-out texts' pooled embeddings closer to their targets, moves only tokens of the fitted texts, stops on
the held-out texts, rejects targets of the wrong shape or without a direction, and its projection to fewer
dimensions commutes with the runtime's mean of rows."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from jeirt_lite_training.static_encoder import static_embed
from jeirt_lite_training.static_finetune import token_bags
from jeirt_lite_training.static_sentences import HELD_OUT_SHARE, fit_to_sentences, projected
from test_training_static_finetune import _WordTokenizer

LETTERS = "abcdefghijklmnop"


def _pooled(table: np.ndarray, texts: list[str]) -> np.ndarray:
    enc = _WordTokenizer().encode_batch(texts)
    return static_embed(table, np.array([e.ids for e in enc]), np.array([e.attention_mask for e in enc]))


def _toy(n: int = 300, width: int = 8, seed: int = 0) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Texts of random words; the targets are what a hidden table says of them, the start table is noise."""
    rng = np.random.default_rng(seed)
    texts = [" ".join(rng.choice(list(LETTERS), size=rng.integers(2, 7))) for _ in range(n)]
    hidden = rng.normal(size=(3 + len(LETTERS) + 4, width)).astype(np.float32)
    start = rng.normal(size=hidden.shape).astype(np.float32)
    return texts, start, _pooled(hidden, texts)


def test_the_fit_brings_held_out_texts_closer_to_their_targets() -> None:
    texts, start, targets = _toy()
    bags = token_bags(texts, _WordTokenizer())
    table, fit = fit_to_sentences(start, bags, targets, lr=0.05)
    assert fit.epochs >= 1 and fit.texts == len(texts)
    assert fit.held_out_cosine > fit.held_out_cosine_before + 0.2
    cosine = (_pooled(table, texts) * targets).sum(axis=1)
    before = (_pooled(start, texts) * targets).sum(axis=1)
    assert cosine.mean() > before.mean() + 0.2
    assert fit.record()["held_out_cosine"] == round(fit.held_out_cosine, 4)


def test_only_tokens_of_the_fitted_texts_move() -> None:
    texts, start, targets = _toy()
    table, _ = fit_to_sentences(start, token_bags(texts, _WordTokenizer()), targets, lr=0.05)
    moved = np.flatnonzero(np.abs(table - start).max(axis=1) > 0)
    assert set(moved) <= set(range(1, 3 + len(LETTERS)))  # [CLS], [SEP] and the letters; never padding or unused ids
    np.testing.assert_array_equal(table[-4:], start[-4:])


def test_the_fit_stops_at_the_best_held_out_epoch() -> None:
    texts, start, _ = _toy(n=60)
    targets = np.random.default_rng(1).normal(size=(60, start.shape[1])).astype(np.float32)  # nothing to learn
    bags = token_bags(texts, _WordTokenizer())
    table, fit = fit_to_sentences(start, bags, targets, lr=0.05, max_epochs=30)
    assert fit.epochs < 30  # fitting noise does not help the held-out texts for long, and the fit stops
    held = np.sort(np.random.default_rng(0).permutation(len(texts))[: round(len(texts) * HELD_OUT_SHARE)])
    unit = targets[held] / np.linalg.norm(targets[held], axis=1, keepdims=True)
    kept = (_pooled(table, [texts[i] for i in held]) * unit).sum(axis=1).mean()
    assert kept == pytest.approx(fit.held_out_cosine, abs=1e-4)


@pytest.mark.parametrize("bad, message", [("shape", "one 8-wide row per text"), ("zero", "zero")])
def test_bad_targets_get_a_clear_error(bad: str, message: str) -> None:
    texts, start, targets = _toy(n=20)
    bags = token_bags(texts, _WordTokenizer())
    if bad == "shape":
        targets = targets[:, :5]
    else:
        targets[3] = 0.0
    with pytest.raises(ValueError, match=message):
        fit_to_sentences(start, bags, targets)


def test_the_projection_commutes_with_the_mean_of_rows() -> None:
    texts, start, targets = _toy(n=50)
    small = projected(start, targets, 3)
    assert small.shape == (start.shape[0], 3)
    enc = _WordTokenizer().encode_batch(texts)
    ids, mask = np.array([e.ids for e in enc]), np.array([e.attention_mask for e in enc])
    mean_then_project = projected((start[ids] * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True), targets, 3)
    project_then_mean = (small[ids] * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
    np.testing.assert_allclose(project_then_mean, mean_then_project, rtol=1e-4, atol=1e-5)


def test_fit_fits_the_table_to_the_training_texts_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """The validation texts are held out from the fitted table, so `fit`'s held-out part does not over-rate it."""
    from jeirt_lite_training import embeddings, static_encoder, static_router, static_sentences
    from jeirt_lite_training.prepared import STATIC, prepare_split
    from jeirt_lite_training.splits import make_split
    from test_training_splits import synthetic

    read: dict[str, list[str]] = {}

    def fitted(teacher: str, texts: list[str], vectors: np.ndarray, **_: object) -> tuple[object, None]:
        read["fit"], read["targets"] = list(texts), [f"{v:.0f}" for v in vectors[:, 0]]
        return static_encoder.StaticTable(np.ones((4, 3), np.float32), 1e-3, "toy"), None

    monkeypatch.setattr(embeddings, "embed_texts", lambda texts, *_: np.array([[float(t.split()[1])] for t in texts]))
    monkeypatch.setattr(static_sentences, "distil_to_sentences", fitted)
    monkeypatch.setattr(static_router, "load_tokenizer", lambda *_: None)
    monkeypatch.setattr(static_encoder, "embed_texts", lambda table, tok, texts: np.ones((len(texts), 3), np.float32))
    data = synthetic()
    split = make_split(data, seed=0)
    prep = prepare_split(data, split, split_seed=0, encoder=STATIC, progress=False, fit_sentences=True)
    assert read["fit"] == [data.texts[i] for i in split.train]
    assert read["targets"] == [t.split()[1] for t in read["fit"]]  # each text's own sentence embedding
    assert prep.embeddings.shape == (len(data.texts), 3)
