"""A validation curve: JE-IRT trained once for each setting of a grid over d (and, optionally, dropout, weight decay
and learning rate), each scored on the held-out part. `fit` chooses its settings itself; this is the laboratory's
view of how much they matter (docs/research/hyperparameters.md).

    python -m experiments.sweep --data data/mmlu_pro --dims 32,64,128,256,512 --json sweep.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path
from typing import Any

from jeirt_lite_training.__main__ import metrics_line, prepare_from_options, schedule_options
from jeirt_lite_training._runtime import cli_options as opt
from jeirt_lite_training.options import DEFAULTS, DefaultsFormatter, common_arguments


def parser() -> argparse.ArgumentParser:
    sweep = opt.OptionParser(
        prog="python -m experiments.sweep", description=__doc__.split("\n")[0], formatter_class=DefaultsFormatter
    )
    common_arguments(sweep)
    sweep.add_argument("--holdout", type=opt.fraction, default=0.2,
                       help="fraction of questions kept out of every run (as fit --holdout), in [0, 1)")
    sweep.add_argument("--dims", type=opt.list_of(opt.dimension), default=[32, 64, 128, 256, 512],
                       help="d to try (comma list)")
    sweep.add_argument("--dropouts", type=opt.list_of(opt.fraction), default=[DEFAULTS.dropout],
                       help="dropouts to try (comma list)")
    sweep.add_argument("--weight-decays", type=opt.list_of(opt.non_negative), default=[DEFAULTS.weight_decay],
                       help="weight decays to try (comma list)")
    sweep.add_argument("--lrs", type=opt.list_of(opt.positive), default=None, help="overrides --lr with a grid")
    sweep.add_argument("--json", type=Path, help="write every run's validation metrics here")
    return sweep


def main(argv: list[str] | None = None) -> int:
    import torch
    from jeirt_lite_training.model import JeirtPredictor
    from jeirt_lite_training.pipeline import evaluate, per_llm_accuracy_floor

    args = parser().parse_args(argv)
    torch.set_num_threads(args.threads)
    prep = prepare_from_options(args)
    floor = per_llm_accuracy_floor(prep, "val")
    print(f"validation, per-LLM floor: {metrics_line(floor)}")
    rows: list[dict[str, Any]] = []
    lrs = args.lrs or [args.lr]
    for dim, dropout, wd, lr in itertools.product(args.dims, args.dropouts, args.weight_decays, lrs):
        hyper = schedule_options(args, dim=dim, dropout=dropout, weight_decay=wd, lr=lr)
        pred = JeirtPredictor(**hyper).fit(prep.embeddings, prep.train, prep.val, prep.data.n_llms, progress=False)
        val = evaluate(pred, prep, "val")
        rows.append({**hyper, "best_epoch": pred.best_epoch, "seconds": round(pred.train_seconds, 1), "val": val})
        print(
            f"d={dim:4d} dropout={dropout:.2f} wd={wd:g} lr={lr:g}: {metrics_line(val)}  "
            f"(best epoch {pred.best_epoch}, {pred.train_seconds:.0f}s)",
            flush=True,
        )
    best = min(rows, key=lambda r: r["val"]["log_loss"])
    print(
        f"best by validation log-loss: d={best['dim']} dropout={best['dropout']} wd={best['weight_decay']} "
        f"lr={best['lr']}"
    )
    if args.json:
        args.json.write_text(json.dumps({"floor_val": floor, "runs": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
