"""Small synthetic answer matrices for the training tests and the laboratory's."""

from __future__ import annotations

import numpy as np
from jeirt_lite_training.prepared import Prepared
from jeirt_lite_training.types import Dataset, Responses, Split


def embedding_cells(n_q: int, n_llms: int, dim: int, seed: int) -> tuple[np.ndarray, Responses]:
    """Questions whose correctness depends on their embedding (a signal to learn), every LLM answering each."""
    rng = np.random.default_rng(seed)
    emb = rng.standard_normal((n_q, dim)).astype(np.float32)
    skill = rng.standard_normal((n_llms, dim))
    q, llm = np.repeat(np.arange(n_q), n_llms), np.tile(np.arange(n_llms), n_q)
    p = 1 / (1 + np.exp(-(emb[q] * skill[llm]).sum(axis=1)))
    return emb, Responses(q, llm, (rng.random(len(q)) < p).astype(np.float32))


def synthetic_prepared(emb: np.ndarray, cells: Responses, k: int, parts: tuple[np.ndarray, ...]) -> Prepared:
    """`cells` of k LLMs ("llm-0", ...) on questions "q0", ... with embeddings `emb`, split into the (train,
    validation, test) questions `parts`, as `prepare` would hand them to training."""
    n = emb.shape[0]
    data = Dataset("synthetic", [str(i) for i in range(n)], [f"q{i}" for i in range(n)], np.array(["b"] * n),
                   np.array(["s"] * n), [f"llm-{j}" for j in range(k)], cells)
    split = Split(*parts)
    return Prepared(data, split, 0, *(split.responses(data, name) for name in ("train", "val", "test")), emb,
                    "synthetic", 0)
