"""The shipped router's cost proxy: billions of parameters per LLM, parsed from its name or published for it.

API models whose size is not public get no cost, and cost-aware routing leaves them out (docs/research/routing.md).
A leaf module: the shipped router's build (build_default_router, plain_llm_names) and the routing experiments
share it.
"""

from __future__ import annotations

import re
from typing import Optional

# Published total parameter counts of open models whose names do not carry one.
KNOWN_SIZES_B = {
    "DeepSeek-Coder-V2": 236.0,
    "Phi-3-mini": 3.8,
    "c4ai-command-r-v01": 35.0,
    "jamba-1.5-large": 398.0,
}
_MOE = re.compile(r"(\d+)x(\d+(?:\.\d+)?)b(?![a-z])", re.IGNORECASE)
_SIZE = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)b(?![a-z])", re.IGNORECASE)


def cost_proxy(name: str) -> Optional[float]:
    """Billions of parameters from an LLM name ("Llama-2-70b-hf" → 70, "Mixtral-8x7B" → 56) or KNOWN_SIZES_B;
    None when the size is not public (closed API models: gpt-4o, gemini, the "deepseek-2024-05" API run)."""
    for prefix, size_b in KNOWN_SIZES_B.items():
        if name.startswith(prefix):
            return size_b
    moe = _MOE.search(name)
    if moe:
        return float(moe.group(1)) * float(moe.group(2))
    size = _SIZE.search(name)
    return float(size.group(1)) if size else None


def cost_proxies(names: list[str]) -> dict[str, float]:
    """{name: billions of parameters} for the LLMs whose size is known; the others are left out (no cost)."""
    known = {name: cost_proxy(name) for name in names}
    return {name: cost for name, cost in known.items() if cost is not None}


def has_size(name: str) -> bool:
    """Whether `name` has a cost proxy (a published parameter count: an open-weights model)."""
    return cost_proxy(name) is not None
