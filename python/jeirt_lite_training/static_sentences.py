"""The static token table fitted to the transformer's sentence embeddings of the training texts.

The distilled table (static_encoder.distil) gives each token what the transformer says about that token alone, so
a question's mean of rows keeps only part of what the transformer says about the whole question. Here the rows are
moved so that each training text's normalised mean of rows comes as close as it can to the transformer's own
normalised embedding of that text (the squared distance of the two unit vectors, 2 − 2·cosine), as model2vec's
"tokenlearn" does. Only the texts are read, never the answers: it is part of building the encoder, like the SIF
token frequencies. `fit` gives it the training part's texts alone (prepared.prepare_split): a table fitted to the
validation texts too encodes them better than unseen ones, and the held-out part then over-rates it
(docs/research/encoders.md).

A tenth of the texts is kept out to stop on: training stops after the first epoch that does not raise their mean
cosine, and the rows of the best epoch are kept. Tokens that no fitted text contains keep their starting row.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ._runtime import alignment
from .encoders import load_tokenizer
from .static_encoder import (
    DEFAULT_SIF_A,
    DEFAULT_STUDENT,
    StaticTable,
    sif_weighted,
    teacher_names,
    teacher_sources,
    teacher_vectors,
)
from .static_finetune import TableDelta, TokenBags, token_bags

# Adam's step for the rows, and the epochs it may take: the held-out cosine peaks within a few epochs
# (docs/research/encoders.md, "The static table fitted to MiniLM's sentence embeddings").
SENTENCE_FIT_LR = 0.02
SENTENCE_FIT_MAX_EPOCHS = 30
SENTENCE_FIT_BATCH = 256
HELD_OUT_SHARE = 0.1


@dataclass(frozen=True)
class SentenceFit:
    """What the fit did, for the router's training record."""

    texts: int
    epochs: int
    held_out_cosine_before: float
    held_out_cosine: float

    def record(self) -> dict[str, Any]:
        return {"texts": self.texts, "epochs": self.epochs,
                "held_out_cosine_before": round(self.held_out_cosine_before, 4),
                "held_out_cosine": round(self.held_out_cosine, 4)}


def _unit_targets(vectors: np.ndarray) -> np.ndarray:
    """The sentence embeddings as float32 unit rows; a zero one has no direction to fit, so it is refused."""
    if not np.all(np.linalg.norm(vectors.astype(np.float64), axis=1) > 0):
        raise ValueError("a target sentence embedding is zero: it has no direction to fit")
    return alignment.unit_rows(vectors).astype(np.float32)  # divided in float64, as the runtime's reference does


def _mean_cosine(source: TableDelta, targets: torch.Tensor, rows: np.ndarray) -> float:
    with torch.no_grad():
        picked = torch.from_numpy(rows)
        return float((source[picked] * targets[picked]).sum(dim=1).mean())


def fit_to_sentences(
    start: np.ndarray, bags: TokenBags, targets: np.ndarray, *, seed: int = 0, lr: float = SENTENCE_FIT_LR,
    max_epochs: int = SENTENCE_FIT_MAX_EPOCHS, log: Callable[[str], None] = lambda _: None,
) -> tuple[np.ndarray, SentenceFit]:
    """The table `start` (V, D) with its rows moved so that the bags' pooled embeddings approach `targets` (one
    (D,) sentence embedding per bag). Returns the fitted table (float32) and what the fit did."""
    n = len(bags.lengths)
    if targets.shape != (n, start.shape[1]):
        raise ValueError(f"targets must be one {start.shape[1]}-wide row per text ({n}), got {targets.shape}")
    if n < 2:
        raise ValueError(f"fitting the table to sentence embeddings needs at least 2 texts, got {n}")
    order, n_held = np.random.default_rng(seed).permutation(n), max(1, round(n * HELD_OUT_SHARE))
    held, fitted = np.sort(order[:n_held]), order[n_held:]
    goal = torch.from_numpy(_unit_targets(targets))
    source = TableDelta(start, bags, bags.tokens_of(fitted), pull=0.0, lr_scale=1.0)
    optimiser = torch.optim.AdamW(source.param_groups(lr))
    generator = torch.Generator().manual_seed(seed)
    before = best = _mean_cosine(source, goal, held)
    best_rows, epochs = source.delta.weight.detach().clone(), 0
    for epoch in range(1, max_epochs + 1):
        for batch in torch.randperm(len(fitted), generator=generator).split(SENTENCE_FIT_BATCH):
            rows = torch.from_numpy(fitted[batch.numpy()])
            loss = ((source[rows] - goal[rows]) ** 2).sum(dim=1).mean()
            optimiser.zero_grad(set_to_none=True)
            loss.backward()
            optimiser.step()
        cosine = _mean_cosine(source, goal, held)
        log(f"  table fitted to sentence embeddings, epoch {epoch}: held-out cosine {cosine:.4f}")
        if cosine <= best:
            break
        best, best_rows, epochs = cosine, source.delta.weight.detach().clone(), epoch
    with torch.no_grad():
        source.delta.weight.copy_(best_rows)
    return source.table(), SentenceFit(texts=n, epochs=epochs, held_out_cosine_before=before, held_out_cosine=best)


def projected(table: np.ndarray, sentence_vectors: np.ndarray, dim: int) -> np.ndarray:
    """The rows on the top `dim` right singular vectors of the unit sentence embeddings, uncentred: a linear map
    without a shift, so it commutes with the mean of a text's rows."""
    _, _, directions = np.linalg.svd(_unit_targets(sentence_vectors).astype(np.float64), full_matrices=False)
    return (table.astype(np.float64) @ directions[:dim].T).astype(np.float32)


def distil_to_sentences(
    teacher: str, train_texts: Sequence[str], sentence_vectors: np.ndarray, *, max_length: int,
    dim: int | None = None, sif_a: float = DEFAULT_SIF_A, seed: int = 0, log: Callable[[str], None] = lambda _: None,
) -> tuple[StaticTable, SentenceFit]:
    """A static table over the student's vocabulary: the teacher's token vectors (uncentred, as its sentence
    embeddings are) weighted by SIF from `train_texts`, then fitted to `sentence_vectors`, the teacher's embedding
    of each of `train_texts`. dim: project the rows onto the top `dim` directions of those sentence embeddings
    (uncentred, so a text's mean of rows is projected as a whole); None keeps the teacher's width."""
    if len(teacher_names(teacher)) != 1:
        raise ValueError(f"fitting the table to sentence embeddings takes one teacher, got {teacher!r}")
    start = sif_weighted(teacher_vectors(teacher), train_texts, max_length=max_length, sif_a=sif_a)
    bags = token_bags(train_texts, load_tokenizer(DEFAULT_STUDENT, max_length))
    table, fit = fit_to_sentences(start, bags, sentence_vectors, seed=seed, log=log)
    if dim is not None and dim < table.shape[1]:
        table = projected(table, sentence_vectors, dim)
    source = (f"distilled from {teacher_sources(teacher)}, fitted to its sentence embeddings of {fit.texts} "
              f"training texts (held-out cosine {fit.held_out_cosine_before:.2f} -> {fit.held_out_cosine:.2f})")
    return StaticTable(table=np.ascontiguousarray(table), sif_a=sif_a, source=source), fit
