"""Per-LLM costs for `train --costs FILE`, stored in the router for cost-aware routing
(docs/guide/routing-costs.md): a table read by the runtime's `read_costs` (route, score and serve read the same
tables) before the training starts, its names checked against the data's LLMs once the data is read, so that a
typo costs no training run."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .data_rows import DataError, named_llms


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
