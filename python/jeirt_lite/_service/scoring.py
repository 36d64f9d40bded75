"""What the worker thread runs: one micro-batch of checked requests through the router, each answer split back.

The texts of every request in the batch are encoded in one call; requests that route alike (same k, llms and
rule) are then routed in one call, and each forecast takes the mean over its own rows. Every answer is the JSON
body its request gets, with its HTTP status. The requests were checked before they joined the batch
(`requests.py`), so nothing here should fail; if something still does, the batch is retried one request at a
time, so that only the request that fails gets the error.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Optional, Union

import numpy as np

from .._errors import JeirtError
from .._questions import EncodedQuestions
from ..cli.route import route_record
from .requests import ForecastRequest, RouteParams, RouteRequest

if TYPE_CHECKING:
    from .._router import Router

Request = Union[RouteRequest, ForecastRequest]
Answer = tuple[int, bytes]  # HTTP status, JSON body

LOG = logging.getLogger("jeirt_lite.serve")


def error_body(message: str) -> bytes:
    return json.dumps({"error": message}, ensure_ascii=False).encode("utf-8")


def answer_batch(router: Router, requests: Sequence[Request]) -> list[Answer]:
    """One answer per request, in order; a request the router cannot answer gets its own error."""
    try:
        encoded = router.encode([text for request in requests for text in request.texts])
    except Exception as error:
        return _one_by_one(router, requests, error)
    ends = np.cumsum([len(request.texts) for request in requests])
    spans = [slice(int(end) - len(request.texts), int(end)) for end, request in zip(ends, requests)]
    answers: list[Optional[Answer]] = [None] * len(requests)
    alike: dict[RouteParams, list[int]] = {}
    for i, request in enumerate(requests):
        if isinstance(request, RouteRequest):
            alike.setdefault(request.params, []).append(i)
        else:
            answers[i] = _guarded(lambda i=i, groups=request.groups: _forecast(router, groups, encoded.rows(spans[i])))
    for params, members in alike.items():
        rows = np.concatenate([np.arange(spans[i].start, spans[i].stop) for i in members])
        try:
            results = _route(router, params, encoded.rows(rows))
        except Exception as error:
            for i, answer in zip(members, _one_by_one(router, [requests[i] for i in members], error)):
                answers[i] = answer
            continue
        start = 0
        for i in members:
            count = len(requests[i].texts)
            answers[i] = (200, _json({"results": results[start : start + count]}))
            start += count
    return [answer for answer in answers if answer is not None]


def _one_by_one(router: Router, requests: Sequence[Request], error: Exception) -> list[Answer]:
    if len(requests) == 1:
        return [failure_answer(error)]
    return [answer_batch(router, [request])[0] for request in requests]


def _route(router: Router, params: RouteParams, questions: EncodedQuestions) -> list[Any]:
    result = router.route(
        questions,
        params.k,
        cost_weight=params.cost_weight,
        min_probability=params.min_probability,
        llms=params.llms,
    )
    difficulty = router.difficulty(questions).tolist()
    names = router.llms
    indices, probabilities = result.indices.tolist(), result.probabilities.tolist()
    fallback = [None] * len(indices) if result.fallback is None else result.fallback.tolist()
    return [
        route_record([(names[j], p) for j, p in zip(row, ps)], d, f)
        for row, ps, d, f in zip(indices, probabilities, difficulty, fallback)
    ]


def _forecast(router: Router, groups: Optional[list[str]], questions: EncodedQuestions) -> Answer:
    """The forecast of the request's questions and, with `groups`, of each group's, in the same shape."""
    body: dict[str, Any] = _forecast_body(router.forecast(questions), len(questions.vectors))
    if groups is not None:
        counts = Counter(groups)
        body["groups"] = {group: _forecast_body(forecast, counts[group])
                          for group, forecast in router.forecast_by(questions, groups).items()}
    return 200, _json(body)


def _forecast_body(forecast: dict[str, float], questions: int) -> dict[str, Any]:
    return {"forecast": {name: round(p, 6) for name, p in forecast.items()}, "questions": questions}


def _guarded(answer: Any) -> Answer:
    try:
        result: Answer = answer()
    except Exception as error:
        return failure_answer(error)
    return result


def failure_answer(error: Exception) -> Answer:
    """A request's answer to `error`: 400 with its words for a JeirtError, else 500 (logged with its traceback)."""
    if isinstance(error, JeirtError):
        return 400, error_body(str(error))
    LOG.exception("jeirt-lite serve: a request failed inside the router", exc_info=error)
    return 500, error_body(f"internal error: {type(error).__name__}: {error}")


def _json(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
