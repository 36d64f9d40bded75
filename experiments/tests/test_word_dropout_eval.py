"""experiments.word_dropout_eval: its table lookups drop tokens only while training, and pool the kept ones."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from jeirt_lite_training.static_finetune import TableDelta, TokenBags  # noqa: E402

from experiments.word_dropout_eval import _rates, table_delta_class, word_dropout_delta  # noqa: E402


def _source(rate: float) -> tuple[TableDelta, np.ndarray, TokenBags]:
    rng = np.random.default_rng(0)
    start = rng.normal(size=(12, 4)).astype(np.float32)
    lengths = np.array([3, 5, 1, 4], dtype=np.int64)
    ids = rng.integers(0, 12, size=int(lengths.sum())).astype(np.int64)
    bags = TokenBags(ids=ids, starts=np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64), lengths=lengths)
    source = word_dropout_delta(rate, seed=3)(start, bags, np.arange(12), pull=0.1)
    with torch.no_grad():
        source.delta.weight[:-1] = torch.from_numpy(rng.normal(size=(12, 4)).astype(np.float32))
    return source, start + source.delta.weight.detach().numpy()[:-1], bags


def test_without_gradients_or_at_rate_zero_it_is_the_table_as_it_is() -> None:
    rows = torch.tensor([0, 1, 2, 3])
    plain, _, _ = _source(0.0)
    dropping, _, _ = _source(0.5)
    with torch.no_grad():
        expected = TableDelta.__getitem__(dropping, rows)
        assert torch.allclose(dropping[rows], expected)
    assert torch.allclose(plain[rows], TableDelta.__getitem__(plain, rows))


def test_while_training_each_question_is_the_normalised_mean_of_the_tokens_it_keeps() -> None:
    source, rows_now, bags = _source(0.5)
    rows = torch.tensor([1, 3, 2])
    out = source[rows].detach().numpy()
    keep = np.random.default_rng(3).random(int(bags.lengths[[1, 3, 2]].sum())) >= 0.5
    at = 0
    for k, q in enumerate([1, 3, 2]):
        tokens = bags.ids[bags.starts[q]: bags.starts[q] + bags.lengths[q]]
        kept = keep[at: at + len(tokens)].copy()
        kept[0] = True  # the first token is always kept
        at += len(tokens)
        mean = rows_now[tokens[kept]].mean(axis=0)
        np.testing.assert_allclose(out[k], mean / np.linalg.norm(mean), rtol=1e-5, atol=1e-6)
    assert not np.allclose(out, TableDelta.__getitem__(source, rows).detach().numpy())  # some token was dropped


def test_train_table_builds_the_class_given_and_the_module_is_restored_after() -> None:
    from jeirt_lite_training import static_finetune

    cls = word_dropout_delta(0.1, seed=0)
    with table_delta_class(cls):
        assert static_finetune.TableDelta is cls
    assert static_finetune.TableDelta is TableDelta


@pytest.mark.parametrize("text", ["", "1", "0.1,-0.2", "a"])
def test_rates_outside_0_to_1_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        _rates(text)
