"""Command line: `python -m jeirt_lite_training {fit,embed} ...`.

python -m jeirt_lite_training fit --data data/mmlu_pro --out my_router                  # choose settings, refit on all
python -m jeirt_lite_training fit --data data/mmlu_pro --out my_router --holdout 0.2    # and report on untouched questions
python -m jeirt_lite_training fit --data data/mmlu_pro --out my_router --encoder static
python -m jeirt_lite_training embed data/mmlu_pro data/zeroeval_crux_gsm_math
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._runtime import (
    check_output_folder,
    counted,
    option_error,
    read_costs,
    refuse_inputs,
    resolve_threads,
    run_command,
    run_training,
    stderr_is_terminal,
)
from ._runtime import cli_options as opt  # the command line's converters and parser class
from .config import DEFAULT_ENCODER, DEFAULT_MAX_LENGTH, DEFAULT_TABLE_PULLS, ENCODER_NAMES, STATIC
from .options import AUTO, COLUMN_OPTIONS, DefaultsFormatter, fit_arguments
from .options import FIT_DESCRIPTION as FIT_DESCRIPTION
from .options import fit_parser as fit_parser  # where scripts and `jeirt-lite train` find it

if TYPE_CHECKING:
    from .pipeline import FitResult

__all__ = [
    "FIT_DESCRIPTION", "cmd_fit", "fit_main", "fit_options", "fit_parser", "fit_summary", "main", "metrics_line",
    "prepare_from_options", "run_fit", "schedule_options",
]


def fit_main(argv: list[str] | None = None, prog: str = "jeirt-lite train") -> int:
    """Run `fit` from `argv` without the subcommand."""
    return run_fit(fit_parser(prog).parse_args(argv))


def run_fit(args: argparse.Namespace) -> int:
    """`fit` from options parsed by `options.fit_parser` (`jeirt-lite train` parses them before torch loads)."""
    _set_threads(args)
    return cmd_fit(args)


def _parser() -> argparse.ArgumentParser:
    parser = opt.OptionParser(prog="python -m jeirt_lite_training", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    fit = sub.add_parser(
        "fit", help="choose d, dropout and the schedule on held-out data, train the router on all of it, export it",
        formatter_class=DefaultsFormatter,
    )
    fit_arguments(fit, out_required=False)

    embed = sub.add_parser("embed", help="fill the embedding cache ($JEIRT_CACHE) for data folders")
    embed.add_argument("data_dirs", nargs="+", type=Path)
    embed.add_argument("--encoder", default=DEFAULT_ENCODER, choices=sorted(ENCODER_NAMES))
    embed.add_argument("--max-length", type=opt.tokens, default=DEFAULT_MAX_LENGTH)
    embed.add_argument("--threads", type=opt.threads, default=None)
    return parser


def schedule_options(args: argparse.Namespace, **over: Any) -> dict[str, Any]:
    """The training schedule's options (common_arguments) as JeirtPredictor keywords, `over` replacing any."""
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


def metrics_line(m: dict[str, float]) -> str:
    """AUC, log-loss, accuracy and ECE on one line, as fit prints them."""
    return (
        f"AUC {m['auc']:.3f}  log-loss {m['log_loss']:.3f}  accuracy {m['accuracy']:.3f}  ECE {m['ece']:.3f}"
    )


def prepare_from_options(args: argparse.Namespace, check: Callable[[Any], None] | None = None) -> Any:
    """The data of common_arguments' options, loaded, split and embedded; what loading read is printed, and `check`
    is given the data before it is embedded."""
    from .coverage import coverage_note, few_answers_note
    from .prepared import prepare
    from .router_writer import learned_benchmarks_missing
    from .types import Responses

    def loaded(report: Any, data: Any) -> None:
        print(report.summary())
        if check is not None:
            check(data)

    if args.val_fraction + args.holdout >= 1:  # each is bounded where it is parsed, their sum only here
        raise option_error(f"--val-fraction {args.val_fraction:g} and --holdout {args.holdout:g} leave no questions "
                        "to train on: their sum must be below 1")
    prep = prepare(
        args.data,
        split_seed=args.split_seed,
        val_fraction=args.val_fraction,
        test_fraction=args.holdout,
        encoder=args.encoder,
        max_length=args.max_length,
        columns=table_columns(args),
        progress=stderr_is_terminal(),  # the static table's fitting epochs: on a terminal, as the other bars are
        loaded=loaded,  # what was read, before the table is fitted and the texts embedded
    )
    print(
        f"{prep.data.name}: {prep.data.n_questions} questions x {prep.data.n_llms} LLMs; "
        f"cells train {len(prep.train)}, val {len(prep.val)}, test {len(prep.test)}"
    )
    learned = Responses.concatenate([prep.train, prep.val])  # what the refit learns from
    for note in (coverage_note(learned_benchmarks_missing(prep), prep.data.n_llms),
                 few_answers_note(learned, prep.data.llm_names)):
        if note is not None:
            print(note)
    return prep


def table_columns(args: argparse.Namespace) -> Any:
    """The --*-column options as a data.Columns, or None when none is given."""
    from .data import Columns

    given = {field: getattr(args, f"{field}_column", None) for _, field, _ in COLUMN_OPTIONS}
    return Columns(**given) if any(value is not None for value in given.values()) else None


def fit_options(args: argparse.Namespace) -> dict[str, Any]:
    """What fit's options ask of choose_refit_and_export (checked): the one translation of them, used by `fit` and
    by experiments.compare's `fit` rows, so that a change to fit's defaults reaches both."""
    from .data import DataError

    if args.folds != AUTO and args.folds < 1:
        raise DataError(f"--folds must be >= 1 or auto, got {args.folds}")
    if not args.dims or not args.dropouts:
        raise DataError("--dims and --dropouts need at least one value each")
    if args.table_pulls and args.encoder != STATIC:
        raise option_error(f"--table-pulls fine-tunes the static encoder's table: it needs --encoder {STATIC}")
    if args.table_pulls and not all(0 <= pull < 1 for pull in args.table_pulls):
        raise option_error(f"--table-pulls must each be in [0, 1), got {args.table_pulls}")
    if not args.ema_epochs >= 0:
        raise DataError(f"--ema-epochs must be >= 0 (0: no weight averaging), got {args.ema_epochs}")
    return {
        "folds": None if args.folds == AUTO else args.folds,  # None: pipeline.choose_refit_and_export decides
        "dims": args.dims,
        "dropouts": args.dropouts,
        "calibration": None if args.calibration == "none" else args.calibration,
        "neighbours": args.neighbours,
        "table_pulls": DEFAULT_TABLE_PULLS if args.table_pulls is None else args.table_pulls,
        **schedule_options(args, weight_decay=args.weight_decay),
    }


def cmd_fit(
    args: argparse.Namespace, *, overwrite: bool = False, costs: Callable[[list[str]], dict[str, float]] | None = None
) -> int:
    """`fit` from parsed options. overwrite: replace an existing --out; costs: the LLMs' costs from their names."""
    from .costs import check_cost_llms, cost_summary
    from .data import DataError
    from .pipeline import choose_refit_and_export
    from .staging import check_writable

    inputs = [args.data] + ([args.costs] if args.costs is not None else [])
    if args.out is not None:  # say so before the training, not after it
        check_output_folder(args.out)  # the rule of every command: a missing parent folder is refused, not made
        refuse_inputs(args.out, inputs, replaces_folder=True)
        if (args.out.exists() or args.out.is_symlink()) and not overwrite:  # a dangling link too: the save refuses it
            raise DataError(f"{args.out} already exists: pick another --out or remove it")
        check_writable(args.out)
    table = read_costs(args.costs) if args.costs is not None else None
    options = fit_options(args)
    prep = prepare_from_options(args, None if table is None else lambda data: check_cost_llms(
        table, list(data.llm_names), args.costs))
    if table is not None:
        given = costs  # the table's costs over the caller's (build_default_router's proxies)
        costs = lambda names: {**(given(names) if given is not None else {}), **table}  # noqa: E731
    res = choose_refit_and_export(prep, args.out, costs=costs, label=args.label, overwrite=overwrite, **options)
    print(fit_summary(res))
    if table is not None and args.out is not None:
        print(cost_summary(table, list(prep.data.llm_names)))
    return 0


def fit_summary(res: FitResult) -> str:
    """What fit prints when it is done: the chosen setting, the held-out and test metrics, the router written."""
    from .router_writer import folder_size_mb

    p, chosen = res.predictor, res.extra["selection"]
    lines = [
        f"\nJE-IRT d={p.config.dim} dropout={p.config.dropout} (chosen on held-out data), trained on "
        f"{chosen['refit_on']['questions']} questions for {counted(len(p.schedule), 'epoch')} in {p.train_seconds:.0f}s",
        f"  held out                 {metrics_line(res.val)}",
        f"  held out, per-LLM floor  {metrics_line(res.extra['heldout']['per_llm_accuracy_baseline'])}",
    ]
    if res.test:
        lines.append(f"  test (untouched)         {metrics_line(res.test)}")
        if res.extra["calibration"] is not None and res.votes is None:  # with votes the map is part of the blend
            lines.append(f"  test, before calibration {metrics_line(res.extra['test_uncalibrated'])}")
        lines.append(f"  test, per-LLM floor      {metrics_line(res.floor_test)}")
        if res.floor_benchmark_test:  # with several benchmarks: what knowing the benchmark alone gives
            lines.append(f"  test, benchmark floor    {metrics_line(res.floor_benchmark_test)}")
    if res.router_path is not None:
        parity = "" if res.parity is None else f", ONNX parity max abs diff {res.parity:.2e}"
        lines.append(f"  router: {res.router_path} ({folder_size_mb(res.router_path):.1f} MB){parity}")
    return "\n".join(lines)


def cmd_embed(args: argparse.Namespace) -> int:
    from .embeddings import _main as embed_main

    argv = [str(d) for d in args.data_dirs]
    argv += ["--encoder", args.encoder, "--max-length", str(args.max_length), "--threads", str(resolve_threads(args.threads))]
    return embed_main(argv)


def _set_threads(args: argparse.Namespace) -> None:
    """torch's threads: --threads, or (None) every core this process may use, as the runtime's commands default to
    (torch's own default counts the machine's cores, not a container's CPU limit)."""
    import torch

    torch.set_num_threads(resolve_threads(getattr(args, "threads", None)))


def main(argv: list[str] | None = None) -> int:
    """Run `fit` or `embed` from `argv` as `jeirt-lite train` runs: a bad data file, option or output path, a stdout
    that cannot be written or an interrupt ends in one line, with its exit code (jeirt_lite.cli.run_command)."""
    words = sys.argv[1:] if argv is None else argv
    return run_command(lambda: opt.parse_or_exit_code(_parser(), words), _run_command, _writes_result)


def _run_command(args: argparse.Namespace, console: Any) -> int:
    _set_threads(args)
    return run_training({"fit": cmd_fit, "embed": cmd_embed}[args.command], args)


def _writes_result(args: argparse.Namespace) -> bool:
    """`embed` fills the cache and `fit --out` writes a router: what they print is dropped on a stdout that fails, not
    their result; `fit` without --out prints its result."""
    return args.command == "embed" or args.out is not None


if __name__ == "__main__":
    sys.exit(main())
