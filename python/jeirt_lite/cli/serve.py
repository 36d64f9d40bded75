"""`jeirt-lite serve`: the router as an HTTP service (JSON over HTTP, on aiohttp; needs the `serve` extra)."""

from __future__ import annotations

import argparse
from typing import Any

from .._errors import JeirtError
from ._shared import (
    PROG,
    Console,
    add_command,
    add_costs_option,
    add_no_neighbours,
    int_in,
    load_router,
    note_unanswered,
    number_in,
    with_given_costs,
)

SERVE_EXTRA = 'pip install "jeirt-lite[serve]" (from a checkout: pip install ".[serve]")'
# Defaults: a request of 256 questions of usual length (the route command's stdin batch) fits both limits; the batching defaults
# are the measured choice of docs/research/throughput.md ("The HTTP service").
DEFAULT_MAX_BODY = 1 << 20
DEFAULT_MAX_TEXTS = 256
DEFAULT_MAX_BATCH = 256
DEFAULT_WAIT_MS = 2.0


def add_parser(subparsers: Any) -> None:
    serve = add_command(
        subparsers,
        "serve",
        help="the router as an HTTP service: POST /v1/route, /v1/forecast (needs the serve extra)",
        description=(
            "Answer routing requests over HTTP (JSON) until SIGTERM or Ctrl-C:\n"
            "POST /v1/route, POST /v1/forecast, GET /v1/info, GET /healthz.\n"
            "Requests that arrive together are scored in one router call. Guide: docs/guide/serve.md"
        ),
        epilog=(
            "examples:\n"
            f"  {PROG} serve --port 8000\n"
            f"  {PROG} serve --host 127.0.0.1 --port 8000 --threads 2 --max-texts 64\n"
            "  curl -s localhost:8000/v1/route -d '{\"texts\": [\"What is 2 + 2?\"], \"k\": 3}'"
        ),
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    serve.add_argument("--port", type=int_in(0, 65535), default=8000, help="port (default 8000; 0: any free port)")
    add_no_neighbours(serve)
    add_costs_option(serve)
    serve.add_argument(
        "--max-body-bytes",
        type=int_in(1, 1 << 30),
        default=DEFAULT_MAX_BODY,
        metavar="BYTES",
        help=f"largest request body accepted, larger ones get 413 (default {DEFAULT_MAX_BODY:,})",
    )
    serve.add_argument(
        "--max-texts",
        type=int_in(1, 1 << 20),
        default=DEFAULT_MAX_TEXTS,
        metavar="N",
        help=f"most questions in one request, more get 413 (default {DEFAULT_MAX_TEXTS})",
    )
    serve.add_argument(
        "--max-batch",
        type=int_in(1, 1 << 20),
        default=DEFAULT_MAX_BATCH,
        metavar="N",
        help=f"most questions scored in one router call; a larger request goes alone (default {DEFAULT_MAX_BATCH})",
    )
    serve.add_argument(
        "--batch-wait-ms",
        type=number_in(0.0, 1000.0),
        default=DEFAULT_WAIT_MS,
        metavar="MS",
        help="while requests come in together, how long a batch waits for more before the router starts on it "
        f"(default {DEFAULT_WAIT_MS:g}; 0: none; a lone client is never kept waiting)",
    )


def run(args: argparse.Namespace, console: Console) -> int:
    try:
        import aiohttp  # noqa: F401 - only whether it imports (with its own dependencies)
    except ImportError as error:
        missing = f" ({error.name} is not installed)" if error.name else ""
        raise JeirtError(f"`{PROG} serve` needs the serve extra{missing}: {SERVE_EXTRA}") from None
    from .._service.app import Limits, listening_socket, serve

    router = with_given_costs(load_router(args.router, args.threads), args.costs)
    if not args.neighbours:
        router = router.with_neighbours(None)
    limits = Limits(
        max_body_bytes=args.max_body_bytes,
        max_texts=args.max_texts,
        max_wait_ms=args.batch_wait_ms,
        max_batch=args.max_batch,
    )
    sock = listening_socket(args.host, args.port)
    note_unanswered(console, router.manifest.training, router.llms)

    def announce(address: str) -> None:
        console.err.write(
            f"{PROG} serve: listening on {address} ({len(router.llms)} LLMs, router {router.path}); "
            "SIGTERM or Ctrl-C stops it\n"
        )
        console.err.flush()

    serve(router, limits, sock, announce)
    console.err.write(f"{PROG} serve: stopped\n")
    return 0
