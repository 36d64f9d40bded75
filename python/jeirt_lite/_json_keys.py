"""JSON objects that name a key twice: Python's json keeps the last value without a word, so every reader of JSON
here (router.json, a JSONL row, a request body) refuses them instead, each in its own words."""

from __future__ import annotations

from typing import Any


class RepeatedKey(Exception):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An `object_pairs_hook`: the object as a dict, or `RepeatedKey` naming the first key given twice."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise RepeatedKey(key)
        out[key] = value
    return out
