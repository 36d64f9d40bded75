"""`jeirt-lite add-llm`: a router with a new LLM fitted from its answers to some questions."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from .._errors import JeirtError
from .._io.answers import read_answers
from .._io.formats import known_suffixes
from .._io.outputs import check_output_folder, refuse_inputs
from .._io.vocabulary import CORRECT_COLUMNS, LLM_COLUMNS, TEXT_COLUMNS
from .._onboarding import MIN_LABELS
from .._training_questions import normalise_question
from ._options import output_path
from ._shared import (
    PROG,
    Console,
    add_command,
    chosen_router,
    counted,
    load_router,
    number_in,
)


def add_parser(subparsers: Any) -> None:
    add = add_command(
        subparsers,
        "add-llm",
        positional_router=True,
        help="add a new LLM to a router from its answers to some questions",
        description="A router with one more LLM, fitted from its answers, or (--update) with one of its LLMs adapted "
        "to them (--router: the router to extend).",
        epilog=f"examples:\n  {PROG} add-llm --name my-llm --answers answers.csv -o router-plus\n"
        f"  {PROG} add-llm --name Yi-34B --answers my_answers.csv --update -o router-adapted",
    )
    add.add_argument("--name", required=True, help="the new LLM's name (must not be in the router; with --update, "
                     "an LLM it holds)")
    add.add_argument(
        "--answers",
        type=Path,
        required=True,
        metavar="FILE",
        help=f"{known_suffixes()} table with a text and a correct (0/1, true/false) column; with an LLM column, "
        "only the rows of --name are read",
    )
    add.add_argument("-o", "--output", type=output_path, required=True, metavar="NEW_ROUTER", help="folder to write")
    add.add_argument(
        "--text-column", metavar="NAME",
        help=f"the column holding the question text; default: the first of {', '.join(TEXT_COLUMNS)}",
    )
    add.add_argument(
        "--correct-column", metavar="NAME",
        help="the column saying whether the LLM answered correctly: 0/1 or true/false, a row with it empty left "
        f"out; default: the first of {', '.join(CORRECT_COLUMNS)}",
    )
    # The option's name until 0.1.0, kept working; --correct-column is train's name for the same column.
    add.add_argument("--label-column", dest="correct_column", metavar="NAME", help=argparse.SUPPRESS)
    add.add_argument(
        "--llm-column", metavar="NAME",
        help="the column naming which LLM gave each answer (a table of several LLMs' answers): only the rows of "
        f"--name are read; default: the first of {', '.join(LLM_COLUMNS)}, if any",
    )
    add.add_argument(
        "--cost", type=number_in(0.0, math.inf), default=None, help="the new LLM's cost, stored for cost-aware routing"
    )
    add.add_argument(
        "--update", action="store_true",
        help="adapt --name, an LLM the router holds, to these answers instead (Router.update_llm: its P(correct) on "
        "questions like these corrected; needs an encoder with features)",
    )
    add.add_argument("--overwrite", action="store_true", help="replace NEW_ROUTER if it exists")


def run(args: argparse.Namespace, console: Console) -> int:
    from .._router import DEFAULT_ROUTER_PATH  # here: loading the router package is the slow part of a run
    from ..artifact import refuse_existing

    router_path = chosen_router(args)
    check_output_folder(args.output)  # the rule of every command: a missing folder is a typo, never created
    refuse_inputs(args.output, [router_path or DEFAULT_ROUTER_PATH, args.answers], replaces_folder=True)
    if args.output.exists() and not args.output.is_dir():
        raise JeirtError(f"{args.output}: is a file, not a router folder; give a folder path with -o")
    router = load_router(router_path, args.threads)
    if args.name in router.llms and not args.update:
        raise JeirtError(f"LLM {args.name!r} is already in {router.path}; pick another --name, or pass --update to "
                         "adapt it to these answers")
    if args.update and args.name not in router.llms:
        raise JeirtError(f"--update adapts an LLM the router holds, and {router.path} has no {args.name!r}; "
                         "drop --update to add it")
    if args.update and args.cost is not None:
        raise JeirtError("--cost is the new LLM's cost; --update keeps the LLM's cost as it is")
    if args.output.exists() and not args.overwrite:
        raise JeirtError(f"{args.output} already exists (pass --overwrite to replace it)")
    refuse_existing(args.output, args.overwrite)  # before the fit: --overwrite replaces only a router folder
    answers = read_answers(args.answers, args.name, args.text_column, args.correct_column, args.llm_column)
    texts, labels = answers.texts, answers.labels
    empty = f"{counted(answers.unanswered, 'row')} with an empty label left out" if answers.unanswered else ""
    if empty and len(texts) < MIN_LABELS:  # the rows left out are why there are too few: say so
        raise JeirtError(f"{args.answers}: need at least {MIN_LABELS} answers to fit an LLM, got {len(texts)} "
                         f"({empty}: no answer)")
    if args.update:
        grown = router.update_llm(args.name, texts, labels)
    else:
        grown = router.add_llm(args.name, texts, labels, cost=args.cost)
    path = grown.save(args.output, overwrite=args.overwrite)
    left_out = f"; {empty}" if empty else ""
    others = answers.other_llms
    if others:
        left_out += (f"; {counted(sum(others.values()), 'row')} of {counted(len(others), 'other LLM')}"
                     f" in column {answers.llm_column!r} left out")
    asked = len({normalise_question(text) for text in texts})
    # some asked more than once: held out together
    to = f" to {counted(asked, 'question')}" if asked < len(texts) else ""
    console.out.write(
        f"{'updated' if args.update else 'added'} {args.name!r} from {len(texts)} answers{to} ({sum(labels)} "
        f"correct{left_out}); wrote {path}\n"
    )
    console.out.write(fit_summary(grown.manifest["onboarded"][-1]))
    return 0


def fit_summary(record: dict[str, Any]) -> str:
    """How well the new LLM fits its answers (cross-validated), and whether its questions look like the router's."""
    lines = []
    answers = record.get("answers")
    alone = "unchanged" if record.get("update") else "vector alone"  # an update's grid holds the LLM as it was
    if "on_training_questions" in record:  # records written before it was counted lack it
        seen = record["on_training_questions"]
        if seen is None:
            lines.append("  the router keeps no record of the questions it learned from (training_questions.npy)")
        else:
            lines.append(
                f"  {seen} of its {answers} answers are on questions the router learned from"
                + ((": left out of the update (the router's logit looks too good there)" if record.get("update")
                    else ": they fit its vector, not the feature correction") if seen else "")
            )
    if record.get("cv_auc") is not None:
        cv_answers = record.get("cv_answers", answers)
        which = "its answers" if cv_answers == answers else f"its {cv_answers} answers on other questions"
        lines.append(
            f"  cross-validated on {which} ({record['folds']} folds): AUC {record['cv_auc']:.3f}, log-loss "
            f"{record['cv_log_loss']:.3f} ({alone}: AUC {record['cv_auc_vector_only']:.3f}, log-loss "
            f"{record['cv_log_loss_vector_only']:.3f})"
        )
    details = ""
    fits = record.get("averaged_fits") or []
    scaled = f"the router's logit scaled by {record.get('router_scale', 1.0):.3g}"
    if record.get("correction") == "on" and len(fits) == 1:
        details = f" (strength {fits[0]['strength']:g}; {scaled})"
    elif record.get("correction") == "on" and fits:
        share = sum(fit["weight"] for fit in fits if fit.get("strength") is None)
        details = (
            f" (an average of {len(fits)} fits weighted by their cross-validated likelihood, {share:.0%} on the "
            f"{alone}; {scaled})"
        )
    lines.append(f"  feature correction: {record['correction']}{details}")
    alignment = record.get("alignment")
    if alignment:
        verdict = "mostly UNLIKE" if alignment["mostly_out_of_distribution"] else "mostly like"
        lines.append(
            f"  its questions are {verdict} the router's training questions: "
            f"{alignment['in_distribution_share']:.0%} in distribution (mean alignment {alignment['mean_score']:.3f})"
        )
    return "\n".join(lines) + "\n"
