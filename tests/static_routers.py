"""A small trained static router (a random token table over MiniLM's vocabulary, a one-epoch adapter), written by
the training library's own export, for tests of what writes and rewrites static routers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from jeirt_lite_training.model import JeirtPredictor
from jeirt_lite_training.static_encoder import StaticTable
from synthetic_answers import embedding_cells

VOCABULARY = 30522  # all-MiniLM-L6-v2's tokenizer, which every static router reads
LLMS = ["llm-a", "llm-b", "llm-c"]


def export_random_static(out: Path, seed: int) -> Path:
    from jeirt_lite_training.static_router import export_static_router

    rng = np.random.default_rng(seed)
    static = StaticTable(rng.normal(size=(VOCABULARY, 8)).astype(np.float32), 1e-3, "a random table (test)")
    emb, cells = embedding_cells(40, len(LLMS), 8, seed)
    predictor = JeirtPredictor(dim=4, max_epochs=1, seed=seed).fit(emb, cells, cells, len(LLMS))
    return export_static_router(static, predictor, out, LLMS, max_length=64, training={}, metrics={}, label=None,
                                overwrite=False)
