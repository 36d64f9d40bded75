"""Every value of router.json, including the ones only displayed (training summary, metrics), checked before use.

`_manifest` checks the fields the runtime reads, one by one. This walk covers the rest: a NaN or an infinity
anywhere (JSON has neither, Python's parser accepts both, and a float too large for a double reads as infinity), an
integer beyond 64 bits, nesting deeper than any manifest needs, and the descriptive fields that code formats or
computes with (the metrics' numbers, the training split's sizes) holding the wrong type. Each problem is a
`JeirtError` naming router.json and the field's path, e.g. ``metrics.heldout.auc``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ._errors import JeirtError
from ._limits import MAX_LLMS, MAX_NAME_CHARS
from ._type_names import json_type

MAX_DEPTH = 32
INT_LIMIT = 1 << 63
# Numbers a metrics block holds (training writes them; `info` and the report format them as numbers).
METRIC_NAMES = frozenset({"n", "accuracy", "auc", "log_loss", "brier", "ece"})
# training.split: what the report reads to draw a router's test split again.
SPLIT_FRACTIONS = ("val_fraction", "test_fraction")  # the targets the split was drawn for
SPLIT_SIZES = ("n_train_questions", "n_val_questions", "n_test_questions", "n_train_cells", "n_val_cells",
               "n_test_cells")


def check_values(raw: Mapping[str, Any], where: str) -> None:
    """Refuse a non-finite number, a huge integer or too deep a nesting anywhere, and a wrongly typed metric or
    split size; each error names the field."""
    _walk(raw, "", where, 0)
    metrics = raw.get("metrics")
    if isinstance(metrics, Mapping):
        _check_metrics(metrics, "metrics", where)
    training = raw.get("training")
    split = training.get("split") if isinstance(training, Mapping) else None
    if split is not None:
        _check_split(split, where)


def _walk(value: Any, path: str, where: str, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise JeirtError(f"{where}: field {path} is nested more than {MAX_DEPTH} levels deep")
    if isinstance(value, float) and not math.isfinite(value):
        raise JeirtError(
            f"{where}: field {path} is {value!r} (NaN, Infinity, or a number too large for a float): "
            "router.json holds finite numbers only"
        )
    if isinstance(value, int) and not isinstance(value, bool) and not -INT_LIMIT <= value < INT_LIMIT:
        raise JeirtError(f"{where}: field {path} is an integer of {len(str(value))} digits, beyond 64 bits")
    if isinstance(value, Mapping):
        for key, item in value.items():
            _walk(item, f"{path}.{key}" if path else str(key), where, depth + 1)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _walk(item, f"{path}[{i}]", where, depth + 1)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_metrics(block: Mapping[str, Any], path: str, where: str) -> None:
    """A metric name (auc, log_loss, ...) anywhere under metrics holds a number or null."""
    for key, value in block.items():
        field = f"{path}.{key}"
        if key in METRIC_NAMES and value is not None and not _is_number(value):
            raise JeirtError(f"{where}: field {field} must be a number or null, got {value!r}"[:300])
        if isinstance(value, Mapping):
            _check_metrics(value, field, where)


def _check_split(split: Any, where: str) -> None:
    if not isinstance(split, Mapping):
        raise JeirtError(f"{where}: field training.split must be an object, got {json_type(split)}")
    seed = split.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise JeirtError(f"{where}: field training.split.seed must be an integer, got {seed!r}"[:300])
    for key in SPLIT_SIZES:
        value = split.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            raise JeirtError(f"{where}: field training.split.{key} must be a whole number >= 0, got {value!r}"[:300])
    for key in SPLIT_FRACTIONS:
        share: Any = split.get(key)
        if key in split and not (_is_number(share) and 0 <= share < 1):  # null too: the report draws with it
            raise JeirtError(f"{where}: field training.split.{key} must be a number in [0, 1), got {share!r}"[:300])
    if ("val_fraction" in split) != ("test_fraction" in split):
        raise JeirtError(f"{where}: field training.split records val_fraction or test_fraction without the other")


def check_llm_names(names: Any, where: str) -> tuple[str, ...]:
    """1..MAX_LLMS unique, non-blank names without control characters, as a tuple. Only router.json's llms can be
    other than a list here (the writers and training pass a list), so a wrong type is named in JSON's words."""
    if isinstance(names, (str, bytes)) or not isinstance(names, (list, tuple)):
        raise JeirtError(f"{where}: LLM names must be a list of strings, got {json_type(names)}")
    if not names:
        raise JeirtError(f"{where}: a router needs at least one LLM")
    if len(names) > MAX_LLMS:
        raise JeirtError(f"{where}: {len(names)} LLMs, at most {MAX_LLMS} allowed")
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        check_llm_name(name, f"{where}: LLM name {i}")
        if name in seen:
            raise JeirtError(f"{where}: LLM name {name!r} appears twice (rows {seen[name]} and {i})")
        seen[name] = i
    return tuple(names)


def check_llm_name(name: Any, what: str) -> str:
    """A non-blank string of at most MAX_NAME_CHARS characters, none of them a control character or a lone
    surrogate."""
    if not isinstance(name, str) or not name.strip():
        raise JeirtError(f"{what} must be a non-empty string, got {name!r}")
    if len(name) > MAX_NAME_CHARS:
        raise JeirtError(f"{what} ({name[:40]!r}...) is too long: {len(name):,} characters, at most {MAX_NAME_CHARS:,}")
    control = next((c for c in name if ord(c) < 32 or ord(c) == 127), None)
    if control is not None:  # a tab or line break would break every table and line that names it
        raise JeirtError(f"{what} ({name!r}) holds a control character ({control!r}), which no LLM name may hold")
    lone = next((c for c in name if "\ud800" <= c <= "\udfff"), None)
    if lone is not None:  # router.json's "\udcff": no output file can hold it (`score -o` failed half-way)
        raise JeirtError(f"{what} ({name!r}) holds a lone surrogate ({lone!r}), not a character (a byte that "
                         "is not UTF-8?)")
    return name
