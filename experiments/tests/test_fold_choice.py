"""experiments.fold_choice: fit's folds with the grid tried on the first fold alone."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from jeirt_lite_training import choose as choose_module
from jeirt_lite_training.types import Responses
from synthetic_answers import embedding_cells

from experiments.fold_choice import first_fold_choose


def _folds(n_q: int = 180, n_llms: int = 5, dim: int = 8, seed: int = 3) -> tuple[np.ndarray, list[tuple[Responses, Responses]]]:
    """Three folds of questions whose correctness depends on their embedding, every LLM answering each."""
    emb, cells = embedding_cells(n_q, n_llms, dim, seed)
    held = [np.arange(j, n_q, 3) for j in range(3)]
    parts = [(cells.subset(~np.isin(cells.question, h)), cells.subset(np.isin(cells.question, h))) for h in held]
    return emb, parts


def test_the_grid_is_tried_on_the_first_fold_and_the_chosen_setting_on_every_fold(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    emb, parts = _folds()
    held_out_on: list[int] = []
    real_fit = choose_module.JeirtPredictor.fit

    def counting_fit(self, embeddings, train, val, n_llms):  # type: ignore[no-untyped-def]
        held_out_on.append(next(j for j, (_, v) in enumerate(parts) if v is val))
        return real_fit(self, embeddings, train, val, n_llms)

    monkeypatch.setattr(choose_module.JeirtPredictor, "fit", counting_fit)
    sel = first_fold_choose(emb, parts, 5, dims=(4, 16), dropouts=(0.0, 0.7), max_epochs=25, seed=0)
    # four settings on the first fold; the chosen one again on all three (its first run repeated, same seed)
    assert held_out_on == [0, 0, 0, 0, 0, 1, 2]
    first_fold = [c["val_loss"] for c in sel.candidates]
    chosen = sel.candidates[int(np.argmin(first_fold))]
    assert len(sel.candidates) == 4 and (sel.hyper["dim"], sel.hyper["dropout"]) == (chosen["dim"], chosen["dropout"])
    assert [r.config.dim for r in sel.predictors] == [chosen["dim"]] * 3
    assert sel.predictors[0].best_val_loss == pytest.approx(chosen["val_loss"])  # the repeated run is the same run
    assert sel.heldout is not None and len(sel.heldout) == sum(len(v) for _, v in parts)  # out of fold: every cell
    held_out_on.clear()
    one = first_fold_choose(emb, parts[:1], 5, dims=(4,), dropouts=(0.0,), max_epochs=5, seed=0)
    assert held_out_on == [0] and len(one.predictors) == 1  # one part: fit's own choice, nothing repeated
