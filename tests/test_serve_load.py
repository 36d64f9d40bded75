"""`jeirt-lite serve` under load and at its end: concurrent one-question requests are batched and still equal
`Router.route`; SIGTERM stops accepting, answers what is in flight and exits 0; without aiohttp the command says
which extra to install."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from typing import Any

import numpy as np
import pytest

aiohttp = pytest.importorskip("aiohttp")

from jeirt_lite import Router
from service_process import STOP_TIMEOUT_S, running_service

pytestmark = pytest.mark.timeout(600)


async def _post_all(url: str, bodies: list[dict[str, Any]], connections: int) -> list[tuple[int, Any]]:
    """Every body posted at once over at most `connections` keep-alive connections; (status, JSON) in order."""
    timeout = aiohttp.ClientTimeout(total=300)
    connector = aiohttp.TCPConnector(limit=connections)
    async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:

        async def one(body: dict[str, Any]) -> tuple[int, Any]:
            async with session.post(url, json=body) as response:
                return response.status, await response.json()

        return list(await asyncio.gather(*(one(body) for body in bodies)))


def test_concurrent_one_question_requests_are_batched_and_equal_router_route(real_texts: list[str]) -> None:
    texts = real_texts[:96]
    router = Router.load(threads=1)
    expected = [router.route([text], k=3) for text in texts]  # one at a time: the reference, unbatched
    difficulty = [float(router.difficulty([text])[0]) for text in texts]
    with running_service("--threads", "1") as service:
        bodies = [{"texts": [text], "k": 3} for text in texts]
        answers = asyncio.run(_post_all(service.url + "/v1/route", bodies, connections=32))
        health = service.health()
    for i, (status, answer) in enumerate(answers):
        assert status == 200, answer
        (result,) = answer["results"]
        assert [step["llm"] for step in result["route"]] == expected[i].names[0]
        assert np.allclose([s["p"] for s in result["route"]], expected[i].probabilities[0], rtol=0, atol=1e-6)
        assert abs(result["difficulty"] - difficulty[i]) <= 1e-6
    assert health["batched_requests"] == len(texts)
    # 32 at once against a router that takes milliseconds per call: requests must have shared calls.
    assert health["batches"] < len(texts) / 2, health


def _refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except OSError:
        return True
    return False


def test_sigterm_stops_accepting_answers_in_flight_requests_and_exits_0(real_texts: list[str]) -> None:
    requests, per_request = 8, 200  # seconds of router work on one thread, so it is still running at SIGTERM
    bodies = [{"texts": (real_texts * 9)[i * per_request : (i + 1) * per_request], "k": 2} for i in range(requests)]
    with running_service("--threads", "1", "--max-batch", str(per_request)) as service:

        async def scenario() -> tuple[list[tuple[int, Any]], bool, float, int]:
            posting = asyncio.ensure_future(_post_all(service.url + "/v1/route", bodies, connections=requests))
            deadline = time.monotonic() + 120
            while True:  # until the service has taken every request
                health = await asyncio.to_thread(service.health)
                if health["unanswered"] + health["batched_requests"] >= requests:
                    break
                assert time.monotonic() < deadline and not posting.done()
                await asyncio.sleep(0.02)
            service.process.terminate()
            stopped_at = time.monotonic()
            while not await asyncio.to_thread(_refused, service.port):
                assert time.monotonic() < stopped_at + STOP_TIMEOUT_S
                await asyncio.sleep(0.02)
            refused_while_running = service.process.poll() is None
            return await posting, refused_while_running, stopped_at, health["unanswered"]

        answers, refused_while_running, stopped_at, in_flight = asyncio.run(scenario())
        code = service.process.wait(STOP_TIMEOUT_S)
        took = time.monotonic() - stopped_at
    assert in_flight >= 2, "too little in flight at SIGTERM for the test to mean anything"
    assert refused_while_running, "the service kept accepting connections after SIGTERM"
    assert [status for status, _ in answers] == [200] * requests, answers
    assert [len(answer["results"]) for _, answer in answers] == [per_request] * requests
    assert code == 0, "".join(service.stderr)
    assert took < STOP_TIMEOUT_S
    assert "stopped" in service.stderr[-1]


BLOCK_AIOHTTP = "import sys; sys.modules['aiohttp'] = None; from jeirt_lite.cli import main; sys.exit(main())"


def test_serve_without_aiohttp_names_the_extra_and_help_still_works() -> None:
    run = [sys.executable, "-c", BLOCK_AIOHTTP]
    env = dict(os.environ, COLUMNS="120")
    done = subprocess.run([*run, "serve", "--port", "0"], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, env=env)
    assert done.returncode == 1
    assert 'jeirt-lite: error: `jeirt-lite serve` needs the serve extra (aiohttp is not installed)' in done.stderr
    assert 'pip install "jeirt-lite[serve]"' in done.stderr and "Traceback" not in done.stderr
    shown = subprocess.run([*run, "serve", "--help"], capture_output=True, text=True, timeout=120,
                           stdin=subprocess.DEVNULL, env=env)
    assert shown.returncode == 0 and "--max-body-bytes" in shown.stdout and "/v1/route" in shown.stdout


def test_a_port_in_use_is_a_clear_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "jeirt_lite", "serve", "--host", "127.0.0.1", "--port", str(port)],
            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        )
    assert done.returncode == 1
    assert f"jeirt-lite: error: cannot listen on 127.0.0.1:{port}: Address already in use" in done.stderr


def test_no_neighbours_serves_the_router_without_its_votes(real_texts: list[str]) -> None:
    texts = real_texts[:3]
    plain = Router.load(threads=1).with_neighbours(None)
    with running_service("--threads", "1", "--no-neighbours") as service:
        ((status, answer),) = asyncio.run(_post_all(service.url + "/v1/route", [{"texts": texts, "k": 2}], 1))
        ((_, info),) = asyncio.run(_get(service.url + "/v1/info"))
    assert status == 200
    assert [[s["llm"] for s in r["route"]] for r in answer["results"]] == plain.route(texts, 2).names
    assert np.allclose([[s["p"] for s in r["route"]] for r in answer["results"]], plain.route(texts, 2).probabilities,
                       rtol=0, atol=1e-6)
    assert info.get("neighbours") is None


async def _get(url: str) -> list[tuple[int, Any]]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:
        async with session.get(url) as response:
            return [(response.status, await response.json())]
