"""The service's micro-batching in process: what one batch answers (`_service.scoring`) and how requests are gathered
into batches (`_service.batcher`), without HTTP."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("aiohttp")

from jeirt_lite import Router
from jeirt_lite._questions import EncodedQuestions
from jeirt_lite._service.batcher import MicroBatcher
from jeirt_lite._service.requests import ForecastRequest, RouteParams, RouteRequest
from jeirt_lite._service.scoring import answer_batch


@pytest.fixture(scope="module")
def router() -> Router:
    return Router.load(threads=1)


def test_one_batch_answers_each_request_as_router_route_would(router: Router, real_texts: list[str]) -> None:
    requests = [
        RouteRequest(real_texts[0:3], RouteParams(k=3)),
        ForecastRequest(real_texts[3:7]),
        RouteRequest(real_texts[7:8], RouteParams(k=2, llms=("Yi-6B", "gemma-7b", "Qwen1.5-110B"))),
        RouteRequest(real_texts[8:10], RouteParams(k=3)),  # routed in one call with the first
        RouteRequest(real_texts[10:12], RouteParams(k=1, min_probability=0.7)),
    ]
    answers = answer_batch(router, requests)
    assert [status for status, _ in answers] == [200] * len(requests)
    for request, (_, body) in zip(requests, answers):
        answer = json.loads(body)
        if isinstance(request, ForecastRequest):
            expected = router.forecast(request.texts)
            assert np.allclose(list(answer["forecast"].values()), list(expected.values()), rtol=0, atol=1e-6)
            assert all(round(value, 6) == value for value in answer["forecast"].values())  # 6 decimals, as documented
            continue
        p = request.params
        result = router.route(request.texts, p.k, llms=p.llms, min_probability=p.min_probability)
        assert [[s["llm"] for s in r["route"]] for r in answer["results"]] == result.names
        got = [[s["p"] for s in r["route"]] for r in answer["results"]]
        assert np.allclose(got, result.probabilities, rtol=0, atol=1e-6)


def test_a_request_the_router_refuses_fails_alone(router: Router, real_texts: list[str]) -> None:
    """Requests are checked before they join a batch; should one still fail in the router, the others of its
    batch are answered all the same (here: k beyond the LLMs, built without the checks)."""
    good = RouteRequest(real_texts[:2], RouteParams(k=2))
    bad = RouteRequest(real_texts[2:3], RouteParams(k=40))
    also_good = ForecastRequest(real_texts[3:5])
    answers = answer_batch(router, [good, bad, also_good])
    assert [status for status, _ in answers] == [200, 400, 200]
    assert "k" in json.loads(answers[1][1])["error"]
    assert [[s["llm"] for s in r["route"]] for r in json.loads(answers[0][1])["results"]] == (
        router.route(real_texts[:2], 2).names
    )


def test_requests_that_arrive_together_share_a_batch_up_to_max_batch() -> None:
    seen: list[list[int]] = []
    release = threading.Event()

    def run(jobs: Sequence[int]) -> list[int]:
        release.wait(10)  # the first batch holds the worker while the rest arrive
        seen.append(list(jobs))
        return [job * 10 for job in jobs]

    counts: list[tuple[int, int, int]] = []  # (unanswered, batches, jobs) as the service's /healthz reports them

    async def scenario() -> list[int]:
        batcher: MicroBatcher[int, int] = MicroBatcher(run, max_wait=0.0, max_batch=4)
        batcher.start()
        counts.append((batcher.unanswered, batcher.batches, batcher.jobs))
        first = asyncio.ensure_future(batcher.submit(0, 1))
        await asyncio.sleep(0.05)
        rest = [asyncio.ensure_future(batcher.submit(job, 1)) for job in range(1, 10)]
        await asyncio.sleep(0.05)
        counts.append((batcher.unanswered, batcher.batches, batcher.jobs))  # one running, nine waiting
        release.set()
        answers = await asyncio.gather(first, *rest)
        counts.append((batcher.unanswered, batcher.batches, batcher.jobs))
        await batcher.stop()
        assert batcher._task is not None and batcher._task.done()  # the dispatcher ends with the service
        return answers

    assert asyncio.run(scenario()) == [job * 10 for job in range(10)]
    assert seen == [[0], [1, 2, 3, 4], [5, 6, 7, 8], [9]]
    assert counts == [(0, 0, 0), (10, 0, 0), (0, 4, 10)]


def test_a_job_larger_than_max_batch_goes_alone_and_the_wait_gathers_late_arrivals() -> None:
    seen: list[list[str]] = []

    def run(jobs: Sequence[str]) -> list[str]:
        seen.append(list(jobs))
        return [job.upper() for job in jobs]

    async def scenario() -> list[str]:
        batcher: MicroBatcher[str, str] = MicroBatcher(run, max_wait=0.2, max_batch=5)
        batcher.start()
        big = asyncio.ensure_future(batcher.submit("big", 9))
        late = [asyncio.ensure_future(batcher.submit(name, 1)) for name in ("a", "b")]
        answers = await asyncio.gather(big, *late)
        await asyncio.sleep(0)
        later = asyncio.ensure_future(batcher.submit("c", 1))
        await asyncio.sleep(0.05)  # within the wait: joins the same batch
        answers += await asyncio.gather(later, batcher.submit("d", 1))
        await batcher.stop()
        return answers

    assert asyncio.run(scenario()) == ["BIG", "A", "B", "C", "D"]
    assert seen == [["big"], ["a", "b"], ["c", "d"]]


def test_an_exception_out_of_the_worker_reaches_only_its_batch() -> None:
    def run(jobs: Sequence[int]) -> list[int]:
        if 13 in jobs:
            raise RuntimeError("unlucky batch")
        return list(jobs)

    async def scenario() -> tuple[BaseException, int]:
        batcher: MicroBatcher[int, int] = MicroBatcher(run, max_wait=0.0, max_batch=1)
        batcher.start()
        failed = asyncio.ensure_future(batcher.submit(13, 1))
        fine = asyncio.ensure_future(batcher.submit(7, 1))
        error = await asyncio.gather(failed, return_exceptions=True)
        value = await fine
        await batcher.stop()
        return error[0], value

    error, value = asyncio.run(scenario())
    assert isinstance(error, RuntimeError) and value == 7


def test_a_batch_takes_the_oldest_jobs_that_fit_and_stop_cancels_the_jobs_still_waiting() -> None:
    seen: list[list[str]] = []
    release = threading.Event()

    def run(jobs: Sequence[str]) -> list[str]:
        release.wait(10)
        seen.append(list(jobs))
        return list(jobs)

    async def scenario() -> list[object]:
        batcher: MicroBatcher[str, str] = MicroBatcher(run, max_wait=0.0, max_batch=4)
        batcher.start()
        futures = [asyncio.ensure_future(batcher.submit("first", 1))]
        await asyncio.sleep(0.05)
        futures += [asyncio.ensure_future(batcher.submit(name, size)) for name, size in
                    (("a", 1), ("big", 5), ("b", 1), ("c", 2))]
        await asyncio.sleep(0.05)
        release.set()  # then [a] (big does not fit beside it, and nothing passes it), [big] alone, [b, c]
        answers = await asyncio.gather(*futures)
        release.clear()  # the next batch holds the worker; a job behind it is still waiting at the stop
        held = asyncio.ensure_future(batcher.submit("held", 1))
        await asyncio.sleep(0.05)
        waiting = asyncio.ensure_future(batcher.submit("waiting", 1))
        await asyncio.sleep(0.05)
        stopping = asyncio.ensure_future(batcher.stop())
        await asyncio.sleep(0.05)
        release.set()
        await stopping
        outcome = await asyncio.gather(held, waiting, return_exceptions=True)
        return [*answers, outcome[0], type(outcome[1]).__name__]

    assert asyncio.run(asyncio.wait_for(scenario(), 20)) == ["first", "a", "big", "b", "c", "held", "CancelledError"]
    assert seen == [["first"], ["a"], ["big"], ["b", "c"], ["held"]]


def test_a_full_batch_waiting_is_not_kept_waiting_for_company() -> None:
    """After a batch of several jobs the dispatcher waits max_wait for more, unless max_batch questions already wait:
    here the wait is 30 s, and the test gives up after 20."""
    seen: list[list[int]] = []
    gates = {0: threading.Event(), 1: threading.Event()}

    def run(jobs: Sequence[int]) -> list[int]:
        if jobs[0] in gates:
            gates[jobs[0]].wait(10)  # holds the worker while the next jobs arrive
        seen.append(list(jobs))
        return list(jobs)

    async def scenario() -> list[int]:
        batcher: MicroBatcher[int, int] = MicroBatcher(run, max_wait=30.0, max_batch=2)
        batcher.start()
        futures = [asyncio.ensure_future(batcher.submit(0, 1))]
        await asyncio.sleep(0.05)
        futures += [asyncio.ensure_future(batcher.submit(job, 1)) for job in (1, 2)]
        await asyncio.sleep(0.05)
        gates[0].set()  # [0] ends; [1, 2] starts at once (the batch before it held one job) and holds the worker
        await asyncio.sleep(0.05)
        futures += [asyncio.ensure_future(batcher.submit(job, 1)) for job in (3, 4)]
        await asyncio.sleep(0.05)
        gates[1].set()  # [1, 2] held two jobs, but two questions, max_batch, wait already: [3, 4] starts at once
        answers = await asyncio.gather(*futures)
        await batcher.stop()
        return answers

    assert asyncio.run(asyncio.wait_for(scenario(), 20)) == [0, 1, 2, 3, 4]
    assert seen == [[0], [1, 2], [3, 4]]


@pytest.mark.parametrize("answers", [lambda jobs: list(jobs)[:-1], lambda jobs: [*jobs, 0]])
def test_a_worker_that_answers_a_batch_short_or_long_fails_that_batch_and_serves_the_next(
    answers: Callable[[Sequence[int]], list[int]]
) -> None:
    release = threading.Event()

    def run(jobs: Sequence[int]) -> list[int]:
        release.wait(10)  # the first batch holds the worker while 13 and 14 arrive, so that they share one
        return answers(jobs) if 13 in jobs else list(jobs)

    async def scenario() -> tuple[list[object], int]:
        batcher: MicroBatcher[int, int] = MicroBatcher(run, max_wait=0.0, max_batch=4)
        batcher.start()
        held = asyncio.ensure_future(batcher.submit(1, 1))
        await asyncio.sleep(0.05)
        unlucky = [asyncio.ensure_future(batcher.submit(job, 1)) for job in (13, 14)]
        await asyncio.sleep(0.05)
        release.set()
        failed = await asyncio.gather(held, *unlucky, return_exceptions=True)
        value = await batcher.submit(7, 1)
        await batcher.stop()
        return failed, value

    failed, value = asyncio.run(asyncio.wait_for(scenario(), 20))
    assert value == 7 and failed[0] == 1
    for error in failed[1:]:
        assert isinstance(error, RuntimeError)
        assert str(error) == f"the worker gave {len(answers([13, 14]))} answers to a batch of 2 requests"


def test_a_fault_of_a_whole_batch_is_answered_as_a_json_500(tiny_router_path: Path) -> None:
    from jeirt_lite._service.app import Limits, Service

    service = Service(Router.load(tiny_router_path, threads=1), Limits(4096, 4, 0.0, 8))

    class Broken:
        async def submit(self, job: object, size: int) -> object:
            raise RuntimeError("the worker gave 0 answers to a batch of 2 requests")

    class Request:
        content_length = None

        async def read(self) -> bytes:
            return b'{"texts": ["what is the law"], "k": 1}'

    service.batcher = Broken()  # type: ignore[assignment]
    response = asyncio.run(service.route(Request()))  # type: ignore[arg-type]
    assert response.status == 500 and response.content_type == "application/json"
    assert json.loads(response.body) == {  # type: ignore[arg-type]
        "error": "internal error: RuntimeError: the worker gave 0 answers to a batch of 2 requests"}


def _failing_on(vector: np.ndarray, real: Callable[..., object]) -> Callable[..., object]:
    """`real` (scoring's _route or _forecast), raising MemoryError("poisoned") when the encoded questions it is
    given, its last argument, hold `vector`."""

    def call(*args: object) -> object:
        questions: EncodedQuestions = args[-1]  # type: ignore[assignment]
        if (np.abs(questions.vectors - vector).max(axis=1) == 0).any():
            raise MemoryError("poisoned")
        return real(*args)

    return call


@pytest.mark.parametrize("where", ["embedding", "routing"])
def test_a_failure_inside_a_shared_call_is_retried_request_by_request(
    router: Router, real_texts: list[str], monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """Requests alike are encoded and routed in one call; if that call fails, each request is answered on its own,
    so only the one that fails by itself gets the error (500 for a fault that is not a JeirtError)."""
    from jeirt_lite._service import scoring

    poison = real_texts[5]
    if where == "embedding":
        real_encode = Router.encode

        def encode(self: Router, texts: list[str], **options: object):  # type: ignore[no-untyped-def]
            if poison in texts:
                raise MemoryError("poisoned")
            return real_encode(self, texts, **options)  # type: ignore[arg-type]

        monkeypatch.setattr(Router, "encode", encode)
    else:
        monkeypatch.setattr(scoring, "_route", _failing_on(router.encode([poison]).vectors[0], scoring._route))
    requests = [RouteRequest([text], RouteParams(k=2)) for text in real_texts[3:8]]
    answers = answer_batch(router, requests)
    assert [status for status, _ in answers] == [200, 200, 500, 200, 200]
    assert json.loads(answers[2][1]) == {"error": "internal error: MemoryError: poisoned"}
    for request, (_, body) in zip(requests, answers):
        if request.texts[0] != poison:
            names = [[s["llm"] for s in r["route"]] for r in json.loads(body)["results"]]
            assert names == router.route(request.texts, 2).names


def test_a_failing_group_or_forecast_fails_alone_and_the_requests_after_it_are_answered(
    router: Router, real_texts: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Route requests are grouped by their parameters and routed group by group, forecasts one by one: a fault in
    the first group, or in one forecast, is answered to its own request, and the groups and forecasts after it as
    usual."""
    from jeirt_lite._service import scoring

    poison = real_texts[5]
    poisoned = router.encode([poison]).vectors[0]
    monkeypatch.setattr(scoring, "_route", _failing_on(poisoned, scoring._route))
    monkeypatch.setattr(scoring, "_forecast", _failing_on(poisoned, scoring._forecast))
    requests = [
        RouteRequest([poison], RouteParams(k=2)),
        RouteRequest(real_texts[6:8], RouteParams(k=3)),
        ForecastRequest([poison, real_texts[8]]),
        ForecastRequest(real_texts[8:10]),
    ]
    answers = answer_batch(router, requests)
    assert [status for status, _ in answers] == [500, 200, 500, 200]
    assert json.loads(answers[0][1]) == json.loads(answers[2][1]) == {"error": "internal error: MemoryError: poisoned"}
    names = [[s["llm"] for s in r["route"]] for r in json.loads(answers[1][1])["results"]]
    assert names == router.route(real_texts[6:8], 3).names
    assert json.loads(answers[3][1])["questions"] == 2


def test_a_lone_request_is_not_kept_waiting_for_company() -> None:
    """The wait applies only while requests come in together: one client alone is answered at once."""
    seen: list[list[int]] = []

    def run(jobs: Sequence[int]) -> list[int]:
        seen.append(list(jobs))
        return list(jobs)

    async def scenario() -> float:
        batcher: MicroBatcher[int, int] = MicroBatcher(run, max_wait=30.0, max_batch=8)
        batcher.start()
        began = asyncio.get_running_loop().time()
        for job in range(3):
            await batcher.submit(job, 1)
        took = asyncio.get_running_loop().time() - began
        await batcher.stop()
        return took

    assert asyncio.run(asyncio.wait_for(scenario(), 20)) < 10
    assert seen == [[0], [1], [2]]
