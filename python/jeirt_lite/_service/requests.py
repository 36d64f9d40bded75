"""The service's request bodies: JSON bytes in, checked requests out, or a JeirtError in the command line's words.

Everything a request can get wrong is found here, per request, before it joins a micro-batch: a batch then holds
only requests the router can answer, so one client's mistake never fails another client's answer. The checks
reuse the command line's (its argument types, `text_problem`, the router's own LLM-name and cost checks), so a
service user and a command-line user read the same sentence for the same mistake; only the option's spelling
differs (the JSON field `k` where the command line says `--k`), and a value's type is named in JSON's words (an
array, a number: `json_type`), never Python's.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Optional

from .._errors import JeirtError
from .._group_forecast import checked_groups
from .._io.vocabulary import SINGLE_STRING_TEXTS, text_problem
from .._json_keys import RepeatedKey, unique_keys
from .._routing import routing_rows, subset_rows
from .._type_names import json_type
from ..cli._shared import number_in, positive_int

if TYPE_CHECKING:
    from .._router import Router

ROUTE_FIELDS = ("texts", "k", "llms", "cost_weight", "min_probability")
FORECAST_FIELDS = ("texts", "groups")


class TooLarge(JeirtError):
    """A request over one of the service's limits (answered 413, not 400)."""


@dataclass(frozen=True)
class RouteParams:
    """How to route: what `Router.route` takes besides the texts (hashable: requests alike are routed together)."""

    k: int = 1
    llms: Optional[tuple[str, ...]] = None
    cost_weight: float = 0.0
    min_probability: Optional[float] = None


@dataclass(frozen=True)
class RouteRequest:
    texts: list[str]
    params: RouteParams


@dataclass(frozen=True)
class ForecastRequest:
    texts: list[str]
    groups: Optional[list[str]] = None  # each text's group, as text: the forecast per group too


def parse_body(body: bytes) -> dict[str, Any]:
    """The request body as a JSON object; JSON that is not strict JSON (NaN, Infinity, a key given twice) is
    refused too, as is anything nested so deeply that parsing it would exhaust the stack."""
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise JeirtError(f"the request body is not valid UTF-8 (byte {error.start})") from None
    if not text.strip():
        raise JeirtError('the request body is empty; send a JSON object such as {"texts": ["What is 2 + 2?"]}')
    try:
        value = json.loads(text, parse_constant=_no_constant, object_pairs_hook=unique_keys)
    except JeirtError:  # the hook's own refusal, already in full words (a JeirtError is also a ValueError)
        raise
    except RepeatedKey as twice:
        raise JeirtError(f"the request body names {twice.key!r} twice") from None
    except RecursionError:
        raise JeirtError("the request body is JSON nested too deeply") from None
    except json.JSONDecodeError as error:
        raise JeirtError(
            f"the request body is not valid JSON: {error.msg} (line {error.lineno}, column {error.colno})"
        ) from None
    except ValueError:  # an integer of more digits than Python converts (its message advises a Python setting)
        raise JeirtError("the request body holds an integer too long to read (over 4,300 digits)") from None
    if not isinstance(value, dict):
        raise JeirtError(f"the request body must be a JSON object, not {json_type(value)}")
    return value


def route_request(value: dict[str, Any], router: Router, max_texts: int) -> RouteRequest:
    """A checked /v1/route request; an optional field given as null counts as not given."""
    _known_fields(value, ROUTE_FIELDS, "a route request")
    texts = _texts(value, max_texts)
    given = {key: item for key, item in value.items() if item is not None}
    k = _argument(given.get("k", 1), "k", positive_int, int)
    llms = _llm_names(given.get("llms"))
    if llms is not None:
        subset_rows(router.llms, llms)  # unknown, repeated or no names: the router's own check and words
    cost_weight = _argument(given.get("cost_weight", 0.0), "cost_weight", number_in(0.0, math.inf), float)
    min_probability = None
    if "min_probability" in given:
        if cost_weight != 0:  # a weight of 0 is no trade-off, as Router.route and --cost-weight 0 read it
            raise JeirtError("use either cost_weight (trade-off) or min_probability (cheapest above it), not both")
        min_probability = _argument(given["min_probability"], "min_probability", number_in(0.0, 1.0), float)
    params = RouteParams(k=k, llms=llms, cost_weight=cost_weight, min_probability=min_probability)
    # The rows the rule chooses among, checked as Router.route, route and score check them (their words too).
    routing_rows(router.llms, k, cost_weight, min_probability, llms, router.costs)
    return RouteRequest(texts, params)


def forecast_request(value: dict[str, Any], max_texts: int) -> ForecastRequest:
    """A checked /v1/forecast request."""
    _known_fields(value, FORECAST_FIELDS, "a forecast request")
    texts = _texts(value, max_texts)
    return ForecastRequest(texts, _groups(value.get("groups"), len(texts)))


def _groups(value: Any, count: int) -> Optional[list[str]]:
    """One group per text (a string, or an integer read as text), checked by `Router.forecast_by`'s own check, in
    its words; null: no groups."""
    return None if value is None else checked_groups(value, count, json_type)


def _texts(value: dict[str, Any], max_texts: int) -> list[str]:
    if "texts" not in value:
        raise JeirtError('the request has no "texts": give a list of question texts')
    texts = value["texts"]
    if isinstance(texts, str):
        raise JeirtError(SINGLE_STRING_TEXTS)
    if not isinstance(texts, list):
        raise JeirtError(f"texts must be a list of strings, not {json_type(texts)}")
    if not texts:
        raise JeirtError("texts is empty: give at least one question text")
    if len(texts) > max_texts:
        raise TooLarge(
            f"texts holds {len(texts):,} questions, more than this service's limit of {max_texts:,} per request "
            "(serve --max-texts)"
        )
    for i, text in enumerate(texts):
        problem = text_problem(text, json_type)
        if problem is not None:
            raise JeirtError(f"texts[{i}]: {problem}")
    return texts


def _llm_names(value: Any) -> Optional[tuple[str, ...]]:
    if value is None:
        return None
    if isinstance(value, str):
        raise JeirtError("llms must be a list of LLM names, not one string")
    if not isinstance(value, list):
        raise JeirtError(f"llms must be a list of LLM names, not {json_type(value)}")
    for i, name in enumerate(value):
        if not isinstance(name, str):
            raise JeirtError(f"llms[{i}]: an LLM name is a string, not {json_type(name)}")
    return tuple(value)


def _argument(value: Any, field: str, parse: Callable[[str], Any], kind: type) -> Any:
    """`value` through the command line's argument type for the same option, so the range and its message are
    the command line's; JSON's own types are checked first (true is not 1, 2.0 is not the integer 2)."""
    if isinstance(value, bool) or not isinstance(value, (int, float) if kind is float else int):
        wanted = "a number" if kind is float else "a whole number"
        given = repr(value) if isinstance(value, float) else json_type(value)  # "not 2.0", where "not a number" misleads
        raise JeirtError(f"{field} must be {wanted}, not {given}")
    try:
        return parse(repr(value))
    except argparse.ArgumentTypeError as error:
        raise JeirtError(f"{field}: {error}") from None


def _known_fields(value: dict[str, Any], fields: Sequence[str], what: str) -> None:
    unknown = [key for key in value if key not in fields]
    if unknown:
        raise JeirtError(f"unknown field {unknown[0]!r}; {what} takes {', '.join(fields)}")


def _no_constant(name: str) -> Any:
    raise JeirtError(f"the request body is not valid JSON: {name} is not a JSON number")
