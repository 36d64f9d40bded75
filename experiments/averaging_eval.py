"""Weight averaging on against off on one split, at one fixed d and dropout (docs/research/hyperparameters.md).

    python -m experiments.averaging_eval --data data/zeroeval_crux_gsm_math --split-seed 0 --ema-epochs 0,0.5,1,2

One JSON line per run: the router trained on the training part with each time constant of the weights' moving
average (jeirt_lite_training.averaging; 0 is the raw weights), early-stopped on the validation part; its validation loss (what
a choice is made on), its validation and test AUC and log-loss (the test part is only reported, never used to
choose). --encoder static trains over the distilled token table (frozen, or fine-tuned end to end with --pull, as
jeirt_lite_training.static_finetune does); any other encoder over its cached frozen embeddings.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import numpy as np

from .static_finetune_eval import _floats, _scores


def _run(prep: Any, hyper: dict[str, Any], pull: float | None) -> tuple[Any, np.ndarray]:
    """One early-stopped run; returns the predictor and the embeddings it predicts from."""
    from jeirt_lite_training.model import JeirtPredictor

    if pull is None:
        return JeirtPredictor(**hyper).fit(prep.embeddings, prep.train, prep.val, prep.data.n_llms), prep.embeddings
    from jeirt_lite_training.encoders import DEFAULT_ENCODER, load_tokenizer
    from jeirt_lite_training.static_encoder import embed_texts
    from jeirt_lite_training.static_finetune import rounded, token_bags, train_table

    tokenizer = load_tokenizer(DEFAULT_ENCODER, prep.max_length)
    bags = token_bags(prep.data.texts, tokenizer)
    predictor, table = train_table(rounded(prep.static.table), bags, hyper, prep.train, prep.val,
                                   prep.data.n_llms, pull=pull)
    return predictor, embed_texts(rounded(table), tokenizer, prep.data.texts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--split-seed", type=int, default=0, help="the split")
    parser.add_argument("--seed", type=int, default=None, help="the training seed (default: the split seed)")
    parser.add_argument("--encoder", default="static", help="'static' or a transformer with cached embeddings")
    parser.add_argument("--pull", type=float, default=None, help="static only: fine-tune the table with this pull")
    parser.add_argument("--ema-epochs", type=_floats, default=[0.0, 1.0], help="time constants to try (comma list)")
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--dropout", type=float, default=0.7)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    import torch
    from jeirt_lite_training.prepared import prepare

    torch.set_num_threads(args.threads)
    seed = args.split_seed if args.seed is None else args.seed
    prep = prepare(args.data, split_seed=args.split_seed, encoder=args.encoder, test_fraction=0.2, progress=False)
    for ema in args.ema_epochs:
        hyper = {"dim": args.dim, "dropout": args.dropout, "seed": seed, "ema_epochs": ema}
        t0 = time.perf_counter()
        predictor, embeddings = _run(prep, hyper, args.pull)
        print(json.dumps({"data": prep.data.name, "encoder": args.encoder, "pull": args.pull,
                          "split_seed": args.split_seed, **hyper, "best_epoch": predictor.best_epoch,
                          "best_val_loss": round(predictor.best_val_loss, 5),
                          "seconds": round(time.perf_counter() - t0), **_scores(prep, predictor, embeddings)}),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
