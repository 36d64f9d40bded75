"""The static encoder's token table fine-tuned end to end under the JE-IRT loss, held close to its distilled start.

A question's embedding is the normalised mean of its tokens' rows, as in the runtime graph (static_encoder.py); here
the rows of the tokens that occur in the training questions are `start + delta`, `delta` a parameter trained with
the adapter and the LLM table on the same BCE. The pull towards the distilled start is AdamW's decoupled weight
decay on `delta`, the L2 pull in the form Adam handles well; `pull` is the fraction of `delta` it removes at every
step at the starting learning rate (a tenth of that after the first learning-rate drop, and so on), so it means the
same whatever the learning rate and must be below 1. Tokens that no training question contains keep their distilled
row exactly, so the table stays consistent for unseen text.

Whether to fine-tune, and how hard to pull, is chosen on held-out questions like every other setting of `fit`
(`choose_table_pull`, after d and dropout are chosen on the frozen table); the router is then refitted on all
questions with the chosen pull and schedule (`refit_fine_tuned`), and the fine-tuned table goes wherever the
distilled one went (the ONNX graph and static_encoder.safetensors). jeirt_lite_training.pipeline runs the two.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch
from torch import nn

from ._runtime import counted
from .choose import Selection, median_schedule, parts_loss
from .config import DEFAULT_TABLE_PULLS as DEFAULT_TABLE_PULLS  # fit's default, importable without torch
from .model import NORM_EPS, JeirtPredictor
from .types import Responses

# The table learns at this multiple of the adapter's learning rate (each row is touched by few batches): 50x had a
# lower validation loss than 10x on every split tried of both public datasets, and 100x no lower than 50x
# (docs/research/encoders.md). Adam's steps do not scale with the table, so the rate is tied to the scale of the table
# distilled from all-MiniLM-L6-v2; a teacher whose rows are c times smaller moves c times as far at the same rate.
TABLE_LR_SCALE = 50.0


@dataclass(frozen=True)
class TokenBags:
    """Every question's token ids (those the attention mask keeps: [CLS], the text, [SEP]) as one flat array."""

    ids: np.ndarray  # int64, all questions' tokens one after the other
    starts: np.ndarray  # int64, where question i's tokens begin in `ids`
    lengths: np.ndarray  # int64, how many tokens question i has (>= 1)

    def tokens_of(self, questions: np.ndarray) -> np.ndarray:
        """Sorted distinct token ids occurring in the given questions."""
        pick = np.repeat(self.starts[questions] - _offsets(self.lengths[questions]), self.lengths[questions])
        return np.unique(self.ids[pick + np.arange(len(pick))])


def _offsets(lengths: np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)


def token_bags(texts: Sequence[str], tokenizer: Any, batch_size: int = 512) -> TokenBags:
    """Tokenise like the runtime (truncation and special tokens of `tokenizer`), padding dropped."""
    per_text: list[np.ndarray] = []
    for start in range(0, len(texts), batch_size):
        for enc in tokenizer.encode_batch(list(texts[start : start + batch_size])):
            ids = np.asarray(enc.ids, dtype=np.int64)
            per_text.append(ids[np.asarray(enc.attention_mask, dtype=bool)])
    lengths = np.array([len(ids) for ids in per_text], dtype=np.int64)
    flat = np.concatenate(per_text) if per_text else np.zeros(0, np.int64)
    return TokenBags(ids=flat, starts=_offsets(lengths), lengths=lengths)


class TableDelta(nn.Module):
    """Question embeddings normalise(mean of (start + delta) rows), `delta` trainable on the `trainable` tokens only.

    Indexed by question rows like a frozen (n_questions, D) matrix (jeirt_lite_training.fit.TrainableQuestions)."""

    def __init__(
        self, start: np.ndarray, bags: TokenBags, trainable: np.ndarray, *, pull: float,
        lr_scale: float = TABLE_LR_SCALE,
    ) -> None:
        super().__init__()
        if not (0 <= pull < 1 and lr_scale > 0):
            raise ValueError(f"pull must be in [0, 1) and lr_scale > 0, got {pull} and {lr_scale}")
        self.start = np.ascontiguousarray(start, dtype=np.float32)
        self.trainable = np.asarray(trainable, dtype=np.int64)
        self.pull, self.lr_scale = float(pull), float(lr_scale)
        self.bags = bags
        n_rows = len(self.trainable)
        compact = np.full(self.start.shape[0], n_rows, dtype=np.int64)  # n_rows: a frozen token (zero delta)
        compact[self.trainable] = np.arange(n_rows)
        self._compact_ids = compact[bags.ids]
        # The frozen part of each question's sum, and its token count, computed once.
        sums = np.add.reduceat(self.start[bags.ids].astype(np.float64), bags.starts, axis=0)
        self._base_sum = torch.from_numpy(sums.astype(np.float32))
        self._counts = torch.from_numpy(bags.lengths.astype(np.float32))
        self.delta = nn.EmbeddingBag(n_rows + 1, self.start.shape[1], mode="sum", padding_idx=n_rows)
        with torch.no_grad():
            self.delta.weight.zero_()
        self.shape = (len(bags.lengths), int(self.start.shape[1]))
        self.ndim = 2

    def __getitem__(self, rows: torch.Tensor) -> torch.Tensor:
        r = rows.numpy()
        lengths = self.bags.lengths[r]
        offsets = _offsets(lengths)
        pick = np.repeat(self.bags.starts[r] - offsets, lengths) + np.arange(int(lengths.sum()))
        moved = self.delta(torch.from_numpy(self._compact_ids[pick]), torch.from_numpy(offsets))
        pooled = (self._base_sum[rows] + moved) / self._counts[rows, None]
        return pooled / pooled.norm(dim=1, keepdim=True).clamp(min=NORM_EPS)

    def param_groups(self, lr: float) -> list[dict[str, Any]]:
        """AdamW shrinks delta by lr_group x weight_decay a step: `pull` at the starting rate `lr`."""
        table_lr = lr * self.lr_scale
        return [{"params": [self.delta.weight], "lr": table_lr, "lr_scale": self.lr_scale,
                 "weight_decay": self.pull / table_lr}]

    def table(self) -> np.ndarray:
        """The fine-tuned table (V, D) float32: the start with the trained rows moved."""
        out = self.start.copy()
        out[self.trainable] += self.delta.weight.detach().numpy()[:-1]
        return out


def rounded(table: np.ndarray) -> np.ndarray:
    """The table as the router's graph stores it (float16), back in float32."""
    return table.astype(np.float16).astype(np.float32)


def train_table(
    start: np.ndarray, bags: TokenBags, hyper: dict[str, Any], train: Responses, val: Responses | None,
    n_llms: int, *, pull: float, lr_scale: float = TABLE_LR_SCALE, schedule: Sequence[float] | None = None,
    progress: bool = False, soft_targets: bool = False,
) -> tuple[JeirtPredictor, np.ndarray]:
    """One end-to-end run: early-stopped on `val`, or for a fixed `schedule` when val is None. Returns the
    predictor and the fine-tuned table; only tokens of `train`'s questions move. soft_targets: `train`'s answers
    may be probabilities (jeirt_lite_training.fit.train_model)."""
    source = TableDelta(start, bags, bags.tokens_of(np.unique(train.question)), pull=pull, lr_scale=lr_scale)
    predictor = JeirtPredictor(**hyper)
    if val is None:
        assert schedule is not None
        predictor.fit_schedule(source, train, n_llms, schedule, progress=progress, soft_targets=soft_targets)
    else:
        predictor.fit(source, train, val, n_llms, progress=progress, soft_targets=soft_targets)
    return predictor, source.table()


@dataclass
class TableChoice:
    """What the held-out runs said about the table: the pull to refit with (None: keep the distilled table)."""

    pull: float | None
    lr_scale: float
    schedule: list[float]
    candidates: list[dict[str, Any]] = field(default_factory=list)
    heldout_logits: np.ndarray | None = None  # the chosen pull's runs on their validation cells
    heldout_embeddings: list[np.ndarray] = field(default_factory=list)  # each of those runs' features, all questions

    def record(self) -> dict[str, Any]:
        return {
            "fine_tuned": self.pull is not None,
            "pull": self.pull,
            "table_lr_scale": self.lr_scale,
            "candidates": self.candidates,
            "chosen_on": "validation loss of the same held-out runs as d and dropout, at the chosen d and dropout",
        }


def choose_table(
    start: np.ndarray, bags: TokenBags, embeddings_of: Callable[[np.ndarray], np.ndarray],
    parts: Sequence[tuple[Responses, Responses]], n_llms: int, selection: Selection, *,
    pulls: Sequence[float] = DEFAULT_TABLE_PULLS, lr_scale: float = TABLE_LR_SCALE,
    log: Callable[[str], None] = lambda _: None,
) -> TableChoice:
    """Train the chosen (d, dropout) end to end with each pull on each (train, validation) part; keep the pull
    with the lowest validation loss if it beats the frozen table's, else keep the frozen table.

    embeddings_of(table) gives every question's embedding with a table (to predict the held-out cells)."""
    frozen = parts_loss([p.best_val_loss for p in selection.predictors], parts)
    choice = TableChoice(None, lr_scale, list(selection.schedule),
                         [{"pull": None, "val_loss": frozen, "what": "distilled table, frozen"}])
    best_loss = frozen
    for pull in pulls:
        runs = [train_table(start, bags, selection.hyper, train, val, n_llms, pull=pull, lr_scale=lr_scale)
                for train, val in parts]
        loss = parts_loss([r.best_val_loss for r, _ in runs], parts)
        choice.candidates.append({"pull": pull, "val_loss": loss, "best_epochs": [r.best_epoch for r, _ in runs]})
        log(f"  table fine-tuned, pull {pull:g}: validation log-loss {loss:.4f} (frozen {frozen:.4f})")
        if loss < best_loss:
            best_loss, choice.pull = loss, float(pull)
            config = runs[0][0].config
            choice.schedule = median_schedule([r.schedule for r, _ in runs], config.lr, config.lr_drops + 1)
            choice.heldout_embeddings = [embeddings_of(rounded(table)) for _, table in runs]
            choice.heldout_logits = np.concatenate([
                r.predict_logits(features, val.question, val.llm)
                for (r, _), features, (_, val) in zip(runs, choice.heldout_embeddings, parts)
            ])
    return choice


def with_table(static: Any, table: np.ndarray, pull: float) -> Any:
    """A StaticTable holding the fine-tuned table, its source saying so."""
    return replace(static, table=np.ascontiguousarray(table, dtype=np.float32),
                   source=f"{static.source}, fine-tuned under the JE-IRT loss (pull {pull:g})")


def _bags_and_embedder(prep: Any) -> tuple[TokenBags, Callable[[np.ndarray], np.ndarray]]:
    """Every question's tokens, and every question's embedding with a given table, as the runtime computes them."""
    from .encoders import DEFAULT_ENCODER, load_tokenizer
    from .static_encoder import embed_texts

    tokenizer = load_tokenizer(DEFAULT_ENCODER, prep.max_length)

    def embeddings_of(table: np.ndarray) -> np.ndarray:
        return embed_texts(table, tokenizer, prep.data.texts)

    return token_bags(prep.data.texts, tokenizer), embeddings_of


def choose_table_pull(
    prep: Any, parts: Sequence[tuple[Responses, Responses]], selection: Selection, pulls: Sequence[float], *,
    log: Callable[[str], None] = print,
) -> TableChoice:
    """choose_table on `parts` from prep's table. A winning pull also becomes the selection's schedule, held-out
    predictions (what fit reports, and what its calibration is fitted on) and held-out features (what the held-out
    neighbour votes compare)."""
    bags, embeddings_of = _bags_and_embedder(prep)
    log(f"fine-tuning the static table at d={selection.hyper['dim']} dropout={selection.hyper['dropout']}, "
        f"pulls {list(pulls)} ...")
    choice = choose_table(rounded(prep.static.table), bags, embeddings_of, parts, prep.data.n_llms, selection,
                          pulls=pulls, log=log)
    if choice.pull is None:
        log("  the distilled table stays (no pull beat it on validation)")
        return choice
    assert choice.heldout_logits is not None
    selection.schedule, selection.heldout_logits = choice.schedule, choice.heldout_logits
    selection.heldout_embeddings = choice.heldout_embeddings
    selection.heldout_p = 1.0 / (1.0 + np.exp(-choice.heldout_logits))
    return choice


def refit_fine_tuned(
    prep: Any, all_cells: Responses, selection: Selection, choice: TableChoice, *,
    log: Callable[[str], None] = print, progress: bool = False,
) -> tuple[Any, JeirtPredictor]:
    """The router refitted on `all_cells` with prep's table fine-tuned at the chosen pull and schedule: (prep with
    the fine-tuned table and its embeddings, the predictor)."""
    assert choice.pull is not None
    bags, embeddings_of = _bags_and_embedder(prep)
    log(f"refitting with the table fine-tuned (pull {choice.pull:g}) on all {len(np.unique(all_cells.question))} "
        f"questions for {counted(len(choice.schedule), 'epoch')} ...")
    predictor, table = train_table(rounded(prep.static.table), bags, selection.hyper, all_cells, None,
                                   prep.data.n_llms, pull=choice.pull, lr_scale=choice.lr_scale,
                                   schedule=choice.schedule, progress=progress)
    static = with_table(prep.static, table, choice.pull)
    return replace(prep, static=static, embeddings=embeddings_of(rounded(table))), predictor

