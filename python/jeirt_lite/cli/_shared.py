"""What every command shares: the program name, the common options, router loading, the printed summaries."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, TextIO

from .._limits import MAX_THREADS
from .._text import counted as counted  # re-exported: the commands import it from here
from .._text import first_and_more
from ._forecast_table import print_group_forecast
from ._options import int_in as int_in
from ._options import number_in as number_in
from ._options import positive_int as positive_int
from ._options import threads
from ._prog import PROG as PROG  # re-exported here, with the converters and the parser class of _options

if TYPE_CHECKING:
    from .._router import Router
    from ..batch import ScoreSummary

FORMATTER = argparse.RawDescriptionHelpFormatter


class Terminated(BaseException):
    """SIGTERM, raised like KeyboardInterrupt so that cleanup (deleting a partial output) runs."""


@dataclass
class Console:
    """The streams a command writes to, and what it can say about its progress if it is stopped.

    `stopped_note(how)` is set by a command that does work in steps (score), so that main can add how far it
    got after the error or interruption message; `how` is "stopped", "interrupted" or "terminated".
    """

    out: TextIO
    err: TextIO
    stopped_note: Optional[Callable[[str], str]] = None


def llm_subset(values: Optional[list[str]], known: Sequence[str]) -> Optional[list[str]]:
    """The LLM names given with --llms (repeatable): a value that is exactly one of the router's names is that
    name, commas and all; any other value is a comma-separated list of names."""
    if not values:
        return None
    names: list[str] = []
    for value in values:
        names.extend([value] if value in known else [part.strip() for part in value.split(",") if part.strip()])
    return names


def add_routing_arguments(
    parser: argparse.ArgumentParser, prefix: str = "", fallback: str = "marked 'fallback'"
) -> None:
    """--cost-weight, --min-probability and --llms: the routing rules of `Router.route`, for route and score;
    `prefix` starts each help text with what they choose where that needs saying (score: the llm_k columns),
    `fallback` says how a fallback shows."""
    parser.add_argument(
        "--cost-weight",
        type=number_in(0.0, math.inf),
        default=0.0,
        metavar="LAMBDA",
        help=f"{prefix}rank by P(correct) - LAMBDA * cost, with the costs stored in the router (or those of --costs "
        "FILE); with LAMBDA > 0, LLMs without a cost are left out (default 0: P alone, among every LLM)",
    )
    parser.add_argument(
        "--min-probability",
        type=number_in(0.0, 1.0),
        default=None,
        metavar="T",
        help=f"{prefix}the cheapest LLM whose P(correct) >= T (the most likely one where none clears T; "
        f"{fallback})",
    )
    parser.add_argument(
        "--llms",
        action="append",
        default=None,
        metavar="NAMES",
        help=f"{prefix}route only among these LLMs (e.g. the ones your service has): --llms A,B or --llms A --llms B; "
        "a value that is exactly one LLM's name is taken whole, so --llms 'name, with comma' works",
    )


def add_costs_option(parser: argparse.ArgumentParser) -> None:
    """--costs FILE, for the commands that route (route, score, serve): costs for this run instead of the router's."""
    parser.add_argument(
        "--costs",
        type=Path,
        default=None,
        metavar="FILE",
        help="per-LLM costs for this run, instead of those the router stores (e.g. today's prices): a table with an "
        "LLM column (llm, model, model_name or llm_name) and a 'cost' column, CSV, TSV, JSONL or Parquet; LLMs it "
        "leaves out have no cost",
    )


def given_costs(path: Optional[Path], llms: Sequence[str]) -> Optional[dict[str, float]]:
    """The costs of --costs FILE, each naming one of the router's `llms` (None without the option)."""
    if path is None:
        return None
    from .._io.costs import read_costs
    from .._llm_params import check_costs

    return check_costs(read_costs(path), llms, str(path))


def with_given_costs(router: Router, path: Optional[Path]) -> Router:
    """The router with the costs of --costs FILE instead of its own (unchanged without the option)."""
    costs = given_costs(path, router.llms)
    return router if costs is None else router.with_costs(costs, replace=True)


def checked_routing(
    args: argparse.Namespace, names: Sequence[str], costs: Mapping[str, float], console: Console
) -> Optional[list[str]]:
    """The --llms subset among a router's LLMs `names`, the routing options checked before a question is read,
    and a note on stderr naming the LLMs that cost-aware routing leaves out for want of a cost."""
    from .._routing import routing_rows

    llms = llm_subset(args.llms, names)
    routing_rows(names, args.k, args.cost_weight, args.min_probability, llms, costs)
    cost_aware = args.cost_weight != 0 or args.min_probability is not None
    unpriced = [name for name in names if name not in costs]
    if cost_aware and llms is None and unpriced:
        # At most 10 names (a router of 54 LLMs, 46 without a cost, made a line of 1,500 characters); info lists all
        # the router's costs, while a --costs table replaces them for the run: the LLMs left out are those it omits.
        given = getattr(args, "costs", None)
        why, where = ("no known cost", " (jeirt-lite info lists each LLM's cost)") if given is None else (
            f"not in {given}", "")
        console.err.write(
            f"cost-aware routing among the {counted(len(names) - len(unpriced), 'LLM')} with a cost; "
            f"left out ({why}): {first_and_more(unpriced, 10, after_more=where)}\n"
        )
    return llms


def add_no_neighbours(parser: argparse.ArgumentParser) -> None:
    """--no-neighbours (args.neighbours False), for the commands that route (route, serve)."""
    parser.add_argument(
        "--no-neighbours",
        dest="neighbours",
        action="store_false",
        help="route without the router's neighbour votes (its training questions' answers): about 1.5-2x as fast from texts, "
        "a little less accurate (docs/research/neighbours.md)",
    )


def add_command(
    subparsers: Any, name: str, *, positional_router: bool = False, **details: Any
) -> argparse.ArgumentParser:
    """The parser of a command that loads a router (all but train): `details` (help, description, epilog...)
    laid out as written, then --threads and --router, which each of them takes in the same words.
    `positional_router`: also the older positional ROUTER of info, add-llm and report, still accepted and hidden
    from --help (`--router PATH` is the one documented form)."""
    parser: argparse.ArgumentParser = subparsers.add_parser(name, formatter_class=FORMATTER, **details)
    parser.add_argument(
        "--threads",
        type=threads,
        default=None,
        metavar="N",
        help=f"cores for encoding and scoring (sizes both ONNX Runtime and the Rust pool), 1..{MAX_THREADS}; "
        "default: the cores this process may use (its CPU affinity and its container's CPU limit)",
    )
    parser.add_argument(
        "--router",
        type=Path,
        default=None,
        metavar="PATH",
        help="router folder to use; default: the router shipped inside the package",
    )
    if positional_router:
        parser.add_argument("router_positional", nargs="?", type=Path, default=None, help=argparse.SUPPRESS)
    return parser


def chosen_router(args: argparse.Namespace) -> Optional[Path]:
    """--router, else the older positional ROUTER, else None (the shipped router)."""
    from .._errors import JeirtError

    positional = getattr(args, "router_positional", None)
    if positional is not None and args.router is not None and positional != args.router:
        raise JeirtError(f"two routers given ({positional} and --router {args.router}): give one, with --router")
    path: Optional[Path] = args.router if args.router is not None else positional
    return path


def load_router(path: Optional[Path], threads: Optional[int]) -> Router:
    from .._router import Router

    return Router.load(path, threads=threads)


def short(text: str, width: int = 100) -> str:
    """One line of at most `width` characters: whitespace runs folded, an ellipsis where cut."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def unanswered_benchmarks(training: object, llms: Sequence[str]) -> dict[str, list[str]]:
    """The router's record of its LLMs that never answered a benchmark of its training data ({name: benchmarks},
    router.json's training.unanswered_benchmarks); entries that are not such a list, or name no LLM of the router
    (one renamed since), are passed over: the record only annotates what is printed."""
    record = training.get("unanswered_benchmarks") if isinstance(training, Mapping) else None
    if not isinstance(record, Mapping):
        return {}
    return {name: [str(b) for b in gaps] for name, gaps in record.items()
            if name in llms and isinstance(gaps, Sequence) and not isinstance(gaps, str) and gaps}


def note_unanswered(console: Console, training: object, routed: Sequence[str]) -> None:
    """A note on stderr naming the LLMs routed among that never answered a benchmark of the router's training data
    (`unanswered_benchmarks`): their P(correct) on such questions is an extrapolation, which can be far off and
    draw that benchmark's questions to them (docs/guide/training-data.md, "Block-missing data")."""
    gaps = unanswered_benchmarks(training, routed)
    if gaps:
        listed = first_and_more([f"{name} ({', '.join(benchmarks)})" for name, benchmarks in gaps.items()], 5,
                                separator="; ", after_more=": jeirt-lite info lists them")
        console.err.write(f"note: {counted(len(gaps), 'LLM')} routed among never answered a benchmark in training, "
                          f"where their P(correct) is extrapolated and can be far off: {listed}\n")


def print_forecast(out: TextIO, rows: int, forecast: dict[str, float],
                   unanswered: Optional[Mapping[str, Sequence[str]]] = None) -> None:
    """Each LLM's expected accuracy, best first; an LLM in `unanswered` marked with the benchmarks it never
    answered, where its value is an extrapolation."""
    out.write(f"expected accuracy on {counted(rows, 'question')} (mean P(correct)):\n")
    width = max(len(name) for name in forecast)
    gaps = unanswered or {}
    out.writelines(
        f"  {name:<{width}}  {value:.6f}"
        + (f"  (no training answers on {', '.join(gaps[name])}: extrapolated on its questions)" if name in gaps else "")
        + "\n"
        for name, value in sorted(forecast.items(), key=lambda item: -item[1])
    )


def print_score_summary(console: Console, summary: ScoreSummary, *, quiet: bool, where: str = "",
                        unanswered: Optional[Mapping[str, Sequence[str]]] = None) -> None:
    """What `score` prints when done, whichever engine ran it; `where` is e.g. " on Ray"; `unanswered`: the
    router's LLMs that never answered a benchmark of its training data, marked in the forecast."""
    if summary.group_forecast is not None:
        print_group_forecast(console.out, summary.group_forecast, unanswered)
    elif summary.forecast is not None:
        print_forecast(console.out, summary.rows, summary.forecast, unanswered)
    if not quiet:
        rate = summary.rows / summary.seconds if summary.seconds > 0 else float("inf")
        target = f" to {summary.output}" if summary.output is not None else ""
        console.err.write(
            f"scored {counted(summary.rows, 'question')}{target}{where} in {summary.seconds:.2f} s ({rate:,.0f} rows/s)\n"
        )
    if summary.skipped:
        console.err.write(f"skipped {counted(summary.skipped, 'bad row')} (--skip-bad)\n")


def stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False


def flag_for(args: argparse.Namespace, option: str) -> Optional[str]:
    """The flag that sets the library option `option` (skip_bad -> --skip-bad), or None when this command has
    none; `errors.error_text` puts it into a library error's advice."""
    return "--" + option.replace("_", "-") if option in vars(args) else None
