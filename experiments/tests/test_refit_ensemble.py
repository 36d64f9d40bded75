"""experiments.refit_ensemble: more refits of fit's chosen setting, their geometry averaged, the votes added once."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from jeirt_lite_training.choose import choose, refit
from jeirt_lite_training.pipeline import FitResult
from jeirt_lite_training.types import Responses
from synthetic_answers import embedding_cells

from experiments.refit_ensemble import ensemble_logits, paired, seed_refits


def _fitted(n_q: int = 150, n_llms: int = 4, dim: int = 6, seed: int = 2) -> tuple[FitResult, Responses, int]:
    """fit's choose and refit on questions whose correctness depends on their embedding, as a FitResult."""
    emb, cells = embedding_cells(n_q, n_llms, dim, seed)
    held = np.isin(cells.question, np.arange(0, n_q, 5))
    selection = choose(emb, [(cells.subset(~held), cells.subset(held))], n_llms, dims=(4,), dropouts=(0.0,),
                       max_epochs=8, seed=0)
    result = FitResult(predictor=refit(emb, cells, n_llms, selection), val={}, test={}, floor_test={},
                       selection=selection, embeddings=emb)
    return result, cells, n_llms


class _ConstantVotes:
    """Neighbour votes that add 0.1·(LLM index + 1) to every logit."""

    llms = None

    def offsets(self, features: np.ndarray, llms: object, n: int) -> np.ndarray:
        return np.tile(0.1 * np.arange(1, 5), (n, 1))


def test_refits_share_the_choice_and_schedule_and_differ_in_seed() -> None:
    result, cells, n_llms = _fitted()
    extra = seed_refits(result, cells, n_llms, members=3, seed=7)
    assert [p.config.seed for p in extra] == [1007, 2007]
    assert all(p.config.dim == result.selection.hyper["dim"] for p in extra)
    assert all([h["lr"] for h in p.history] == pytest.approx(result.selection.schedule) for p in extra)
    q, llm = cells.question[:40], cells.llm[:40]
    a, b = (p.predict_logits(result.embeddings, q, llm) for p in extra)
    assert not np.allclose(a, b)  # another seed, another model


def test_the_ensemble_averages_the_geometry_and_adds_the_votes_once() -> None:
    result, cells, n_llms = _fitted()
    result.votes = _ConstantVotes()  # type: ignore[assignment]
    extra = seed_refits(result, cells, n_llms, members=3, seed=0)
    q, llm = cells.question[:60], cells.llm[:60]
    one, two, three = ensemble_logits(result, extra, q, llm)
    np.testing.assert_allclose(one, result.logits(q, llm), rtol=1e-6)  # the router itself
    geometry = [result.logits(q, llm, votes=False)] + [p.predict_logits(result.embeddings, q, llm) for p in extra]
    np.testing.assert_allclose(three - np.mean(geometry, axis=0), 0.1 * (llm + 1), rtol=1e-5)
    np.testing.assert_allclose(two, np.mean(geometry[:2], axis=0) + 0.1 * (llm + 1), rtol=1e-5)


def test_paired_counts_a_lower_log_loss_as_better() -> None:
    member = {"auc": 0.8, "log_loss": 0.5, "accuracy": 0.7, "ece": 0.02}
    splits = [
        {"member": member, "ensembles": {"2": {**member, "auc": 0.81, "log_loss": 0.49}}},
        {"member": member, "ensembles": {"2": {**member, "auc": 0.79, "log_loss": 0.52}}},
    ]
    out = paired(splits, members=2)["2"]
    assert out["auc"]["mean"] == pytest.approx(0.0) and out["auc"]["better"] == 1
    assert out["log_loss"]["mean"] == pytest.approx(0.005) and out["log_loss"]["better"] == 1
    assert out["auc"]["sd"] == pytest.approx(np.std([0.01, -0.01], ddof=1))
