"""The distilled static table against the table fitted to MiniLM's sentence embeddings, on one split, at one d.

    python -m experiments.static_sentences_eval --data data/mmlu_pro --split-seed 0 --tables distilled,sentences

The split of `build_default_router --holdout 0.2` (split seed S: 10% validation, 20% test). Each table is then
fine-tuned end to end with the adapter (pull 0.1, d 256, dropout 0.3 by default: training.static_finetune), early-stopped on the
validation answers. Tables (--tables, comma list):

- `distilled`: static_encoder.distil, as `fit --encoder static` built it before (PCA to 256, SIF);
- `distilled384`: the same without dropping dimensions (every one of MiniLM's 384), to tell width from fitting;
- `sentences`: static_sentences.distil_to_sentences on the training and validation texts, MiniLM's width (what
  `fit` built before it fitted the training texts alone);
- `sentences256`: the same projected on the top 256 directions of the sentence embeddings;
- `sentences_train`: fitted on the training part's texts only, so that the validation part is held out from the
  table too (what `fit` builds now);
- `sentences+unlabelled`: fitted on the texts of --unlabelled data folders too (their answers are not read);
- `sentences_train+lines`: `sentences_train` plus each line of at least 16 tokens of the training texts that hold
  more than one line, as texts of their own (more pairs of text and sentence embedding from the same texts: the
  teacher's view of a stem or of an option alone, and of the tails it truncates at 256 tokens).

One JSON line per table (validation and test AUC, accuracy, log-loss, within-question AUC; experiments.ensemble_eval's
scores). Decisions read the validation part; the test part is only reported.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import numpy as np

from .ensemble_eval import emit_line, fine_tuned, one_split_parser, run_record, scores

TABLES = ("distilled", "distilled384", "sentences", "sentences256", "sentences_train", "sentences+unlabelled",
          "sentences_train+lines")
LINE_MIN_TOKENS = 16


def long_lines(texts: list[str], tokenizer: Any) -> list[str]:
    """Each line of at least LINE_MIN_TOKENS tokens (special tokens not counted) of the texts that hold several."""
    lines = [line.strip() for t in texts if "\n" in t.strip() for line in t.split("\n") if line.strip()]
    return [line for line in lines if len(tokenizer.encode(line).ids) - 2 >= LINE_MIN_TOKENS]


def build_table(kind: str, prep: Any, unlabelled: list[str], tokenizer: Any) -> tuple[np.ndarray, dict[str, Any]]:
    from jeirt_lite_training.data import load_dataset
    from jeirt_lite_training.embeddings import embed_texts as sentence_embeddings
    from jeirt_lite_training.encoders import DEFAULT_ENCODER
    from jeirt_lite_training.static_encoder import distil
    from jeirt_lite_training.static_sentences import distil_to_sentences

    learn = [prep.data.texts[i] for i in np.concatenate([prep.split.train, prep.split.val])]
    if kind.startswith("distilled"):
        static = distil(DEFAULT_ENCODER, learn, max_length=prep.max_length, dim=384 if kind == "distilled384" else 256)
        return static.table, {}
    if kind.startswith("sentences_train"):
        learn = [prep.data.texts[i] for i in prep.split.train]
    texts = learn + ([t for folder in unlabelled for t in load_dataset(folder).texts]
                     if kind == "sentences+unlabelled" else [])
    if kind == "sentences_train+lines":
        texts += long_lines(learn, tokenizer)
    static, fit = distil_to_sentences(DEFAULT_ENCODER, texts, sentence_embeddings(texts), max_length=prep.max_length,
                                      dim=256 if kind == "sentences256" else None)
    return static.table, {"sentence_fit": fit.record()}


def split_and_tokens(args: Any) -> tuple[Any, Any, Any, dict[str, Any]]:
    """(prepared split, tokenizer, every text's token bag, the adapter's setting) of a one-split parser's `args`,
    torch on `args.threads`: the split and texts only, each table is made apart (build_table)."""
    import torch
    from jeirt_lite_training.encoders import DEFAULT_ENCODER, load_tokenizer
    from jeirt_lite_training.prepared import STATIC, prepare
    from jeirt_lite_training.static_finetune import token_bags

    torch.set_num_threads(args.threads)
    prep = prepare(args.data, split_seed=args.split_seed, encoder=STATIC, test_fraction=0.2, progress=False,
                   fit_sentences=False)
    tokenizer = load_tokenizer(DEFAULT_ENCODER, prep.max_length)
    hyper = {"dim": args.dim, "dropout": args.dropout, "seed": args.split_seed}
    return prep, tokenizer, token_bags(prep.data.texts, tokenizer), hyper


def main(argv: list[str] | None = None) -> int:
    parser = one_split_parser(__doc__.split("\n")[0], "docs/results/static_sentences_runs.jsonl", None)
    parser.add_argument("--tables", default="distilled,sentences", help=f"comma list of {', '.join(TABLES)}")
    parser.add_argument("--unlabelled", action="append", default=[], help="a data folder (texts only; repeatable)")
    args = parser.parse_args(argv)
    kinds = [k for k in args.tables.split(",") if k]
    if unknown := sorted(set(kinds) - set(TABLES)):
        parser.error(f"unknown tables {unknown}: choose from {', '.join(TABLES)}")
    from jeirt_lite_training.static_finetune import rounded

    prep, tokenizer, bags, hyper = split_and_tokens(args)
    for kind in kinds:
        t0 = time.perf_counter()
        table, extra = build_table(kind, prep, args.unlabelled, tokenizer)
        grid, predictor = fine_tuned(rounded(table), bags, hyper, prep.train, prep.val, prep.data.n_llms, tokenizer,
                                     prep.data.texts, pull=0.1)
        emit_line(args.out, {"data": prep.data.name, "split_seed": args.split_seed, "table": kind,
                             "width": int(table.shape[1]), **hyper, **extra, **run_record(predictor),
                             "seconds": round(time.perf_counter() - t0), **scores(prep, grid)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
