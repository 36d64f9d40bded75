"""`jeirt-lite serve`: every endpoint, and every kind of bad request, against the real service in a subprocess.

One service (the shipped router, small limits so they are easy to exceed) serves the whole module; after every bad
request the same service must still answer a good one.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import re
from collections.abc import Iterator
from typing import Any, Optional

import numpy as np
import pytest

pytest.importorskip("aiohttp")

from aiohttp import web
from aiohttp.test_utils import make_mocked_request
from jeirt_lite import JeirtError, Router
from jeirt_lite._service.app import Limits, json_errors, listening_socket
from jeirt_lite._service.app import Service as ServiceApp
from jeirt_lite._service.requests import (
    RouteParams,
    RouteRequest,
    forecast_request,
    parse_body,
    route_request,
)
from service_process import Service, running_service

MAX_BODY = 4096
MAX_TEXTS = 4
pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def service() -> Iterator[Service]:
    with running_service("--threads", "1", "--max-body-bytes", str(MAX_BODY), "--max-texts", str(MAX_TEXTS)) as s:
        yield s


@pytest.fixture(scope="module")
def router() -> Router:
    return Router.load(threads=1)


def call(
    service: Service, method: str, path: str, body: Optional[bytes] = None, headers: Optional[dict[str, str]] = None
) -> tuple[int, Any]:
    connection = http.client.HTTPConnection("127.0.0.1", service.port, timeout=60)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        assert response.getheader("Content-Type", "").startswith("application/json"), response.getheaders()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def post(service: Service, path: str, value: Any) -> tuple[int, Any]:
    return call(service, "POST", path, json.dumps(value).encode("utf-8"), {"Content-Type": "application/json"})


def assert_same_route(answer: dict[str, Any], expected: Any, difficulty: np.ndarray) -> None:
    """One /v1/route answer against Router.route: the same LLMs in the same order, P and difficulty to 1e-6."""
    assert len(answer["results"]) == len(expected)
    for i, result in enumerate(answer["results"]):
        assert [step["llm"] for step in result["route"]] == [name for name, _ in expected[i]]
        assert np.allclose([step["p"] for step in result["route"]], [p for _, p in expected[i]], rtol=0, atol=1e-6)
        assert abs(result["difficulty"] - float(difficulty[i])) <= 1e-6


def test_healthz_and_info(service: Service, router: Router) -> None:
    status, body = call(service, "GET", "/healthz")
    assert (status, body["status"]) == (200, "ok")
    status, info = call(service, "GET", "/v1/info")
    assert status == 200
    assert info["llms"] == list(router.llms)
    assert info["costs"] == router.costs
    assert info["dim"] == router.dim
    assert info["encoder"]["name"] == router.manifest.encoder.name
    assert info["service"]["limits"]["max_texts"] == MAX_TEXTS


@pytest.mark.parametrize(
    "options",
    [{"k": 3}, {"k": 2, "llms": ["Yi-6B", "gemma-7b", "Qwen1.5-110B"]}, {"k": 2, "cost_weight": 0.002},
     {"k": 1, "min_probability": 0.6}, {}],
    ids=["k3", "llms", "cost_weight", "min_probability", "defaults"],
)
def test_route_equals_router_route(service: Service, router: Router, real_texts: list[str],
                                   options: dict[str, Any]) -> None:
    texts = real_texts[:MAX_TEXTS]
    status, answer = post(service, "/v1/route", {"texts": texts, **options})
    assert status == 200, answer
    expected = router.route(texts, **options)
    assert_same_route(answer, expected, router.difficulty(texts))
    if "min_probability" in options:
        assert [r["fallback"] for r in answer["results"]] == expected.fallback.tolist()
    else:
        assert all("fallback" not in r for r in answer["results"])


def test_forecast_equals_router_forecast(service: Service, router: Router, real_texts: list[str]) -> None:
    texts = real_texts[10 : 10 + MAX_TEXTS]
    status, answer = post(service, "/v1/forecast", {"texts": texts})
    assert status == 200, answer
    expected = router.forecast(texts)
    assert list(answer["forecast"]) == list(expected)
    assert np.allclose(list(answer["forecast"].values()), list(expected.values()), rtol=0, atol=1e-6)
    assert answer["questions"] == len(texts)


def test_forecast_with_groups_answers_each_group_as_the_whole(
    service: Service, router: Router, real_texts: list[str]
) -> None:
    texts = real_texts[10 : 10 + MAX_TEXTS]
    groups: list[object] = ["law" if i % 3 else 7 for i in range(len(texts))]  # 7 is read as the text "7"
    status, answer = post(service, "/v1/forecast", {"texts": texts, "groups": groups})
    assert status == 200, answer
    expected = router.forecast_by(texts, [str(group) for group in groups])
    assert list(answer["groups"]) == ["7", "law"] == list(expected)
    for group, body in answer["groups"].items():
        assert body["questions"] == sum(str(g) == group for g in groups)
        assert list(body["forecast"]) == list(router.llms)
        assert np.allclose(list(body["forecast"].values()), list(expected[group].values()), rtol=0, atol=1e-6)
    assert answer["questions"] == len(texts) and "forecast" in answer


NESTED = b'{"texts": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"

# (name, method, path, body, status, words the error must hold)
BAD_REQUESTS = [
    ("malformed JSON", "POST", "/v1/route", b'{"texts": ["a"', 400, "not valid JSON"),
    ("not UTF-8", "POST", "/v1/route", '{"texts": ["café"]}'.encode("latin-1"), 400, "not valid UTF-8"),
    ("UTF-16", "POST", "/v1/route", '{"texts": ["a"]}'.encode("utf-16"), 400, "not valid UTF-8"),
    ("empty body", "POST", "/v1/route", b"", 400, "body is empty"),
    ("NaN", "POST", "/v1/route", b'{"texts": ["a"], "cost_weight": NaN}', 400, "NaN is not a JSON number"),
    ("key twice", "POST", "/v1/route", b'{"texts": ["a"], "k": 1, "k": 2}', 400, "names 'k' twice"),
    ("array body", "POST", "/v1/route", b'["a"]', 400, "must be a JSON object, not an array"),
    ("no texts", "POST", "/v1/route", b'{"k": 1}', 400, 'has no "texts"'),
    ("texts a string", "POST", "/v1/route", b'{"texts": "a"}', 400, "not a single string"),
    # A value's type is named in JSON's words (an object, null, a number), not Python's (a dict, None, an int).
    ("texts an object", "POST", "/v1/route", b'{"texts": {"a": 1}}', 400,
     "texts must be a list of strings, not an object"),
    ("texts null", "POST", "/v1/forecast", b'{"texts": null}', 400, "texts must be a list of strings, not null"),
    ("text a number", "POST", "/v1/route", b'{"texts": ["a", 7]}', 400, "texts[1]: text is a number, not a string"),
    ("text an array", "POST", "/v1/route", b'{"texts": [["a"]]}', 400, "texts[0]: text is an array, not a string"),
    ("text null", "POST", "/v1/route", b'{"texts": [null]}', 400, "texts[0]: has no text"),
    ("empty texts", "POST", "/v1/route", b'{"texts": []}', 400, "texts is empty"),
    ("blank text", "POST", "/v1/route", b'{"texts": ["a", "  "]}', 400, "texts[1]: text is empty"),
    ("NUL in text", "POST", "/v1/route", b'{"texts": ["a\\u0000b"]}', 400, "NUL character"),
    ("lone surrogate", "POST", "/v1/route", b'{"texts": ["\\ud800"]}', 400, "not valid UTF-8"),
    ("k a string", "POST", "/v1/route", b'{"texts": ["a"], "k": "3"}', 400, "k must be a whole number"),
    ("k a boolean", "POST", "/v1/route", b'{"texts": ["a"], "k": true}', 400, "k must be a whole number"),
    ("k a fraction", "POST", "/v1/route", b'{"texts": ["a"], "k": 2.5}', 400, "k must be a whole number, not 2.5"),
    ("k a float", "POST", "/v1/route", b'{"texts": ["a"], "k": 2.0}', 400, "k must be a whole number, not 2.0"),
    ("k zero", "POST", "/v1/route", b'{"texts": ["a"], "k": 0}', 400, "k: must be at least 1, got 0"),
    ("k too large", "POST", "/v1/route", b'{"texts": ["a"], "k": 33}', 400, "k must be between 1 and the 32 LLMs routed among (the router's LLMs), got 33"),
    ("k over llms", "POST", "/v1/route", b'{"texts": ["a"], "k": 2, "llms": ["Yi-6B"]}', 400,
     "k must be between 1 and the 1 LLM routed among (the given LLMs), got 2"),
    ("unknown LLM", "POST", "/v1/route", b'{"texts": ["a"], "llms": ["gpt-9"]}', 400, "unknown LLM 'gpt-9'"),
    ("LLM twice", "POST", "/v1/route", b'{"texts": ["a"], "llms": ["Yi-6B", "Yi-6B"]}', 400, "names an LLM twice"),
    ("llms a string", "POST", "/v1/route", b'{"texts": ["a"], "llms": "Yi-6B"}', 400, "not one string"),
    ("llms empty", "POST", "/v1/route", b'{"texts": ["a"], "llms": []}', 400, "at least one LLM"),
    ("unpriced LLM", "POST", "/v1/route", b'{"texts": ["a"], "cost_weight": 1, "llms": ["gemini-3.1-pro"]}', 400,
     "needs a cost for every LLM; missing: gemini-3.1-pro"),
    ("negative weight", "POST", "/v1/route", b'{"texts": ["a"], "cost_weight": -1}', 400,
     "cost_weight: must be a finite number in [0, inf)"),
    ("huge weight", "POST", "/v1/route", b'{"texts": ["a"], "cost_weight": 1e400}', 400, "cost_weight: must be"),
    ("weight a string", "POST", "/v1/route", b'{"texts": ["a"], "cost_weight": "1"}', 400, "must be a number"),
    ("probability above 1", "POST", "/v1/route", b'{"texts": ["a"], "min_probability": 1.5}', 400,
     "min_probability: must be a finite number in [0, 1]"),
    ("both rules", "POST", "/v1/route", b'{"texts": ["a"], "min_probability": 0.5, "cost_weight": 1}', 400,
     "not both"),
    ("unknown field", "POST", "/v1/route", b'{"texts": ["a"], "top_k": 2}', 400, "unknown field 'top_k'"),
    ("forecast field", "POST", "/v1/forecast", b'{"texts": ["a"], "k": 2}', 400, "unknown field 'k'"),
    ("groups a string", "POST", "/v1/forecast", b'{"texts": ["a"], "groups": "law"}', 400,
     "groups must be a list of one group per question, not a string"),
    ("groups an object", "POST", "/v1/forecast", b'{"texts": ["a"], "groups": {"a": "law"}}', 400,
     "groups must be a list of one group per question, not an object"),
    ("groups too few", "POST", "/v1/forecast", b'{"texts": ["a", "b"], "groups": ["law"]}', 400,
     "groups holds 1 value for 2 questions: give one group per question"),
    ("group null", "POST", "/v1/forecast", b'{"texts": ["a", "b"], "groups": ["law", null]}', 400,
     "groups[1]: has no group value"),
    ("group blank", "POST", "/v1/forecast", b'{"texts": ["a"], "groups": [" "]}', 400, "groups[0]: group value is empty"),
    ("group a float", "POST", "/v1/forecast", b'{"texts": ["a"], "groups": [1.5]}', 400,
     "groups[0]: group value '1.5' is a number, not a string or an integer"),
    ("too many texts", "POST", "/v1/route", json.dumps({"texts": ["a"] * (MAX_TEXTS + 1)}).encode(), 413,
     f"limit of {MAX_TEXTS} per request"),
    ("oversized body", "POST", "/v1/route", json.dumps({"texts": ["a" * MAX_BODY]}).encode(), 413,
     f"limit of {MAX_BODY:,} bytes"),
    ("deeply nested", "POST", "/v1/forecast", NESTED[:MAX_BODY - 2] + b"]}", 400, "nested too deeply"),
    ("wrong method", "GET", "/v1/route", None, 405, "GET is not allowed on /v1/route; use POST"),
    ("post to info", "POST", "/v1/info", b"{}", 405, "use GET"),
    ("unknown path", "GET", "/v2/route", None, 404, "no endpoint /v2/route"),
]


@pytest.mark.parametrize("name, method, path, body, status, words", BAD_REQUESTS, ids=[b[0] for b in BAD_REQUESTS])
def test_bad_request_gets_a_json_error_and_the_service_keeps_serving(
    service: Service, name: str, method: str, path: str, body: Optional[bytes], status: int, words: str
) -> None:
    got, answer = call(service, method, path, body, {"Content-Type": "application/json"} if body else None)
    assert got == status, answer
    assert set(answer) == {"error"} and words in answer["error"], answer["error"]
    again, good = post(service, "/v1/route", {"texts": ["What is 2 + 2?"], "k": 2})
    assert again == 200 and len(good["results"][0]["route"]) == 2


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"texts": ["a"], "cost_weight": NaN}', "the request body is not valid JSON: NaN is not a JSON number"),
        (b'{"k": -Infinity}', "the request body is not valid JSON: -Infinity is not a JSON number"),
        (b'{"texts": ["a"], "k": 1, "k": 2}', "the request body names 'k' twice"),
        (b'{"texts": ["a"', "the request body is not valid JSON: Expecting ',' delimiter (line 1, column 15)"),
        (b'{"k": ' + b"9" * 5000 + b"}", "the request body holds an integer too long to read (over 4,300 digits)"),
    ],
)
def test_a_body_that_is_not_strict_json_is_refused_in_one_sentence(body: bytes, message: str) -> None:
    with pytest.raises(JeirtError) as refused:
        parse_body(body)
    assert str(refused.value) == message


def test_a_route_request_is_read_with_the_defaults_and_nulls_as_not_given(router: Router) -> None:
    plain = route_request({"texts": ["a"]}, router, MAX_TEXTS)
    assert plain == RouteRequest(["a"], RouteParams(k=1, llms=None, cost_weight=0.0, min_probability=None))
    nulls = {"texts": ["a"], "k": None, "llms": None, "cost_weight": None, "min_probability": 0.5}
    assert route_request(nulls, router, MAX_TEXTS).params == RouteParams(min_probability=0.5)
    zero = {"texts": ["a"], "cost_weight": 0, "min_probability": 0.5}  # no trade-off, as Router.route reads 0
    assert route_request(zero, router, MAX_TEXTS).params == RouteParams(min_probability=0.5)
    # k may be as large as the LLMs it chooses among: all of them, or all that have a cost
    assert route_request({"texts": ["a"], "k": 32}, router, MAX_TEXTS).params.k == 32
    assert route_request({"texts": ["a"], "k": 27, "cost_weight": 0.1}, router, MAX_TEXTS).params.k == 27


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        # A list with a name that is not a string: it said "not a list" of the list it was given.
        ({"llms": ["Yi-6B", 3]}, "llms[1]: an LLM name is a string, not a number"),
        ({"llms": [None]}, "llms[0]: an LLM name is a string, not null"),
        ({"llms": {"Yi-6B": 1}}, "llms must be a list of LLM names, not an object"),
        ({"top_k": 2, "topk": 3}, "unknown field 'top_k'; a route request takes texts, k, llms, cost_weight, "
                                  "min_probability"),
    ],
)
def test_a_route_request_names_what_is_wrong_with_it(router: Router, fields: dict[str, Any], message: str) -> None:
    with pytest.raises(JeirtError) as refused:
        route_request({"texts": ["a"], **fields}, router, MAX_TEXTS)
    assert str(refused.value) == message


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"cost_weight": 1e308}, "cost_weight 1e+308 times the costs overflows; use a smaller weight or unit"),
        ({"cost_weight": 1, "llms": ["gemini-3.1-pro"]}, "needs a cost for every LLM; missing: gemini-3.1-pro"),
        ({"min_probability": 0.5, "llms": ["Yi-6B", "gpt-4o-2024-05-13"]}, "missing: gpt-4o-2024-05-13"),
        ({"cost_weight": 0.1, "k": 28}, "k must be between 1 and the 27 LLMs routed among (the priced LLMs), got 28"),
        ({"min_probability": 0.5, "k": 28}, "k must be between 1 and the 27 LLMs routed among (the priced LLMs), got 28"),
    ],
)
def test_a_cost_aware_request_is_checked_before_it_joins_a_batch(
    router: Router, fields: dict[str, Any], message: str
) -> None:
    """Found while the request is read, so a batch never holds a request the router would refuse."""
    with pytest.raises(JeirtError, match=re.escape(message)):
        route_request({"texts": ["a"], **fields}, router, MAX_TEXTS)


# Bad groups, with the type each path names where the fault is a value's type: Python's to a caller of
# Router.forecast_by, JSON's to a client of the service; the sentence is otherwise the same (one check).
BAD_GROUPS = [
    (["law"], None),
    (["law", "law", "law"], None),
    (["law", None], None),
    (["law", " "], None),
    (["law", "a\x00b"], None),
    ("ab", ("a str", "a string")),
    ({"a": "law"}, ("a dict", "an object")),
    (["law", 1.5], ("a float", "a number")),
    (["law", True], ("a bool", "a boolean")),
    (["law", ["x"]], ("a list", "an array")),
]


@pytest.mark.parametrize(("groups", "types"), BAD_GROUPS)
def test_a_forecast_request_refuses_bad_groups_in_router_forecast_by_s_words(
    router: Router, groups: Any, types: Optional[tuple[str, str]]
) -> None:
    texts = ["What is 2 + 2?", "Who wrote Hamlet?"]
    with pytest.raises(JeirtError) as python:
        router.forecast_by(texts, groups)
    with pytest.raises(JeirtError) as service:
        forecast_request({"texts": texts, "groups": groups}, MAX_TEXTS)
    said = str(python.value)
    if types is not None:
        assert said.count(types[0]) == 1, said
        said = said.replace(types[0], types[1])
    assert str(service.value) == said


def test_nesting_deeper_than_the_stack_is_refused(service: Service) -> None:
    """A body within the size limit can still nest deeper than Python's parser recurses."""
    assert MAX_BODY < 10_000 < len(NESTED)
    with running_service("--threads", "1", "--max-body-bytes", str(len(NESTED) + 10)) as big:
        got, answer = call(big, "POST", "/v1/route", NESTED, {"Content-Type": "application/json"})
        assert (got, answer) == (400, {"error": "the request body is JSON nested too deeply"})
        assert post(big, "/v1/route", {"texts": ["What is 2 + 2?"]})[0] == 200


def test_chunked_body_over_the_limit_is_refused(service: Service) -> None:
    """No Content-Length to check first: aiohttp stops reading at the limit and the service says so."""
    connection = http.client.HTTPConnection("127.0.0.1", service.port, timeout=60)
    try:
        chunks = iter([b'{"texts": ["', b"a" * MAX_BODY, b'"]}'])
        connection.request("POST", "/v1/route", body=chunks, encode_chunked=True,
                           headers={"Transfer-Encoding": "chunked", "Content-Type": "application/json"})
        response = connection.getresponse()
        assert response.status == 413
        assert "limit of 4,096 bytes" in json.loads(response.read())["error"]
    finally:
        connection.close()
    assert post(service, "/v1/route", {"texts": ["What is 2 + 2?"]})[0] == 200


def test_head_is_not_served_on_the_get_endpoints(service: Service) -> None:
    """Only what ENDPOINTS lists is served: HEAD gets 405 with the methods that are allowed."""
    for path in ("/healthz", "/v1/info"):
        connection = http.client.HTTPConnection("127.0.0.1", service.port, timeout=60)
        try:
            connection.request("HEAD", path)
            response = connection.getresponse()
            assert (response.status, response.getheader("Allow")) == (405, "GET")
            assert response.getheader("Content-Type", "").startswith("application/json")
        finally:
            connection.close()


@pytest.mark.parametrize(
    ("raised", "status", "error"),
    [(web.HTTPBadRequest(reason="a bad header"), 400, "a bad header"),
     (web.HTTPRequestTimeout(), 408, "Request Timeout"),
     (web.HTTPServiceUnavailable(reason="busy"), 503, "busy")],
)
def test_aiohttp_s_own_errors_are_answered_as_json(raised: web.HTTPException, status: int, error: str) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        raise raised

    response = asyncio.run(json_errors(make_mocked_request("GET", "/v1/info"), handler))  # type: ignore[arg-type]
    assert (response.status, response.content_type) == (status, "application/json")
    assert json.loads(response.body) == {"error": error}  # type: ignore[attr-defined]


def test_a_redirect_or_success_from_aiohttp_passes_through() -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        raise web.HTTPFound("/healthz")

    with pytest.raises(web.HTTPFound):
        asyncio.run(json_errors(make_mocked_request("GET", "/"), handler))  # type: ignore[arg-type]


def test_the_service_waits_max_wait_ms_milliseconds_for_company(router: Router) -> None:
    service = ServiceApp(router, Limits(max_body_bytes=MAX_BODY, max_texts=MAX_TEXTS, max_wait_ms=250, max_batch=8))
    assert service.batcher._max_wait == 0.25


def test_an_address_that_cannot_be_resolved_is_a_clear_error() -> None:
    """A port outside 0..65535 is refused by the resolver itself, without asking a name server."""
    with pytest.raises(JeirtError, match=r"^cannot listen on 127\.0\.0\.1:-1: "):
        listening_socket("127.0.0.1", -1)


def test_serve_notes_at_start_the_llms_that_never_answered_a_benchmark_in_training(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Any
) -> None:
    # As route and score do: such an LLM's P(correct) on that benchmark's questions is an extrapolation.
    from jeirt_lite._manifest import freeze, thaw
    from jeirt_lite._service import app
    from jeirt_lite.cli import main

    router = Router.load()
    training = {**thaw(router.manifest.training), "unanswered_benchmarks": {"Yi-34B": ["gsm"]}}
    folder = router._with_llms(router.llms, router.llm_vectors, training=freeze(training)).save(tmp_path / "r")
    started: list[Router] = []
    monkeypatch.setattr(app, "serve", lambda served, limits, sock, announce: started.append(served))
    assert main(["serve", "--router", str(folder), "--port", "0", "--threads", "1"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(started) == 1 and err[0].startswith("note: 1 LLM routed among never answered a benchmark in training")
    assert err[0].endswith(": Yi-34B (gsm)") and err[-1] == "jeirt-lite serve: stopped"
