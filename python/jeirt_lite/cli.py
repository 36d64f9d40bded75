"""The `jeirt-lite` command line: route questions, score question banks, describe a router, onboard an LLM.

Exit codes: 0 done; 1 a bad input, argument or router folder (the message says which, no traceback); 2 a
command line argparse cannot parse; 130 interrupted (Ctrl-C); 143 terminated (SIGTERM). An interrupted or failed
`score` leaves no output file.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path
from types import FrameType
from typing import Any, Iterator, Optional, Sequence, TextIO

from .cli_onboard import add_parsers as add_onboarding_parsers
from .cli_onboard import run_add_llm, run_suggest
from .batch import DEFAULT_CHUNK_SIZE, ScoreOptions, ScoreState, score_file, stderr_is_terminal
from .errors import JeirtError
from .readers import text_problem

PROG = "jeirt-lite"
# Lines of stdin routed together when stdin is a pipe; at a terminal each line is answered as it is typed.
STDIN_BATCH = 256


class Terminated(BaseException):
    """SIGTERM, raised like KeyboardInterrupt so that cleanup (deleting a partial output) runs."""


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--threads",
        type=_positive_int,
        default=None,
        metavar="N",
        help="cores for encoding and scoring (sizes both ONNX Runtime and the Rust pool); "
        "default: all usable cores",
    )
    router_option = argparse.ArgumentParser(add_help=False)
    router_option.add_argument(
        "--router",
        type=Path,
        default=None,
        metavar="PATH",
        help="router folder to use; default: the router shipped inside the package",
    )
    formatter = argparse.RawDescriptionHelpFormatter

    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Predict which LLM will answer a question correctly, before asking any of them (JE-IRT).",
        formatter_class=formatter,
        epilog=(
            "examples:\n"
            f"  {PROG} route 'What is the derivative of x**3?' --k 3\n"
            f"  {PROG} score bank.csv -o scores.parquet --k 2 --forecast\n"
            f"  {PROG} info\n\n"
            f"Run '{PROG} COMMAND --help' for each command's options."
        ),
    )
    from . import __version__

    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    route = commands.add_parser(
        "route",
        parents=[common, router_option],
        formatter_class=formatter,
        help="the LLMs most likely to answer each question correctly",
        description="Route questions given as arguments, or one per line on stdin when none is given.",
        epilog=(
            "examples:\n"
            f"  {PROG} route 'Which enzyme unwinds DNA during replication?'\n"
            f"  {PROG} route --k 3 --json 'What is 2 + 2?' 'Who wrote Hamlet?'\n"
            f"  cat questions.txt | {PROG} route --json > routes.jsonl   # blank lines are skipped"
        ),
    )
    route.add_argument("texts", nargs="*", metavar="QUESTION", help="question texts (default: read stdin)")
    route.add_argument(
        "--k", type=_positive_int, default=1, help="how many LLMs to list per question (default 1)"
    )
    route.add_argument(
        "--json",
        action="store_true",
        help='one JSON object per question: {"text", "route": [{"llm", "p"}...], "difficulty"}',
    )
    route.add_argument(
        "--cost-weight",
        type=float,
        default=0.0,
        metavar="LAMBDA",
        help="rank by P(correct) - LAMBDA * cost, with the costs stored in the router (default 0: P alone)",
    )
    route.add_argument(
        "--min-probability",
        type=float,
        default=None,
        metavar="T",
        help="the cheapest LLM whose P(correct) >= T (the most likely one where none clears T; marked 'fallback')",
    )
    route.add_argument(
        "--llms",
        default=None,
        metavar="A,B,...",
        help="route only among these LLMs (comma-separated names, e.g. the ones your service has)",
    )

    score = commands.add_parser(
        "score",
        parents=[common, router_option],
        formatter_class=formatter,
        help="score a question bank file (CSV, JSONL, Parquet) or precomputed vectors, streaming",
        description=(
            "Score every question of a bank, chunk by chunk (memory stays flat whatever its size).\n"
            "The output has per question: id, llm_1, p_1, ... llm_k, p_k (best first), difficulty\n"
            "(the question vector's norm) and with --all one p[<llm>] column per LLM. It is written to a\n"
            "temporary file and renamed at the end: an interrupted or failed run leaves no output.\n"
            "Row order is the input order."
        ),
        epilog=(
            "examples:\n"
            f"  {PROG} score data/mmlu_pro/questions.csv -o scores.parquet --k 3\n"
            f"  {PROG} score bank.jsonl -o scores.csv --text-column question --id-column qid --all\n"
            f"  {PROG} score bank.parquet --forecast                 # expected accuracy per LLM only\n"
            f"  {PROG} score --vectors bank.npy --ids ids.txt -o scores.parquet\n"
            f"  {PROG} score bank.parquet -o scores.parquet --engine ray --address auto"
        ),
    )
    score.add_argument(
        "input",
        nargs="?",
        type=Path,
        metavar="INPUT",
        help="question bank: .csv, .jsonl or .parquet (format from the suffix)",
    )
    score.add_argument(
        "-o",
        "--output",
        type=Path,
        default=None,
        metavar="OUTPUT",
        help="scores file: .parquet, .csv or .jsonl (format from the suffix); optional with --forecast",
    )
    score.add_argument(
        "--k", type=_positive_int, default=1, help="LLMs per question in the output (default 1)"
    )
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
        "--text-column",
        default="text",
        metavar="NAME",
        help="column (or JSON field) holding the question text (default: text)",
    )
    score.add_argument(
        "--id-column",
        default=None,
        metavar="NAME",
        help="column carried to the output as id (default: id or question_id when present, "
        "else the 0-based row number)",
    )
    score.add_argument(
        "--vectors",
        type=Path,
        default=None,
        metavar="FILE.npy",
        help="score an (N, d) .npy of question vectors embedded with this router, instead of texts",
    )
    score.add_argument(
        "--ids",
        type=Path,
        default=None,
        metavar="FILE",
        help="with --vectors: ids for the rows, a .npy array or one id per line (default: row numbers)",
    )
    score.add_argument(
        "--chunk-size",
        type=_positive_int,
        default=DEFAULT_CHUNK_SIZE,
        metavar="ROWS",
        help=f"rows read, encoded and written at a time (default {DEFAULT_CHUNK_SIZE})",
    )
    score.add_argument(
        "--skip-bad",
        action="store_true",
        help="skip rows without a usable text (empty, not text, not UTF-8) and count them, "
        "instead of stopping at the first with its row number",
    )
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
    score.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress line and no summary on stderr (errors and the --skip-bad count still are)",
    )

    info = commands.add_parser(
        "info",
        parents=[common],
        formatter_class=formatter,
        help="what a router holds: LLMs, d, encoder, training data and metrics",
        epilog=f"examples:\n  {PROG} info\n  {PROG} info path/to/router --json",
    )
    info.add_argument(
        "router",
        nargs="?",
        type=Path,
        default=None,
        metavar="ROUTER",
        help="router folder (default: the router shipped inside the package)",
    )
    info.add_argument("--json", action="store_true", help="print the router's manifest (router.json) as JSON")
    add_onboarding_parsers(commands, common, formatter, PROG)

    report = commands.add_parser(
        "report",
        parents=[common],
        formatter_class=formatter,
        help="one HTML page about a router on a data folder: difficulty, taxonomy, calibration, alignment",
        description=(
            "Embed a data folder's questions (questions.csv, models.csv, responses.csv) with the router and write\n"
            "one self-contained HTML page of plots with their numbers. Observed error rates come from the data's\n"
            "responses; without --question-ids they may include the router's training questions. Needs\n"
            'matplotlib: pip install "jeirt-lite[report]".'
        ),
        epilog=(
            "examples:\n"
            f"  {PROG} report path/to/router --data data/mmlu_pro -o report.html\n"
            f"  {PROG} report path/to/router --data data/mmlu_pro --question-ids test_ids.txt --max-questions 0"
        ),
    )
    report.add_argument("router", type=Path, metavar="ROUTER", help="router folder")
    report.add_argument("--data", type=Path, default=Path("data/mmlu_pro"), metavar="DIR",
                        help="data folder in the project format (default: data/mmlu_pro)")
    report.add_argument("-o", "--output", type=Path, default=Path("report.html"), metavar="HTML",
                        help="the page to write (default: report.html)")
    report.add_argument("--question-ids", type=Path, default=None, metavar="FILE",
                        help="only the question ids in FILE (one per line), e.g. the router's test split")
    report.add_argument("--max-questions", type=int, default=3000, metavar="N",
                        help="embed a subject-stratified sample of at most N questions; 0: all (default 3000)")
    report.add_argument("--results", type=Path, default=Path("docs"), metavar="DIR",
                        help="folder with onboarding.json / routing.json curves (default: docs)")
    return parser


def _load_router(path: Optional[Path], threads: Optional[int]) -> Any:
    from .router import Router

    return Router.load(path, threads=threads)


# -- route ---------------------------------------------------------------------------------------------------


def _stdin_batches(stream: TextIO) -> Iterator[list[str]]:
    """Non-blank stdin lines in batches; a line that is not UTF-8 stops with its line number."""
    interactive = stream.isatty()
    raw = getattr(stream, "buffer", None)
    lines: Iterator[Any] = iter(raw) if raw is not None else iter(stream)
    batch: list[str] = []
    for number, line in enumerate(lines, 1):
        if isinstance(line, bytes):
            try:
                line = line.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError:
                raise JeirtError(f"stdin line {number} is not valid UTF-8") from None
        text = line.rstrip("\r\n")
        if not text.strip():
            continue
        batch.append(text)
        if interactive or len(batch) >= STDIN_BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def _short(text: str, width: int = 100) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def run_route(args: argparse.Namespace, out: TextIO) -> int:
    router = _load_router(args.router, args.threads)
    if args.k > len(router.llms):
        raise JeirtError(f"--k {args.k} is more than the router's {len(router.llms)} LLMs")
    if args.texts:
        for i, text in enumerate(args.texts):
            problem = text_problem(text)  # empty, or bytes that were not UTF-8 in argv
            if problem is not None:
                raise JeirtError(f"question argument {i + 1}: {problem}")
        batches: Iterator[list[str]] = iter([list(args.texts)])
    else:
        if sys.stdin.isatty():  # a person at a terminal, not a pipe: say what is expected
            sys.stderr.write("reading questions from stdin, one per line (Ctrl-D to end)\n")
        batches = _stdin_batches(sys.stdin)
    width = max(len(name) for name in router.llms)
    llms = [name.strip() for name in args.llms.split(",") if name.strip()] if args.llms else None
    for texts in batches:
        vectors = router.embed(texts)
        result = router.route_vectors(
            vectors, k=args.k, cost_weight=args.cost_weight, min_probability=args.min_probability, llms=llms
        )
        difficulty = router.difficulty_vectors(vectors).tolist()
        for i, text in enumerate(texts):
            pairs = result[i]
            if args.json:
                record = {
                    "text": text,
                    "route": [{"llm": name, "p": round(p, 6)} for name, p in pairs],
                    "difficulty": round(difficulty[i], 6),
                }
                if result.fallback is not None:
                    record["fallback"] = bool(result.fallback[i])
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
            else:
                out.write(f"{_short(text)}\n")
                out.writelines(
                    f"  {rank}. {name:<{width}}  P(correct) {p:.3f}\n"
                    for rank, (name, p) in enumerate(pairs, 1)
                )
                if result.fallback is not None and result.fallback[i]:
                    out.write("  (no LLM clears --min-probability: the most likely one is shown)\n")
                out.write(f"  difficulty {difficulty[i]:.3f}\n")
        out.flush()
    return 0


# -- score ---------------------------------------------------------------------------------------------------


def run_score(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if (args.input is None) == (args.vectors is None):
        raise JeirtError("give an INPUT file of question texts, or --vectors FILE.npy (exactly one of them)")
    if args.ids is not None and args.vectors is None:
        raise JeirtError("--ids goes with --vectors (a text bank carries its ids in --id-column)")
    if args.output is None and not args.forecast:
        raise JeirtError(
            "give an output file with -o OUTPUT (or --forecast to print expected accuracies only)"
        )
    if args.engine == "ray" or args.address is not None or args.ship_router:
        from .cli_ray import run_score_ray

        return run_score_ray(args, out, err)
    router = _load_router(args.router, args.threads)
    options = ScoreOptions(
        k=args.k,
        all_probabilities=args.all_probabilities,
        forecast=args.forecast,
        chunk_size=args.chunk_size,
        skip_bad=args.skip_bad,
    )
    state = ScoreState()
    args._state = state  # main() reports how far an interrupted run got
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
    if summary.forecast is not None:
        out.write(f"expected accuracy on {summary.rows:,} questions (mean P(correct)):\n")
        width = max(len(name) for name in summary.forecast)
        out.writelines(
            f"  {name:<{width}}  {value:.6f}\n"
            for name, value in sorted(summary.forecast.items(), key=lambda item: -item[1])
        )
    if not args.quiet:
        rate = summary.rows / summary.seconds if summary.seconds > 0 else float("inf")
        where = f" to {summary.output}" if summary.output is not None else ""
        err.write(
            f"scored {summary.rows:,} questions{where} in {summary.seconds:.2f} s ({rate:,.0f} rows/s)\n"
        )
    if summary.skipped:
        err.write(f"skipped {summary.skipped:,} bad rows (--skip-bad)\n")
    return 0


# -- info ----------------------------------------------------------------------------------------------------


def _flatten(value: Any, prefix: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _flatten(item, f"{prefix}.{key}" if prefix else str(key))
    else:
        text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value
        yield prefix, _short(text, 160)


def run_info(args: argparse.Namespace, out: TextIO) -> int:
    router = _load_router(args.router, args.threads)
    manifest = dict(router.manifest)
    if args.json:
        out.write(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
        return 0
    encoder = manifest.get("encoder", {})
    lines = [
        ("router", str(router.path)),
        ("label", str(manifest.get("label") or "-")),
        (
            "format",
            (
                f"{manifest.get('format')} v{manifest.get('format_version')} "
                f"(written by jeirt-lite {manifest.get('package_version', '?')})"
            ),
        ),
        ("dimension", f"d = {router.dim}"),
        (
            "encoder",
            f"{encoder.get('name')} (max {encoder.get('max_seq_length')} tokens"
            + (f", {encoder['pooling']} pooling" if encoder.get("pooling") else "")
            + ")",
        ),
    ]
    out.writelines(f"{key:<10} {value}\n" for key, value in lines)
    out.write(f"LLMs ({len(router.llms)}):\n")
    out.writelines(f"  {name}\n" for name in router.llms)
    for section in ("training", "metrics"):
        block = manifest.get(section)
        if not block:
            out.write(f"{section}: none recorded\n")
            continue
        out.write(f"{section}:\n")
        out.writelines(f"  {key}: {value}\n" for key, value in _flatten(block))
    return 0


# -- report --------------------------------------------------------------------------------------------------


def run_report(args: argparse.Namespace, out: TextIO) -> int:
    try:
        from .analysis.report import _pyplot, build_report

        _pyplot()
    except ImportError as err:  # matplotlib is an optional extra: say which, without a traceback
        raise JeirtError(str(err)) from err
    ids = None
    if args.question_ids is not None:
        ids = [line.strip() for line in args.question_ids.read_text(encoding="utf-8").splitlines() if line.strip()]
    if args.max_questions < 0:
        raise JeirtError(f"--max-questions must be 0 (all) or positive, got {args.max_questions}")
    path = build_report(
        _load_router(args.router, args.threads), args.data, args.output, question_ids=ids,
        max_questions=args.max_questions or None, results_dir=args.results,
    )
    out.write(f"wrote {path}\n")
    return 0


# -- entry point ---------------------------------------------------------------------------------------------


def _on_sigterm(signum: int, frame: Optional[FrameType]) -> None:
    raise Terminated()


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line; returns the exit code (the console script passes it to sys.exit)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    out, err = sys.stdout, sys.stderr
    previous = None
    try:
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread (e.g. called from a test runner's worker): leave SIGTERM alone
        pass
    try:
        if args.command == "route":
            return run_route(args, out)
        if args.command == "score":
            return run_score(args, out, err)
        if args.command == "add-llm":
            return run_add_llm(args, out)
        if args.command == "suggest":
            return run_suggest(args, out)
        if args.command == "report":
            return run_report(args, out)
        return run_info(args, out)
    except JeirtError as error:
        err.write(f"{PROG}: error: {error}\n")
        _report_progress(args, err, "stopped")
        return 1
    except KeyboardInterrupt:
        err.write(f"\n{PROG}: interrupted\n")
        _report_progress(args, err, "interrupted")
        return 130
    except Terminated:
        err.write(f"\n{PROG}: terminated (SIGTERM)\n")
        _report_progress(args, err, "terminated")
        return 143
    except BrokenPipeError:
        # The reader of our stdout went away (e.g. `| head`); silence the flush at exit, as other CLIs do.
        _silence_stdout()
        return 0
    except OSError as error:  # an unreadable input or an unwritable output folder, disk full
        err.write(f"{PROG}: error: {error}\n")
        _report_progress(args, err, "stopped")
        return 1
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _report_progress(args: argparse.Namespace, err: TextIO, how: str) -> None:
    state: Optional[ScoreState] = getattr(args, "_state", None)
    if state is None:
        return
    target = f"; no output was written ({args.output} left untouched)" if args.output is not None else ""
    err.write(
        f"{PROG}: {how} after scoring {state.rows_scored:,} rows (of {state.rows_read:,} read){target}\n"
    )


def _silence_stdout() -> None:
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
