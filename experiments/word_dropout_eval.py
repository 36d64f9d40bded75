"""Word dropout while the static table is fine-tuned: each training step drops a share of every question's tokens.

    python -m experiments.word_dropout_eval --data data/mmlu_pro --split-seed 0 --rates 0,0.1,0.2 --threads 1

A static router's question vector is the normalised mean of its tokens' rows. Fine-tuned end to end on a few
thousand questions, the rows can learn what one question's answers say through a handful of its tokens; dropping a
random share of the tokens at every step (deep averaging networks' word dropout) makes the mean of any subset carry
the question instead. Training only: the router reads every token at run time, so routing costs the same.

The split of `build_default_router --holdout 0.2` (split seed S: 10% validation, 20% test) and the table `fit`
builds (`sentences_train`: fitted to MiniLM's sentence embeddings of the training texts; experiments.
static_sentences_eval), fine-tuned with the adapter (pull 0.1, d 256, dropout 0.3 by default), early-stopped on the
validation answers, once per rate (0: the recipe as it is). The [CLS] token of every question is always kept. One
JSON line per rate; decisions read the validation part, the test part is only reported.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from .ensemble_eval import emit_line, fine_tuned, one_split_parser, run_record, scores
from .static_sentences_eval import build_table, split_and_tokens


def _rates(text: str) -> list[float]:
    rates = [float(x) for x in text.split(",") if x.strip()]
    if not rates or any(not 0 <= r < 1 for r in rates):
        raise ValueError(f"rates must each be in [0, 1), got {text!r}")
    return rates


def word_dropout_delta(rate: float, seed: int) -> type:
    """static_finetune.TableDelta whose training lookups (gradients on) drop each token with probability `rate`."""
    import torch
    from jeirt_lite_training.model import NORM_EPS
    from jeirt_lite_training.static_finetune import TableDelta, _offsets

    class WordDropoutDelta(TableDelta):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.rate, self.rng = rate, np.random.default_rng(seed)
            # A plain tensor, not a parameter: the weight average and the snapshots copy parameters.
            self.start_rows = torch.from_numpy(self.start)

        def __getitem__(self, rows: torch.Tensor) -> torch.Tensor:
            if self.rate == 0 or not torch.is_grad_enabled():
                return super().__getitem__(rows)
            r = rows.numpy()
            lengths = self.bags.lengths[r]
            offsets = _offsets(lengths)
            pick = np.repeat(self.bags.starts[r] - offsets, lengths) + np.arange(int(lengths.sum()))
            keep = self.rng.random(len(pick)) >= self.rate
            keep[offsets] = True  # each question's first token ([CLS]): no question is left empty
            weights = torch.from_numpy(keep.astype(np.float32))
            at = torch.from_numpy(offsets)
            base = torch.nn.functional.embedding_bag(torch.from_numpy(self.bags.ids[pick]), self.start_rows, at,
                                                     mode="sum", per_sample_weights=weights)
            moved = self.delta(torch.from_numpy(self._compact_ids[pick]), at, per_sample_weights=weights)
            kept = torch.from_numpy(np.add.reduceat(keep.astype(np.float32), offsets))
            pooled = (base + moved) / kept[:, None]
            return pooled / pooled.norm(dim=1, keepdim=True).clamp(min=NORM_EPS)

    return WordDropoutDelta


@contextlib.contextmanager
def table_delta_class(cls: type) -> Iterator[None]:
    """static_finetune.train_table builds `cls` instead of TableDelta meanwhile."""
    from jeirt_lite_training import static_finetune

    before = static_finetune.TableDelta
    static_finetune.TableDelta = cls  # type: ignore[misc]
    try:
        yield
    finally:
        static_finetune.TableDelta = before  # type: ignore[misc]


def main(argv: list[str] | None = None) -> int:
    parser = one_split_parser(__doc__.split("\n")[0], "docs/results/word_dropout_runs.jsonl", None)
    parser.add_argument("--rates", type=_rates, default=[0.0, 0.1, 0.2], help="comma list, each in [0, 1)")
    args = parser.parse_args(argv)
    from jeirt_lite_training.static_finetune import rounded

    prep, tokenizer, bags, hyper = split_and_tokens(args)
    table, extra = build_table("sentences_train", prep, [], tokenizer)
    for rate in args.rates:
        t0 = time.perf_counter()
        with table_delta_class(word_dropout_delta(rate, args.split_seed)):
            grid, predictor = fine_tuned(rounded(table), bags, hyper, prep.train, prep.val, prep.data.n_llms,
                                         tokenizer, prep.data.texts, pull=0.1)
        emit_line(args.out, {"data": prep.data.name, "split_seed": args.split_seed, "table": "sentences_train",
                             "word_dropout": rate, **hyper, **extra, **run_record(predictor),
                             "seconds": round(time.perf_counter() - t0), **scores(prep, grid)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
