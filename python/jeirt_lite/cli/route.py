"""`jeirt-lite route`: the LLMs most likely to answer each question, from arguments or stdin lines."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from typing import Any, TextIO

from .._errors import JeirtError
from .._io.pipes import stoppable_buffer
from .._io.records import wide_encoding
from .._io.vocabulary import text_problem
from .._limits import MAX_LINE_BYTES, MAX_TEXT_CHARS, bounded_lines
from .._pipeline import in_background, pipelines, scoring_copy
from .._questions import EncodedQuestions
from .._results import RouteResult
from ._shared import (
    PROG,
    Console,
    add_command,
    add_costs_option,
    add_no_neighbours,
    add_routing_arguments,
    checked_routing,
    load_router,
    note_unanswered,
    positive_int,
    short,
    with_given_costs,
)

# Lines of stdin routed together when stdin is a pipe; at a terminal each line is answered as it is typed.
STDIN_BATCH = 256


def add_parser(subparsers: Any) -> None:
    route = add_command(
        subparsers,
        "route",
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
        "--k", type=positive_int, default=1, help="how many LLMs to list per question (default 1)"
    )
    route.add_argument(
        "--json",
        action="store_true",
        help='one JSON object per question: {"text", "route": [{"llm", "p"}...], "difficulty"}',
    )
    add_routing_arguments(route)
    add_costs_option(route)
    add_no_neighbours(route)


def _stdin_batches(stream: TextIO) -> Iterator[list[str]]:
    """Non-blank stdin lines in batches; a line that is not UTF-8, or is longer than MAX_LINE_BYTES, stops with its
    line number."""
    interactive = stream.isatty()
    batch: list[str] = []
    for number, line in bounded_lines(_stoppable_bytes(stream)):
        if line is None:  # stdin may be endless (`route < /dev/zero`): read no further than the bound
            raise JeirtError(f"stdin line {number} is longer than {MAX_LINE_BYTES:,} bytes, the longest line route "
                             f"reads (a router reads at most the first {MAX_TEXT_CHARS:,} characters of a text)")
        if isinstance(line, bytes):
            try:
                line = line.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError:
                wide = wide_encoding(line) if number == 1 else None  # a file saved as UTF-16, piped in
                how = f": stdin is {wide}; route reads UTF-8 lines: convert it first" if wide else ""
                raise JeirtError(f"stdin line {number} is not valid UTF-8{how}") from None
        text = line.rstrip("\r\n")
        if not text.strip():
            continue
        problem = text_problem(text)  # a NUL, or a lone surrogate from a text-mode stream
        if problem is not None:
            raise JeirtError(f"stdin line {number}: {problem}")
        batch.append(text)
        if interactive or len(batch) >= STDIN_BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def _stoppable_bytes(stream: TextIO) -> Any:
    """The stream's bytes (its text, for a stream without them), read so that Ctrl-C stops a wait for a line
    (_io.pipes); nothing of it has been read yet."""
    raw = getattr(stream, "buffer", None)
    return stream if raw is None else stoppable_buffer(raw)


def _question_batches(args: argparse.Namespace) -> Iterator[list[str]]:
    """The argument texts as one batch (each checked), else stdin's lines."""
    if args.texts:
        for i, text in enumerate(args.texts):
            problem = text_problem(text)  # empty, or bytes that were not UTF-8 in argv
            if problem is not None:
                raise JeirtError(f"question argument {i + 1}: {problem}")
        return iter([list(args.texts)])
    if sys.stdin is None:  # started with stdin closed (`<&-`): Python has no stream for it
        raise JeirtError("no question given, and stdin is closed: give the questions as arguments, or one per line "
                         "on stdin")
    if sys.stdin.isatty():  # a person at a terminal, not a pipe: say what is expected
        sys.stderr.write("reading questions from stdin, one per line (Ctrl-D to end)\n")
    return _stdin_batches(sys.stdin)


def route_record(pairs: list[tuple[str, float]], difficulty: float, fallback: Any) -> dict[str, Any]:
    """One question's answer as `--json` writes it (and `serve` answers it): the route, best first, the
    difficulty, and with --min-probability whether no LLM cleared it; numbers to 6 decimals."""
    record: dict[str, Any] = {
        "route": [{"llm": name, "p": round(p, 6)} for name, p in pairs],
        "difficulty": round(difficulty, 6),
    }
    if fallback is not None:
        record["fallback"] = bool(fallback)
    return record


def _write_json(out: TextIO, text: str, pairs: list[tuple[str, float]], difficulty: float,
                fallback: Any) -> None:
    record = {"text": text, **route_record(pairs, difficulty, fallback)}
    out.write(json.dumps(record, ensure_ascii=False) + "\n")


def _write_human(out: TextIO, text: str, pairs: list[tuple[str, float]], difficulty: float, fallback: Any,
                 width: int) -> None:
    out.write(f"{short(text)}\n")
    out.writelines(
        f"  {rank}. {name:<{width}}  P(correct) {p:.3f}\n" for rank, (name, p) in enumerate(pairs, 1)
    )
    if fallback:
        shown = "the most likely one is shown" if len(pairs) == 1 else f"the {len(pairs)} most likely are shown"
        out.write(f"  (no LLM clears --min-probability: {shown})\n")
    out.write(f"  difficulty {difficulty:.3f}\n")


def run(args: argparse.Namespace, console: Console) -> int:
    out = console.out
    router = with_given_costs(load_router(args.router, args.threads), args.costs)
    if not args.neighbours:
        router = router.with_neighbours(None)
    llms = checked_routing(args, router.llms, router.costs, console)
    note_unanswered(console, router.manifest.training, router.llms if llms is None else llms)
    batches = _question_batches(args)
    width = max(len(name) for name in router.llms)
    scorer = router
    encoded: Iterator[tuple[list[str], EncodedQuestions]]
    # Piped stdin: the next batches are encoded in the background while this one is written. At a terminal each
    # line is answered as it is typed, so nothing is read ahead.
    if pipelines(router) and not args.texts and not sys.stdin.isatty():
        encoded = in_background(router, batches, lambda texts: texts)
        scorer = scoring_copy(router)
    else:
        encoded = ((texts, router.encode(texts)) for texts in batches)
    for texts, questions in encoded:
        result: RouteResult = scorer.route(questions, k=args.k, cost_weight=args.cost_weight, min_probability=args.min_probability, llms=llms)
        difficulty = scorer.difficulty(EncodedQuestions(questions.vectors)).tolist()
        for i, text in enumerate(texts):
            fallback = result.fallback[i] if result.fallback is not None else None
            if args.json:
                _write_json(out, text, result[i], difficulty[i], fallback)
            else:
                _write_human(out, text, result[i], difficulty[i], fallback, width)
        out.flush()
    return 0
