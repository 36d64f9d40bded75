"""Command line: `python -m jeirt_lite_training {fit,sweep,embed} ...`.

python -m jeirt_lite_training fit --data data/mmlu_pro --out my_router                  # choose settings, refit on all
python -m jeirt_lite_training fit --data data/mmlu_pro --out my_router --holdout 0.2    # and report on untouched questions
python -m jeirt_lite_training fit --data data/mmlu_pro --out my_router --encoder static
python -m jeirt_lite_training sweep --data data/mmlu_pro --dims 32,64,128,256,512 --json sweep.json
python -m jeirt_lite_training embed data/mmlu_pro data/zeroeval_crux_gsm_math
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._runtime import refuse_inputs
from .choose import DEFAULT_DIMS, DEFAULT_DROPOUTS
from .encoders import DEFAULT_ENCODER, DEFAULT_MAX_LENGTH, ENCODERS
from .model import JeirtConfig
from .pipeline import STATIC
from .static_finetune import DEFAULT_TABLE_PULLS

DEFAULTS = JeirtConfig()
CALIBRATIONS = ("global", "per_llm", "none")


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def _common(p: argparse.ArgumentParser, data_required: bool = True) -> None:
    p.add_argument(
        "--data", type=Path, required=data_required, metavar="DIR_OR_TABLE",
        help="data folder (questions.csv, models.csv, responses.csv), or one long or wide table "
        "(.csv, .parquet, .jsonl; see docs/guide/training.md)",
    )
    p.add_argument(
        "--encoder", default=DEFAULT_ENCODER, choices=sorted([*ENCODERS, STATIC]),
        help=f"frozen transformer, or {STATIC!r}: a token table distilled from {DEFAULT_ENCODER} (far faster)",
    )
    p.add_argument("--max-length", type=int, default=DEFAULT_MAX_LENGTH, help="encoder truncation, in tokens")
    p.add_argument("--split-seed", type=int, default=0)
    p.add_argument("--val-fraction", type=float, default=0.1, help="held-out part for the choices (of all questions)")
    p.add_argument("--threads", type=int, default=2, help="torch threads")
    p.add_argument("--lr", type=float, default=DEFAULTS.lr)
    p.add_argument("--batch-size", type=int, default=DEFAULTS.batch_size)
    p.add_argument("--max-epochs", type=int, default=DEFAULTS.max_epochs)
    p.add_argument("--patience", type=int, default=DEFAULTS.patience)
    p.add_argument(
        "--lr-drops", type=int, default=DEFAULTS.lr_drops,
        help="times the learning rate is divided by 10 at a validation plateau before stopping",
    )
    p.add_argument("--lr-drop-patience", type=int, default=DEFAULTS.lr_drop_patience)
    p.add_argument(
        "--llm-lr-scale", type=float, default=DEFAULTS.llm_lr_scale,
        help="learning rate of the LLM vectors, as a multiple of the adapter's",
    )
    p.add_argument(
        "--ema-epochs", type=float, default=DEFAULTS.ema_epochs,
        help="time constant, in epochs, of a moving average of the trained weights that is validated and "
        "exported instead of the raw weights (0: off)",
    )
    p.add_argument("--seed", type=int, default=DEFAULTS.seed)
    p.add_argument("--llm-init", default=DEFAULTS.llm_init, choices=["accuracy", "random"])


def _fit_arguments(p: argparse.ArgumentParser, out_required: bool, data_required: bool = True) -> None:
    _common(p, data_required)
    p.add_argument(
        "--out", type=Path, required=out_required, metavar="ROUTER",
        help="router folder to write (must not exist)" + ("" if out_required else "; omit to train and evaluate only"),
    )
    p.add_argument(
        "--holdout", "--test-fraction", dest="holdout", type=float, default=0.0,
        help="fraction of questions kept out of everything, for a report on untouched questions (default 0)",
    )
    p.add_argument("--folds", type=int, default=1, help="k > 1: choose by k-fold cross-validation instead")
    p.add_argument("--dims", "--dim", type=_ints, default=list(DEFAULT_DIMS), help="candidate d (comma list)")
    p.add_argument("--dropouts", "--dropout", type=_floats, default=list(DEFAULT_DROPOUTS), help="candidate dropouts")
    p.add_argument("--weight-decay", type=float, default=DEFAULTS.weight_decay)
    p.add_argument(
        "--calibration", choices=CALIBRATIONS, default="global",
        help="temperature and bias on the logit, fitted on the held-out predictions of the chosen setting: one "
        "pair for all LLMs (global), one per LLM, or none",
    )
    p.add_argument(
        "--table-pulls", type=_floats, default=None, metavar="PULLS",
        help=f"--encoder {STATIC} only: candidate pulls towards the distilled table for fine-tuning it end to end, "
        "each the fraction of the table's change undone at every step, in [0, 1) (comma list, chosen on the "
        "held-out part against the frozen table; '' keeps the distilled table; "
        f"default {','.join(f'{x:g}' for x in DEFAULT_TABLE_PULLS) or chr(39) * 2})",
    )
    p.add_argument(
        "--no-neighbours", dest="neighbours", action="store_false",
        help="leave out the neighbour votes (the training questions' answers, weighed by similarity, which fit "
        "otherwise adds when the held-out parts say they help): the joint geometry alone",
    )
    p.add_argument("--label", default=None, help="a note stored in the router's manifest")


FIT_DESCRIPTION = (
    "Train a JE-IRT router on your LLMs' answers: choose d, dropout and the training schedule on held-out "
    "questions, train the router on all of them, calibrate it on the held-out predictions, report the held-out "
    "metrics (and, with --holdout, metrics on untouched questions), write the router folder."
)


def fit_parser(
    prog: str, description: str = FIT_DESCRIPTION, epilog: str | None = None, preset: dict[str, Any] | None = None
) -> argparse.ArgumentParser:
    """`fit` as a command of its own (`jeirt-lite train`, build_default_router): the same options, --data and --out
    required unless `preset` gives them (a preset's values are defaults: options given on the command line win)."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description=description,
        epilog=epilog or f"example:\n  {prog} --data data/mmlu_pro --out my_router",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    preset = preset or {}
    _fit_arguments(parser, out_required="out" not in preset, data_required="data" not in preset)
    parser.set_defaults(**preset)
    return parser


def fit_main(argv: list[str] | None = None, prog: str = "jeirt-lite train") -> int:
    """Run `fit` from `argv` without the subcommand (what `jeirt-lite train` calls)."""
    args = fit_parser(prog).parse_args(argv)
    _set_threads(args)
    return cmd_fit(args)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m jeirt_lite_training", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    fit = sub.add_parser(
        "fit", help="choose d, dropout and the schedule on held-out data, train the router on all of it, export it"
    )
    _fit_arguments(fit, out_required=False)

    sweep = sub.add_parser("sweep", help="validation curve over d (and optional regularisation grids)")
    _common(sweep)
    sweep.add_argument("--test-fraction", type=float, default=0.2)
    sweep.add_argument("--dims", type=_ints, default=[32, 64, 128, 256, 512])
    sweep.add_argument("--dropouts", type=_floats, default=[DEFAULTS.dropout])
    sweep.add_argument("--weight-decays", type=_floats, default=[DEFAULTS.weight_decay])
    sweep.add_argument("--lrs", type=_floats, default=None, help="overrides --lr with a grid")
    sweep.add_argument("--json", type=Path, help="write every run's validation metrics here")

    embed = sub.add_parser("embed", help="fill the embedding cache ($JEIRT_CACHE) for data folders")
    embed.add_argument("data_dirs", nargs="+", type=Path)
    embed.add_argument("--encoder", default=DEFAULT_ENCODER, choices=sorted(ENCODERS))
    embed.add_argument("--max-length", type=int, default=DEFAULT_MAX_LENGTH)
    embed.add_argument("--threads", type=int, default=2)
    return parser


def _hyper(args: argparse.Namespace, **over: Any) -> dict[str, Any]:
    h = {
        "lr": args.lr,
        "batch_size": args.batch_size,
        "max_epochs": args.max_epochs,
        "patience": args.patience,
        "lr_drops": args.lr_drops,
        "lr_drop_patience": args.lr_drop_patience,
        "llm_lr_scale": args.llm_lr_scale,
        "ema_epochs": args.ema_epochs,
        "seed": args.seed,
        "llm_init": args.llm_init,
    }
    h.update(over)
    return h


def _fmt(m: dict[str, float]) -> str:
    return (
        f"AUC {m['auc']:.3f}  log-loss {m['log_loss']:.3f}  accuracy {m['accuracy']:.3f}  ECE {m['ece']:.3f}"
    )


def _prepare(args: argparse.Namespace) -> Any:
    from .pipeline import prepare

    prep = prepare(
        args.data,
        split_seed=args.split_seed,
        val_fraction=args.val_fraction,
        test_fraction=args.holdout if hasattr(args, "holdout") else args.test_fraction,
        encoder=args.encoder,
        max_length=args.max_length,
    )
    print(
        f"{prep.data.name}: {prep.data.n_questions} questions x {prep.data.n_llms} LLMs; "
        f"cells train {len(prep.train)}, val {len(prep.val)}, test {len(prep.test)}"
    )
    return prep


def fit_options(args: argparse.Namespace) -> dict[str, Any]:
    """What fit's options ask of choose_refit_and_export (checked): the one translation of them, used by `fit` and
    by experiments.compare's `fit` rows, so that a change to fit's defaults reaches both."""
    from .data import DataError

    if args.folds < 1:
        raise DataError(f"--folds must be >= 1, got {args.folds}")
    if not args.dims or not args.dropouts:
        raise DataError("--dims and --dropouts need at least one value each")
    if args.table_pulls and args.encoder != STATIC:
        raise DataError(f"--table-pulls fine-tunes the static encoder's table: it needs --encoder {STATIC}")
    if args.table_pulls and not all(0 <= pull < 1 for pull in args.table_pulls):
        raise DataError(f"--table-pulls must each be in [0, 1), got {args.table_pulls}")
    if not args.ema_epochs >= 0:
        raise DataError(f"--ema-epochs must be >= 0 (0: no weight averaging), got {args.ema_epochs}")
    return {
        "folds": args.folds,
        "dims": args.dims,
        "dropouts": args.dropouts,
        "calibration": None if args.calibration == "none" else args.calibration,
        "neighbours": args.neighbours,
        "table_pulls": DEFAULT_TABLE_PULLS if args.table_pulls is None else args.table_pulls,
        **_hyper(args, weight_decay=args.weight_decay),
    }


def cmd_fit(
    args: argparse.Namespace, *, overwrite: bool = False, costs: Callable[[list[str]], dict[str, float]] | None = None
) -> int:
    """`fit` from parsed options. overwrite: replace an existing --out; costs: the LLMs' costs from their names."""
    from .data import DataError
    from .pipeline import choose_refit_and_export, folder_size_mb

    if args.out is not None:  # say so before the training, not after it
        refuse_inputs(args.out, [args.data], replaces_folder=True)
        if args.out.exists() and not overwrite:
            raise DataError(f"{args.out} already exists: pick another --out or remove it")
    options = fit_options(args)
    prep = _prepare(args)
    res = choose_refit_and_export(prep, args.out, costs=costs, label=args.label, overwrite=overwrite, **options)
    p, chosen = res.predictor, res.extra["selection"]
    print(
        f"\nJE-IRT d={p.config.dim} dropout={p.config.dropout} (chosen on held-out data), trained on "
        f"{chosen['refit_on']['questions']} questions for {len(p.schedule)} epochs in {p.train_seconds:.0f}s"
    )
    print(f"  held out                 {_fmt(res.val)}")
    print(f"  held out, per-LLM floor  {_fmt(res.extra['heldout']['per_llm_accuracy_baseline'])}")
    if res.test:
        print(f"  test (untouched)         {_fmt(res.test)}")
        if res.extra["calibration"] is not None:
            print(f"  test, before calibration {_fmt(res.extra['test_uncalibrated'])}")
        print(f"  test, per-LLM floor      {_fmt(res.floor_test)}")
    if res.router_path is not None:
        parity = "" if res.parity is None else f", ONNX parity max abs diff {res.parity:.2e}"
        print(f"  router: {res.router_path} ({folder_size_mb(res.router_path):.1f} MB){parity}")
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from .model import JeirtPredictor
    from .pipeline import evaluate, per_llm_accuracy_floor

    prep = _prepare(args)
    floor = per_llm_accuracy_floor(prep, "val")
    print(f"validation, per-LLM floor: {_fmt(floor)}")
    rows: list[dict[str, Any]] = []
    lrs = args.lrs or [args.lr]
    for dim, dropout, wd, lr in itertools.product(args.dims, args.dropouts, args.weight_decays, lrs):
        hyper = _hyper(args, dim=dim, dropout=dropout, weight_decay=wd, lr=lr)
        pred = JeirtPredictor(**hyper).fit(
            prep.embeddings, prep.train, prep.val, prep.data.n_llms, progress=False
        )
        val = evaluate(pred, prep, "val")
        row = {**hyper, "best_epoch": pred.best_epoch, "seconds": round(pred.train_seconds, 1), "val": val}
        rows.append(row)
        print(
            f"d={dim:4d} dropout={dropout:.2f} wd={wd:g} lr={lr:g}: {_fmt(val)}  "
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


def cmd_embed(args: argparse.Namespace) -> int:
    from .embeddings import _main as embed_main

    argv = [str(d) for d in args.data_dirs]
    argv += ["--encoder", args.encoder, "--max-length", str(args.max_length), "--threads", str(args.threads)]
    return embed_main(argv)


def _set_threads(args: argparse.Namespace) -> None:
    if getattr(args, "threads", None):
        import torch

        torch.set_num_threads(args.threads)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    _set_threads(args)
    return {"fit": cmd_fit, "sweep": cmd_sweep, "embed": cmd_embed}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
