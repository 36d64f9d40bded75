"""The options of `fit` (`jeirt-lite train`, `python -m jeirt_lite_training fit`), checked where they are parsed.

Importable without torch or pandas, so that `jeirt-lite train --help` and every bound work before the `train` extra
is installed. The converters and the parser class are the command line's own (`jeirt_lite.cli._options`): a value
out of its bound ends in one line, `jeirt-lite: error: argument --threads: must be at most 256, got 100,000`, exit 2.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ._runtime import cli_options as opt  # the command line's converters and parser class
from .config import (
    AUTO_FOLDS,
    AUTO_FOLDS_MAX_CELLS,
    DEFAULT_CORRECT_COLUMNS,
    DEFAULT_DIMS,
    DEFAULT_DROPOUTS,
    DEFAULT_ENCODER,
    DEFAULT_LLM_COLUMNS,
    DEFAULT_MAX_LENGTH,
    DEFAULT_QUESTION_COLUMNS,
    DEFAULT_TABLE_PULLS,
    DEFAULT_TEXT_COLUMNS,
    ENCODER_NAMES,
    STATIC,
    JeirtConfig,
)

DEFAULTS = JeirtConfig()
CALIBRATIONS = ("global", "per_llm", "none")
MAX_FOLDS = 100
# The column options: flag, Columns field, the names tried when it is not given.
COLUMN_OPTIONS = (
    ("--question-column", "question", DEFAULT_QUESTION_COLUMNS),
    ("--text-column", "text", DEFAULT_TEXT_COLUMNS),
    ("--llm-column", "llm", DEFAULT_LLM_COLUMNS),
    ("--correct-column", "correct", DEFAULT_CORRECT_COLUMNS),
)
dropout = opt.fraction  # a dropout rate, in [0, 1)
AUTO = "auto"  # --folds: the count follows the data's size (config.AUTO_FOLDS_MAX_CELLS)


def folds(text: str) -> int | str:
    """--folds: "auto", or a whole number of folds in [1, MAX_FOLDS]."""
    if text.strip().lower() == AUTO:
        return AUTO
    try:
        return opt.int_in(1, MAX_FOLDS)(text)
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"{exc} (or auto)") from None


def _names(names: tuple[str, ...]) -> str:
    return ", ".join(names)


def common_arguments(p: argparse.ArgumentParser, data_required: bool = True) -> None:
    """The options fit and the laboratory's sweep (experiments.sweep) share: the data, the encoder, the split and the
    training schedule."""
    p.add_argument(
        "--data", type=Path, required=data_required, metavar="DIR_OR_TABLE",
        help="data folder (questions.csv, models.csv, responses.csv), or one long or wide table "
        "(.csv, .tsv, .jsonl, .parquet; docs/guide/training-data.md)",
    )
    for flag, field, names in COLUMN_OPTIONS:
        long_only = " (long tables)" if field in ("llm", "correct") else ""
        p.add_argument(
            flag, dest=f"{field}_column", default=None, metavar="NAME",
            help=f"the table's {field} column{long_only}; default: the first of {_names(names)}",
        )
    p.add_argument(
        "--encoder", default=DEFAULT_ENCODER, choices=sorted([*ENCODER_NAMES, STATIC]),
        help=f"frozen transformer, or {STATIC!r}: a token table distilled from {DEFAULT_ENCODER} (far faster)",
    )
    p.add_argument("--max-length", type=opt.tokens, default=DEFAULT_MAX_LENGTH, help="the transformer's truncation, in tokens, 8..512 (the static encoder always reads 512)")
    p.add_argument("--split-seed", type=opt.seed, default=0,
                   help="seed of the random split of the questions (the held-out part, the folds, --holdout's part)")
    p.add_argument("--val-fraction", type=opt.open_fraction, default=0.1,
                   help="held-out part for the choices (of all questions), in (0, 1); fit chooses on it when it "
                   "chooses on one part (--folds 1, or auto on a large set)")
    p.add_argument("--threads", type=opt.threads, default=None,
                   help="torch threads (training, and MiniLM encoding one text a thread), 1..256; default: the cores "
                   "this process may use (its CPU affinity and its container's CPU limit)")
    p.add_argument("--lr", type=opt.positive, default=DEFAULTS.lr, help="the adapter's learning rate (AdamW)")
    p.add_argument("--batch-size", type=opt.positive_int, default=DEFAULTS.batch_size,
                   help="answers per training step, about (a step takes every answer to a few questions)")
    p.add_argument("--max-epochs", type=opt.epochs, default=DEFAULTS.max_epochs,
                   help="the most passes over the training answers (early stopping usually ends sooner)")
    p.add_argument("--patience", type=opt.count, default=DEFAULTS.patience,
                   help="epochs without a lower validation loss before stopping")
    p.add_argument(
        "--lr-drops", type=opt.count, default=DEFAULTS.lr_drops,
        help="times the learning rate is divided by 10 at a validation plateau before stopping",
    )
    p.add_argument("--lr-drop-patience", type=opt.epochs, default=DEFAULTS.lr_drop_patience,
                   help="epochs without a lower validation loss before the learning rate is divided by 10")
    p.add_argument(
        "--llm-lr-scale", type=opt.positive, default=DEFAULTS.llm_lr_scale,
        help="learning rate of the LLM vectors, as a multiple of the adapter's",
    )
    p.add_argument(
        "--ema-epochs", type=opt.non_negative, default=DEFAULTS.ema_epochs,
        help="time constant, in epochs, of a moving average of the trained weights that is validated and "
        "exported instead of the raw weights (0: off)",
    )
    p.add_argument("--seed", type=opt.seed, default=DEFAULTS.seed,
                   help="seed of the initial weights and of the order of the training answers")
    p.add_argument("--llm-init", default=DEFAULTS.llm_init, choices=["accuracy", "random"],
                   help="how the LLM vectors start: along one shared direction at lengths that give each LLM its "
                   "training accuracy, or at random")


def fit_arguments(p: argparse.ArgumentParser, out_required: bool, data_required: bool = True) -> None:
    common_arguments(p, data_required)
    p.add_argument(
        "--out", type=opt.output_path, required=out_required, metavar="ROUTER",
        help="router folder to write (must not exist; its parent folder must)"
        + ("" if out_required else "; omit to train and evaluate only"),
    )
    p.add_argument(
        "--holdout", "--test-fraction", dest="holdout", type=opt.fraction, default=0.0,
        help="fraction of questions kept out of everything, for a report on untouched questions, in [0, 1)",
    )
    p.add_argument("--folds", type=folds, default=AUTO, metavar="K|auto",
                   help=f"k > 1: choose by k-fold cross-validation; 1: on one held-out part (--val-fraction); auto "
                   f"(default): {AUTO_FOLDS} folds when the questions learned from hold at most "
                   f"{AUTO_FOLDS_MAX_CELLS:,} answers (fewer where too few questions a subject give each fold one), "
                   "else 1")
    p.add_argument("--dims", "--dim", type=opt.list_of(opt.dimension), default=list(DEFAULT_DIMS),
                   help="candidate d (comma list)")
    p.add_argument("--dropouts", "--dropout", type=opt.list_of(dropout), default=list(DEFAULT_DROPOUTS),
                   help="candidate dropouts, each in [0, 1) (comma list)")
    p.add_argument("--weight-decay", type=opt.non_negative, default=DEFAULTS.weight_decay,
                   help="AdamW's weight decay")
    p.add_argument(
        "--calibration", choices=CALIBRATIONS, default="global",
        help="temperature and bias on the logit, fitted on the held-out predictions of the chosen setting: one "
        "pair for all LLMs (global), one per LLM, or none",
    )
    p.add_argument(
        "--table-pulls", type=opt.list_of(opt.fraction, allow_empty=True), default=None, metavar="PULLS",
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
    p.add_argument(
        "--costs", type=Path, default=None, metavar="FILE",
        help="a table of per-LLM costs (any unit: price per call, per token, parameters) stored in the router for "
        "cost-aware routing: an LLM column (llm, model, model_name or llm_name) and a 'cost' column, CSV, TSV, "
        "JSONL or Parquet; LLMs it leaves out have no cost",
    )
    p.add_argument("--label", default=None, help="a note stored in the router's manifest")


FIT_DESCRIPTION = (
    "Train a JE-IRT router on your LLMs' answers: choose d, dropout and the training schedule on held-out "
    "questions, train the router on all of them, calibrate it on the held-out predictions, report the held-out "
    "metrics (and, with --holdout, metrics on untouched questions), write the router folder."
)

DATA_NOTE = (
    "data: a folder (questions.csv, models.csv, responses.csv) or one table, .csv, .tsv, .jsonl or .parquet:\n"
    "  long: a row per (question, LLM) answer with columns question, text, llm and correct\n"
    "  wide: a row per question with columns question and text, and one 0/1 column per LLM\n"
    f"  question: {_names(DEFAULT_QUESTION_COLUMNS)}; text: {_names(DEFAULT_TEXT_COLUMNS)}\n"
    f"  llm: {_names(DEFAULT_LLM_COLUMNS)}; correct: {_names(DEFAULT_CORRECT_COLUMNS)}\n"
    "  (the first name present is used; the --*-column options name others). correct is 0/1, true/false;\n"
    "  empty means not asked. Bad rows are named by data row (1-based, header not counted). More:\n"
    "  docs/guide/training-data.md"
)


class DefaultsFormatter(argparse.RawDescriptionHelpFormatter):
    """Each option's help ends with its default, unless the help states it already or there is none to state
    (a flag, an option whose absence means "not given")."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (not action.option_strings or default is None or default is argparse.SUPPRESS
                or isinstance(default, bool) or "default" in text):
            return text
        if isinstance(default, (list, tuple)):
            default = ",".join(f"{value:g}" if isinstance(value, float) else str(value) for value in default)
        elif isinstance(default, float):
            default = f"{default:g}"
        elif isinstance(default, Path) and default.is_absolute() and default.is_relative_to(Path.cwd()):
            default = default.relative_to(Path.cwd())  # a preset's folder, as the user would type it
        return f"{text} (default: {str(default).replace('%', '%%')})"


def fit_parser(
    prog: str, description: str = FIT_DESCRIPTION, epilog: str | None = None, preset: dict[str, Any] | None = None
) -> argparse.ArgumentParser:
    """`fit` as a command of its own (`jeirt-lite train`, build_default_router): the same options, --data and --out
    required unless `preset` gives them (a preset's values are defaults: options given on the command line win)."""
    parser = opt.OptionParser(
        prog=prog,
        description=description,
        epilog=(epilog or f"example:\n  {prog} --data data/mmlu_pro --out my_router") + "\n\n" + DATA_NOTE,
        formatter_class=DefaultsFormatter,
    )
    preset = preset or {}
    fit_arguments(parser, out_required="out" not in preset, data_required="data" not in preset)
    parser.set_defaults(**preset)
    return parser
