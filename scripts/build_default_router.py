"""Rebuild the router that ships with jeirt-lite: `python -m jeirt_lite_training fit` with a preset, nothing else.

    python -m scripts.build_default_router                          # → python/jeirt_lite/default_router/
    python -m scripts.build_default_router --holdout 0.2 --out DIR  # the same recipe, scored on untouched questions
    python -m scripts.build_default_router --encoder all-MiniLM-L6-v2 --out DIR  # the transformer (93 MB)

The preset: `--data data/mmlu_pro --out python/jeirt_lite/default_router --encoder static`, an existing folder at
--out replaced, and each LLM's cost proxy (billions of parameters parsed from its name, experiments.routing_eval;
LLMs of unknown size get no cost). Everything else is fit's, with fit's defaults, and any fit option given here
overrides the preset: d x dropout chosen on a held-out part, the schedule from the chosen runs, the router refitted
on every question (none kept back unless --holdout), calibrated on the held-out predictions (jeirt_lite_training.choose).
Deterministic for the same data, seeds and thread count.
"""

from __future__ import annotations

import sys

from jeirt_lite_training.__main__ import _set_threads, cmd_fit, fit_parser
from jeirt_lite_training.prepared import STATIC

from scripts.cost_proxies import cost_proxies

from .shipped import DEFAULT_DATA, DEFAULT_OUT

PROG = "python -m scripts.build_default_router"
PRESET = {"data": DEFAULT_DATA, "out": DEFAULT_OUT, "encoder": STATIC}
DESCRIPTION = (
    "Rebuild the router shipped in the package: `python -m jeirt_lite_training fit` with the preset --data data/mmlu_pro "
    "--out python/jeirt_lite/default_router --encoder static, the folder at --out replaced, and each LLM's "
    "parameter-count cost proxy. Every fit option can be given and overrides the preset."
)


def main(argv: list[str] | None = None) -> int:
    parser = fit_parser(PROG, description=DESCRIPTION, epilog=f"example:\n  {PROG} --holdout 0.2 --out DIR",
                        preset=PRESET)
    args = parser.parse_args(argv)
    _set_threads(args)
    try:
        return cmd_fit(args, overwrite=True, costs=cost_proxies)
    except ValueError as error:  # a bad data file, option or output path (JeirtError, DataError): named, no traceback
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
