"""Frozen against fine-tuned static table on one split, at one fixed d and dropout (docs/research/encoders.md).

    python -m experiments.static_finetune_eval --data data/zeroeval_crux_gsm_math --split-seed 0 --pulls 0.1,0.3
    python -m experiments.static_finetune_eval --data data/mmlu_pro --teacher all-mpnet-base-v2 --dim 256 --dropout 0.3

One JSON line per run: the frozen distilled table first, then the table fine-tuned with each pull (training.
static_finetune), each with its validation loss (what `fit` chooses on), its validation and test AUC and log-loss
(the test part is only reported, never used to choose), and how far the table moved (Frobenius norm of the change
over that of the moved rows' start). `--teacher` distils the table from another encoder (or "A+B", several) over
the same MiniLM vocabulary (jeirt_lite_training.static_encoder.distil).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import numpy as np


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def _scores(prep: Any, predictor: Any, embeddings: np.ndarray) -> dict[str, dict[str, float]]:
    from jeirt_lite._metrics import all_metrics

    out = {}
    for part in ("val", "test"):
        cells = getattr(prep, part)
        m = all_metrics(cells.correct, predictor.predict_proba(embeddings, cells.question, cells.llm))
        out[part] = {key: round(m[key], 4) for key in ("auc", "accuracy", "log_loss")}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--split-seed", type=int, default=0, help="the split and the training seed")
    parser.add_argument("--pulls", type=_floats, default=[0.1], help="pulls to try (comma list, each in [0, 1))")
    parser.add_argument("--lr-scale", type=float, default=None, help="the table's learning rate / the adapter's")
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--dropout", type=float, default=0.7)
    parser.add_argument("--ema-epochs", type=float, default=None,
                        help="the weights' moving average, in epochs (default: JeirtConfig's; 0: off)")
    parser.add_argument("--teacher", default=None,
                        help="encoder(s) the table is distilled from, 'A' or 'A+B' (default: all-MiniLM-L6-v2)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    import torch
    from jeirt_lite_training.encoders import DEFAULT_ENCODER, load_tokenizer
    from jeirt_lite_training.model import JeirtPredictor
    from jeirt_lite_training.prepared import STATIC, prepare
    from jeirt_lite_training.static_encoder import embed_texts
    from jeirt_lite_training.static_finetune import TABLE_LR_SCALE, rounded, token_bags, train_table

    torch.set_num_threads(args.threads)
    lr_scale = TABLE_LR_SCALE if args.lr_scale is None else args.lr_scale
    hyper = {"dim": args.dim, "dropout": args.dropout, "seed": args.split_seed}
    if args.ema_epochs is not None:
        hyper["ema_epochs"] = args.ema_epochs
    teacher = args.teacher or DEFAULT_ENCODER
    prep = prepare(args.data, split_seed=args.split_seed, encoder=STATIC, test_fraction=0.2, progress=False,
                   teacher=teacher, fit_sentences=False)  # the distilled table against its fine-tuning
    tokenizer = load_tokenizer(DEFAULT_ENCODER, prep.max_length)
    bags, start = token_bags(prep.data.texts, tokenizer), rounded(prep.static.table)
    head = {"data": prep.data.name, "split_seed": args.split_seed, "teacher": teacher, **hyper}
    t0 = time.perf_counter()
    frozen = JeirtPredictor(**hyper).fit(prep.embeddings, prep.train, prep.val, prep.data.n_llms)
    print(json.dumps({**head, "table": "frozen", "best_val_loss": round(frozen.best_val_loss, 5),
                      "seconds": round(time.perf_counter() - t0), **_scores(prep, frozen, prep.embeddings)}),
          flush=True)
    seen = bags.tokens_of(prep.split.train)
    for pull in args.pulls:
        t0 = time.perf_counter()
        tuned, table = train_table(start, bags, hyper, prep.train, prep.val, prep.data.n_llms, pull=pull,
                                   lr_scale=lr_scale)
        moved = float(np.linalg.norm(table - start) / np.linalg.norm(start[seen]))
        embeddings = embed_texts(rounded(table), tokenizer, prep.data.texts)
        print(json.dumps({**head, "table": "fine-tuned", "pull": pull, "lr_scale": lr_scale,
                          "best_val_loss": round(tuned.best_val_loss, 5), "relative_change": round(moved, 4),
                          "seconds": round(time.perf_counter() - t0), **_scores(prep, tuned, embeddings)}),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
