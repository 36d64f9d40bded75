"""Per-LLM costs from a table (`train --costs`, and `route`, `score` and `serve --costs`): an LLM column (the names
a table of answers is read by: `LLM_COLUMNS`) and a `cost` column, any table format. A bad row stops with its
number; a name the router does not hold is the caller's check (`Router.with_costs`)."""

from __future__ import annotations

import decimal
import math
from pathlib import Path
from typing import Any, Optional

from .._errors import JeirtError
from .tables import read_table
from .vocabulary import LLM_COLUMNS, llm_name_problem

COST_COLUMN = "cost"


def _cost(value: Any) -> Optional[float]:
    """A cost as a float (a number, a typed Parquet column's decimal, or a number's text as CSV holds it); None when
    it is not one, or not finite and at least 0."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if not isinstance(value, (int, float, decimal.Decimal)):
        return None
    try:
        cost = float(value)
    except OverflowError:  # a JSONL integer beyond a float's range (1e308): not finite, so not a cost
        return None
    except ValueError:  # a signalling NaN Decimal: not a cost either
        return None
    # + 0.0 makes a cost of -0 (it is >= 0) plain 0: stored as -0.0, `info` would list it as 'cost -0'.
    return cost + 0.0 if math.isfinite(cost) and cost >= 0 else None


def _name(value: Any) -> Optional[str]:
    """The LLM name a cell holds, by the rule every table of answers is read by; None when it holds none."""
    return None if llm_name_problem(value) is not None else str(value).strip()


def _shown(value: Any) -> str:
    """A cell's value as an error shows it: cut to 40 characters, as the readers of answers cut theirs (a cell of
    a megabyte, or a JSONL cost of 400 digits, would otherwise fill the terminal)."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:40]}... ({len(text)} characters)"


def read_costs(path: Path) -> dict[str, float]:
    """{LLM name: cost} from the table at `path` (CSV, TSV, JSONL or Parquet)."""
    table = read_table(path)
    columns = table.columns
    llm_column = next((name for name in LLM_COLUMNS if name in columns), None)
    if llm_column is None or COST_COLUMN not in columns:
        wanted = f"an LLM column (one of {', '.join(LLM_COLUMNS)}) and a {COST_COLUMN!r} column"
        # A header "llm, cost" has the column ' cost': a list of the columns alone would not show the space.
        names = (*LLM_COLUMNS, COST_COLUMN)
        near = [repr(str(c)) for c in columns if c not in names and str(c).strip().lower() in names]
        verb = "differs" if len(near) == 1 else "differ"
        hint = f"; {', '.join(near)} {verb} from those names only in case or spaces" if near else ""
        raise JeirtError(f"{path}: a table of costs needs {wanted} (columns: {', '.join(map(str, columns))}{hint})")
    costs: dict[str, float] = {}
    first_row: dict[str, int] = {}
    for row, raw_name, raw_cost in zip(table.rows, table.values[llm_column], table.values[COST_COLUMN]):
        name, cost = _name(raw_name), _cost(raw_cost)
        if name is None:
            raise JeirtError(f"{path}: data row {row} has no LLM name in column {llm_column!r} (got {_shown(raw_name)})")
        if cost is None:
            raise JeirtError(f"{path}: data row {row}: the cost of {_shown(name)} must be a finite number >= 0, "
                             f"got {_shown(raw_cost)}")
        if name in costs:
            raise JeirtError(f"{path}: data row {row}: {_shown(name)} has a cost already (data row {first_row[name]})")
        costs[name], first_row[name] = cost, row
    if not costs:
        raise JeirtError(f"{path}: holds no costs")
    return costs
