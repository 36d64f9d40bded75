"""Per-LLM costs for `train --costs FILE`, stored in the router for cost-aware routing
(docs/guide/routing-costs.md): a table with an LLM column (the names `train` looks for in a table of answers) and a
`cost` column, read and checked before the training starts, its names checked against the data's LLMs once the
data is read, so that a typo costs no training run."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ._runtime import LLM_COLUMNS
from .data_rows import DataError, named_llms, read_frame

COST_COLUMN = "cost"


def _cost(value: Any) -> float | None:
    """A cost as a float (a number, or a number's text as CSV holds it); None when it is not one, or not finite
    and at least 0."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if not isinstance(value, (int, float)):
        return None
    cost = float(value)
    return cost if math.isfinite(cost) and cost >= 0 else None


def _name(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None
    name = str(value).strip()
    return name or None


def read_costs(path: Path) -> dict[str, float]:
    """{LLM name: cost} from the table at `path` (CSV, TSV, JSONL or Parquet); a bad row stops with its number."""
    frame, _ = read_frame(path)
    columns = list(frame.columns)
    llm_column = next((name for name in LLM_COLUMNS if name in columns), None)
    if llm_column is None or COST_COLUMN not in columns:
        wanted = f"an LLM column (one of {', '.join(LLM_COLUMNS)}) and a {COST_COLUMN!r} column"
        raise DataError(f"{path}: a table of costs needs {wanted} (columns: {', '.join(map(str, columns))})")
    costs: dict[str, float] = {}
    first_row: dict[str, int] = {}
    for row, (raw_name, raw_cost) in enumerate(zip(frame[llm_column], frame[COST_COLUMN]), start=1):
        name, cost = _name(raw_name), _cost(raw_cost)
        if name is None:
            raise DataError(f"{path}: data row {row} has no LLM name in column {llm_column!r} (got {raw_name!r})")
        if cost is None:
            raise DataError(f"{path}: data row {row}: the cost of {name!r} must be a finite number >= 0, "
                            f"got {raw_cost!r}")
        if name in costs:
            raise DataError(f"{path}: data row {row}: {name!r} has a cost already (data row {first_row[name]})")
        costs[name], first_row[name] = cost, row
    if not costs:
        raise DataError(f"{path}: holds no costs")
    return costs


def check_cost_llms(costs: dict[str, float], llm_names: Sequence[str], path: Path) -> None:
    """Refuse costs of LLMs the data does not hold (a typo would otherwise surface after the training)."""
    unknown = [name for name in costs if name not in llm_names]
    if unknown:
        raise DataError(f"{path}: costs of LLMs the data does not hold: {named_llms(unknown)} "
                        f"(its LLMs: {named_llms(llm_names)})")


def cost_summary(costs: dict[str, float], llm_names: Sequence[str]) -> str:
    """The line `train` prints under its summary: how many LLMs have a cost, and which have none."""
    unpriced = [name for name in llm_names if name not in costs]
    left_out = f"; {len(unpriced)} without one, which cost-aware routing leaves out: {named_llms(unpriced)}"
    return f"  costs stored for {len(costs)} of {len(llm_names)} LLMs" + (left_out if unpriced else "")
