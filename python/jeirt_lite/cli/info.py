"""`jeirt-lite info`: what a router holds (LLMs, d, encoder, training data and metrics)."""

from __future__ import annotations

import argparse
import json
import textwrap
from collections.abc import Iterator
from typing import Any

from .._llm_params import GLOBAL
from ._shared import (
    PROG,
    Console,
    add_command,
    chosen_router,
    load_router,
    short,
    unanswered_benchmarks,
)
from .add_llm import fit_summary


def add_parser(subparsers: Any) -> None:
    info = add_command(
        subparsers,
        "info",
        positional_router=True,
        help="what a router holds: LLMs, d, encoder, training data and metrics",
        epilog=f"examples:\n  {PROG} info\n  {PROG} info --json",
    )
    info.add_argument("--json", action="store_true", help="print the router's manifest (router.json) as JSON")


def _flatten(value: Any, prefix: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _flatten(item, f"{prefix}.{key}" if prefix else str(key))
    else:
        if prefix.rsplit(".", 1)[-1] == "n" and isinstance(value, float) and value.is_integer():
            value = int(value)  # a count, stored as a number of JSON
        text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value
        yield prefix, short(text, 160)


def run(args: argparse.Namespace, console: Console) -> int:
    out = console.out
    router = load_router(chosen_router(args), args.threads)
    manifest = dict(router.manifest)
    if args.json:
        out.write(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
        return 0
    encoder = manifest.get("encoder", {})
    lines = [
        ("router", str(router.path)),
        ("label", str(manifest.get("label") or "-")),
        (
            "format",
            (
                f"{manifest.get('format')} v{manifest.get('format_version')} "
                f"(written by jeirt-lite {manifest.get('package_version', '?')})"
            ),
        ),
        ("dimension", f"d = {router.dim}"),
        (
            "encoder",
            f"{encoder.get('name')} (max {encoder.get('max_seq_length')} tokens"
            + (f"; pooling: {encoder['pooling']}" if encoder.get("pooling") else "")
            + ")",
        ),
    ]
    votes = router.neighbours
    if votes is not None:
        lines.append((
            "neighbours",
            f"votes of the {votes.keys.shape[0]} training questions' answers (k {votes.k}, weight {votes.weight:.3g}, "
            + (f"{votes.keys.shape[1]} principal directions" if votes.short_space else "all features")
            + "; docs/research/neighbours.md)",
        ))
    out.writelines(f"{key:<10} {value}\n" for key, value in lines)
    costs = router.costs
    gaps = unanswered_benchmarks(router.manifest.training, router.llms)  # block-missing data: extrapolated there
    out.write(f"LLMs ({len(router.llms)}" + (f"; cost stored for {len(costs)}" if costs else "")
              + (f"; {len(gaps)} without training answers on some benchmark" if gaps else "") + "):\n")
    width = max(len(name) for name in router.llms)
    out.writelines(
        (f"  {name:<{width}}  " + (f"cost {costs[name]:g}" if name in costs else "")
         + (f"{'  ' if name in costs else ''}no training answers on {', '.join(gaps[name])}" if name in gaps else "")
         ).rstrip() + "\n"
        for name in router.llms
    )
    calibration = router.calibration
    if calibration is not None:
        pairs = "one scale and bias for every LLM" if calibration.kind == GLOBAL else "a scale and bias per LLM"
        out.write(f"calibration: {calibration.kind} ({pairs}; P = sigmoid(scale * logit + bias))\n")
    else:
        out.write("calibration: none (P = sigmoid(logit))\n")
    for record in manifest.get("onboarded") or []:  # what add-llm printed when it added (or updated) the LLM
        how = "updated by add-llm --update" if record.get("update") else "added by add-llm"
        out.write(f"{how}: {record.get('name')} (from {record.get('answers')} answers)\n")
        out.write(textwrap.indent(fit_summary(dict(record)), "  "))
    for section in ("training", "metrics"):
        block = manifest.get(section)
        if not block:
            out.write(f"{section}: none recorded\n")
            continue
        out.write(f"{section}:\n")
        out.writelines(f"  {key}: {value}\n" for key, value in _flatten(block))
    return 0
