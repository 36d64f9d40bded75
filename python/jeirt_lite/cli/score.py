"""`jeirt-lite score`: a question bank file (or precomputed vectors) scored chunk by chunk, here or on Ray."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Optional

from .._errors import JeirtError, option_error
from .._group_forecast import MAX_GROUPS
from .._io.formats import known_suffixes
from .._io.outputs import refuse_inputs
from .._io.vocabulary import ID_COLUMNS, TEXT_COLUMNS
from .._router import DEFAULT_ROUTER_PATH
from .._score_request import check_k
from ..artifact import read_manifest
from ..batch import DEFAULT_CHUNK_SIZE, ScoreOptions, ScoreState, score_file
from ._options import output_path
from ._shared import (
    PROG,
    Console,
    add_command,
    add_costs_option,
    add_routing_arguments,
    checked_routing,
    counted,
    given_costs,
    load_router,
    note_unanswered,
    positive_int,
    print_score_summary,
    stderr_is_terminal,
    unanswered_benchmarks,
    with_given_costs,
)


def add_parser(subparsers: Any) -> None:
    score = add_command(
        subparsers,
        "score",
        help="score a question bank file (CSV, TSV, JSONL, Parquet) or precomputed vectors, streaming",
        description=(
            "Score every question of a bank, chunk by chunk (memory stays flat whatever its size).\n"
            "The output has per question: id, llm_1, p_1, ... llm_k, p_k (best first), difficulty\n"
            "(the question vector's norm), with --all one p[<llm>] column per LLM, and with\n"
            "--min-probability a last column, fallback: true where no LLM cleared T. It is written\n"
            "to a temporary file and renamed at the end: an interrupted or failed run leaves no output.\n"
            "Row order is the input order."
        ),
        epilog=(
            "examples:\n"
            f"  {PROG} score data/mmlu_pro/questions.csv -o scores.parquet --k 3\n"
            f"  {PROG} score bank.jsonl -o scores.csv --text-column question --id-column qid --all\n"
            f"  {PROG} score bank.parquet --forecast                 # expected accuracy per LLM only\n"
            f"  {PROG} score data/mmlu_pro/questions.csv --forecast-by subject   # ... and per subject\n"
            f"  {PROG} score bank.csv -o routed.csv --llms Yi-34B,gemma-7b --cost-weight 0.0005\n"
            f"  {PROG} score --vectors bank.npy --ids ids.txt -o scores.parquet --no-neighbours\n"
            f"  {PROG} score bank.parquet -o scores.parquet --engine ray --address auto"
        ),
    )
    _add_input_arguments(score)
    _add_output_arguments(score)
    _add_engine_arguments(score)


def _add_input_arguments(score: argparse.ArgumentParser) -> None:
    score.add_argument(
        "input",
        nargs="?",
        type=Path,
        metavar="INPUT",
        help=f"question bank: {known_suffixes()} (format from the suffix)",
    )
    score.add_argument(
        "--text-column",
        default=None,
        metavar="NAME",
        help=f"column (or JSON field) holding the question text (default: the first of {', '.join(TEXT_COLUMNS)}, "
        "as train and add-llm read them)",
    )
    score.add_argument(
        "--id-column",
        default=None,
        metavar="NAME",
        help=f"column carried to the output as id (default: the first of {', '.join(ID_COLUMNS)} present, "
        "else the data row number: 1-based, header not counted, the number an error names; "
        "with --vectors the 0-based index in the array)",
    )
    score.add_argument(
        "--vectors",
        type=Path,
        default=None,
        metavar="FILE.npy",
        help="score an (N, d) .npy of question vectors embedded with this router, instead of texts (not for a "
        "router with feature corrections from add-llm or neighbour votes: they read the texts' encoder features)",
    )
    score.add_argument(
        "--no-neighbours",
        dest="neighbours",
        action="store_false",
        help="score without the router's neighbour votes (its training questions' answers, which read the texts' "
        "encoder features): needed with --vectors on a router that has them, and about 1.5-2x as fast",
    )
    score.add_argument(
        "--ids",
        type=Path,
        default=None,
        metavar="FILE",
        help="with --vectors: ids for the rows, a .npy array or one id per line (default: each row's 0-based index)",
    )
    score.add_argument(
        "--chunk-size",
        type=positive_int,
        default=DEFAULT_CHUNK_SIZE,
        metavar="ROWS",
        help=f"rows read, encoded and written at a time (default {DEFAULT_CHUNK_SIZE})",
    )
    score.add_argument(
        "--skip-bad",
        action="store_true",
        help="skip bad rows (a text or id that is empty, not text or not UTF-8, the wrong number of fields, a "
        "JSONL line that is no object, a vector with NaN) and count them, instead of stopping at the first with "
        "its row number",
    )


def _add_output_arguments(score: argparse.ArgumentParser) -> None:
    score.add_argument(
        "-o",
        "--output",
        type=output_path,
        default=None,
        metavar="OUTPUT",
        help=f"scores file: {known_suffixes()} (format from the suffix); optional with --forecast",
    )
    score.add_argument(
        "--k", type=positive_int, default=1, help="LLMs per question in the output (default 1)"
    )
    add_routing_arguments(score, prefix="llm_k columns: ", fallback="the output's fallback column is then true")
    add_costs_option(score)
    score.add_argument(
        "--all",
        action="store_true",
        dest="all_probabilities",
        help="also write P(correct) of every LLM, one column p[<llm>] each",
    )
    score.add_argument(
        "--forecast",
        action="store_true",
        help="print each LLM's expected accuracy on the bank (mean P(correct), computed streaming)",
    )
    score.add_argument(
        "--forecast-by",
        default=None,
        metavar="COLUMN",
        help="--forecast, and per group of questions: one column per value of COLUMN (read as text, e.g. a subject "
        f"or benchmark; at most {MAX_GROUPS}), groups in text order, with each one's question count; a row with no "
        "value is a bad row (see --skip-bad)",
    )
    score.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress line and no summary on stderr (errors, the --skip-bad count and the notes on the LLMs "
        "routed among still are)",
    )


def _add_engine_arguments(score: argparse.ArgumentParser) -> None:
    score.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="local: this process (default); ray: Ray Data workers, Parquet in and out "
        '(pip install "jeirt-lite[ray]")',
    )
    score.add_argument(
        "--address",
        default=None,
        metavar="ADDR",
        help="with --engine ray: the Ray cluster to join (e.g. auto, ray://head:10001); "
        "default: a local Ray runtime on this machine's CPUs",
    )
    score.add_argument(
        "--ship-router",
        action="store_true",
        help="with --engine ray: send the router's files to the workers through Ray's object store "
        "(for clusters without shared storage; default: every worker reads --router by path)",
    )


def _checked_options(
    args: argparse.Namespace, names: Sequence[str], costs: Mapping[str, float], console: Console, training: object
) -> ScoreOptions:
    """The options, their routing rules checked before a row is read (with the notes on the LLMs a cost rule leaves
    out and, where the output holds routes, on those that never answered a benchmark of `training`, the router's
    record); k first, so that a k beyond the router's LLMs gets the words `score_file` and the Ray engine give it."""
    check_k(args.k, len(names))
    llms = checked_routing(args, names, costs, console)
    if args.output is not None:  # without one only the forecast is printed, which marks them itself
        note_unanswered(console, training, names if llms is None else llms)
    return ScoreOptions(
        k=args.k,
        all_probabilities=args.all_probabilities,
        forecast=args.forecast or args.forecast_by is not None,
        forecast_by=args.forecast_by,
        chunk_size=args.chunk_size,
        skip_bad=args.skip_bad,
        llms=None if llms is None else tuple(llms),
        cost_weight=args.cost_weight,
        min_probability=args.min_probability,
    )


# On Ray the workers score while this process waits: with no row counted yet, some may have been scored anyway.
NONE_SCORED, NONE_BACK_FROM_RAY = "before any row was scored", "before any row's scores came back from the Ray workers"
BEFORE_RAY = "before Ray started"  # a check of the bank or its options failed: no worker was given a row


def _stopped_note(state: ScoreState, output: Optional[Path], how: str, nothing_yet: str = NONE_SCORED) -> str:
    target = f"; no output was written ({output} left untouched)" if output is not None else ""
    if nothing_yet == NONE_BACK_FROM_RAY and not state.workers_started:
        nothing_yet = BEFORE_RAY
    if state.rows_scored == 0:  # stopped within the first chunk: its rows were never counted as read
        return f"{PROG}: {how} {nothing_yet}{target}\n"
    # On Ray the workers read the rows: this process counts only those scored (rows_read stays 0).
    read = f" (of {state.rows_read:,} read)" if state.rows_read else ""
    return f"{PROG}: {how} after scoring {counted(state.rows_scored, 'row')}{read}{target}\n"


def run(args: argparse.Namespace, console: Console) -> int:
    if args.output is not None and args.costs is not None:  # an input too: the scores would replace the price table
        refuse_inputs(args.output, [args.costs])
    if args.engine == "ray" or args.address is not None or args.ship_router:
        return _run_on_ray(args, console)
    router = with_given_costs(load_router(args.router, args.threads), args.costs)
    if not args.neighbours:
        router = router.with_neighbours(None)
    options = _checked_options(args, router.llms, router.costs, console, router.manifest.training)
    state = ScoreState()
    console.stopped_note = partial(_stopped_note, state, args.output)  # how far an interrupted run got
    summary = score_file(
        router,
        input_path=args.input,
        vectors_path=args.vectors,
        ids_path=args.ids,
        output=args.output,
        text_column=args.text_column,
        id_column=args.id_column,
        options=options,
        state=state,
        show_progress=stderr_is_terminal() and not args.quiet,
    )
    print_score_summary(console, summary, quiet=args.quiet,
                        unanswered=unanswered_benchmarks(router.manifest.training, router.llms))
    return 0


RAY_EXTRA = 'pip install "jeirt-lite[ray]" (from a checkout: pip install ".[ray]")'


def _check_ray_arguments(args: argparse.Namespace) -> None:
    """What only the command line can get wrong about Ray (the rest of the request: score_file_on_ray's check)."""
    if not args.neighbours:
        raise option_error("--no-neighbours runs on one machine; --engine ray scores with the router as it is")
    for flag, given in (("--address", args.address is not None), ("--ship-router", args.ship_router)):
        if given and args.engine != "ray":
            raise option_error(f"{flag} goes with --engine ray")
    for flag, given in (("--vectors", args.vectors is not None), ("--ids", args.ids is not None)):
        if given:  # refused, not ignored: score_file_on_ray takes neither
            raise option_error(f"{flag} runs on one machine; --engine ray scores a Parquet bank of question texts")


def _run_on_ray(args: argparse.Namespace, console: Console) -> int:
    _check_ray_arguments(args)
    try:
        from ..ray_engine import score_file_on_ray
    except ImportError as err:
        if err.name != "ray":  # not the missing extra (jeirt_lite._ray names it "ray"): say what failed to import
            raise JeirtError(f"--engine ray: {err}") from err
        # the extra is missing: named by the option the user gave, not by a module
        raise JeirtError(f"--engine ray needs Ray Data, which is not installed: {RAY_EXTRA}") from err
    manifest = read_manifest(args.router if args.router is not None else DEFAULT_ROUTER_PATH)
    costs = given_costs(args.costs, manifest.llms)  # read here: the workers get the costs, not the file
    options = _checked_options(args, manifest.llms, costs if costs is not None else manifest.costs or {}, console,
                               manifest.training)
    state = ScoreState()
    # how far a failed or interrupted run got
    console.stopped_note = partial(_stopped_note, state, args.output, nothing_yet=NONE_BACK_FROM_RAY)
    summary = score_file_on_ray(
        args.input,
        router_path=args.router,
        output=args.output,
        text_column=args.text_column,
        id_column=args.id_column,
        options=options,
        address=args.address,
        threads_per_worker=args.threads or 1,
        ship_router=args.ship_router,
        show_progress=stderr_is_terminal() and not args.quiet,  # the local progress line's rule
        costs=costs,
        quiet=args.quiet,
        state=state,
    )
    print_score_summary(console, summary, quiet=args.quiet, where=" on Ray",
                        unanswered=unanswered_benchmarks(manifest.training, manifest.llms))
    return 0
