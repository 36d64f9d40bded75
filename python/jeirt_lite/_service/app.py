"""The HTTP service of `jeirt-lite serve`, on aiohttp: the endpoints, the JSON errors, startup and shutdown.

Every answer is JSON, errors too (`{"error": MESSAGE}`, with a 4xx status for the client's mistakes): a request the
service cannot parse, one it has no endpoint for and one over a limit are answered like a bad argument to the
command line, and the service goes on serving. SIGTERM (and Ctrl-C) is aiohttp's graceful exit: the listening
socket closes at once, requests already taken are answered, then the process exits with 0.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Awaitable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Callable, Union

from aiohttp import web

from .. import __version__
from .._errors import JeirtError
from .batcher import MicroBatcher
from .requests import TooLarge, forecast_request, parse_body, route_request
from .scoring import Answer, Request, answer_batch, error_body, failure_answer

if TYPE_CHECKING:
    from .._router import Router

ENDPOINTS = "GET /healthz, GET /v1/info, POST /v1/route, POST /v1/forecast"
# How long a SIGTERM waits for the requests already taken before it closes their connections anyway.
SHUTDOWN_TIMEOUT_S = 8.0


@dataclass(frozen=True)
class Limits:
    """The service's bounds on a request and on a micro-batch (the `serve` flags)."""

    max_body_bytes: int
    max_texts: int
    max_wait_ms: float
    max_batch: int


class Service:
    """The endpoints, over one router and one micro-batcher."""

    def __init__(self, router: Router, limits: Limits) -> None:
        self.router = router
        self.limits = limits
        self.batcher: MicroBatcher[Request, Answer] = MicroBatcher(
            lambda requests: answer_batch(router, requests),
            max_wait=limits.max_wait_ms / 1000.0,
            max_batch=limits.max_batch,
        )
        info = {**dict(router.manifest), "service": {"jeirt_lite_version": __version__, "limits": asdict(limits)}}
        self._info = json.dumps(info, ensure_ascii=False).encode("utf-8")

    async def healthz(self, request: web.Request) -> web.Response:
        """200 once the router is loaded (it is before the socket listens), with the micro-batcher's counts."""
        batcher = self.batcher
        counts = {"status": "ok", "batches": batcher.batches, "batched_requests": batcher.jobs,
                  "unanswered": batcher.unanswered}
        return _json(200, json.dumps(counts).encode("utf-8"))

    async def info(self, request: web.Request) -> web.Response:
        return _json(200, self._info)

    async def route(self, request: web.Request) -> web.Response:
        return await self._answer(request, lambda value: route_request(value, self.router, self.limits.max_texts))

    async def forecast(self, request: web.Request) -> web.Response:
        return await self._answer(request, lambda value: forecast_request(value, self.limits.max_texts))

    async def _answer(self, request: web.Request, check: Callable[[dict[str, object]], Request]) -> web.Response:
        """Check the request here, on its own, so that only a request the router can answer joins a batch."""
        try:
            checked = check(parse_body(await self._body(request)))
        except TooLarge as error:
            return _json(413, error_body(str(error)))
        except JeirtError as error:
            return _json(400, error_body(str(error)))
        try:
            status, body = await self.batcher.submit(checked, len(checked.texts))
        except Exception as error:  # a fault of its whole batch (answer_batch answers each request's own)
            status, body = failure_answer(error)
        return _json(status, body)

    async def _body(self, request: web.Request) -> bytes:
        length = request.content_length
        if length is not None and length > self.limits.max_body_bytes:
            raise TooLarge(self._too_large())
        try:
            return await request.read()  # aiohttp stops reading past client_max_size (a chunked body)
        except web.HTTPRequestEntityTooLarge:
            raise TooLarge(self._too_large()) from None

    def _too_large(self) -> str:
        return (
            f"the request body is larger than this service's limit of {self.limits.max_body_bytes:,} bytes "
            "(serve --max-body-bytes)"
        )

    async def on_startup(self, app: web.Application) -> None:
        self.batcher.start()

    async def on_cleanup(self, app: web.Application) -> None:
        await self.batcher.stop()


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def json_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """aiohttp's own refusals (no such path, wrong method) as JSON errors like the service's."""
    try:
        return await handler(request)
    except web.HTTPMethodNotAllowed as error:
        allowed = ", ".join(sorted(error.allowed_methods))
        return _json(405, error_body(f"{request.method} is not allowed on {request.path}; use {allowed}"),
                     headers={"Allow": allowed})
    except web.HTTPNotFound:
        return _json(404, error_body(f"no endpoint {request.path}; this service has {ENDPOINTS}"))
    except web.HTTPException as error:
        if error.status < 400:
            raise
        return _json(error.status, error_body(error.reason))


def build_app(router: Router, limits: Limits) -> web.Application:
    service = Service(router, limits)
    # client_max_size: aiohttp refuses a longer body itself; the service checks Content-Length first.
    app = web.Application(client_max_size=limits.max_body_bytes, middlewares=[json_errors])
    app.router.add_get("/healthz", service.healthz, allow_head=False)
    app.router.add_get("/v1/info", service.info, allow_head=False)
    app.router.add_post("/v1/route", service.route)
    app.router.add_post("/v1/forecast", service.forecast)
    app.on_startup.append(service.on_startup)
    app.on_cleanup.append(service.on_cleanup)  # after the server has answered what it took (aiohttp's order)
    return app


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound to host:port (port 0: a free one, which the startup line names)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as error:
        raise JeirtError(f"cannot listen on {host}:{port}: {error.strerror}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as error:
        sock.close()
        raise JeirtError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    return sock


def serve(router: Router, limits: Limits, sock: socket.socket, announce: Callable[[str], None]) -> None:
    """Serve until SIGTERM or Ctrl-C; `announce` gets the address once the socket accepts connections."""
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host

    def started(*_: object) -> None:
        announce(f"http://{shown}:{port}")

    web.run_app(
        build_app(router, limits),
        sock=sock,
        print=started,
        access_log=None,
        shutdown_timeout=SHUTDOWN_TIMEOUT_S,
        handle_signals=True,
    )


def _json(status: int, body: bytes, headers: Union[dict[str, str], None] = None) -> web.Response:
    return web.Response(status=status, body=body, content_type="application/json", headers=headers)
