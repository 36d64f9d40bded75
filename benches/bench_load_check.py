"""What the load-time agreement check of a static router (graph against Rust fast path on probe texts) costs:
Router.load of the shipped router with the check, against the same load without it, interleaved in one run.

    python benches/bench_load_check.py [ROUNDS]
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from typing import Any

from jeirt_lite import Router, _router_tables
from jeirt_lite._static_path import static_encoder_for


def _unchecked(self: Any, artifact: Any, fast_path: bool) -> Any:
    """The load before the check: the fast encoder alone (no ONNX session, no probes)."""
    fast = static_encoder_for(artifact.path, artifact.manifest, artifact.tokenizer_path, artifact.dim, self._threads)
    assert fast is not None and fast_path
    return fast


def main(rounds: int) -> None:
    checked = _router_tables.RouterTables._checked_encoders
    times: dict[str, list[float]] = {"with check": [], "without": []}
    Router.load(threads=1)  # warm the page cache and imports
    for _ in range(rounds):
        for name, method in (("with check", checked), ("without", _unchecked)):
            _router_tables.RouterTables._checked_encoders = method  # type: ignore[method-assign]
            start = time.perf_counter()
            Router.load(threads=1)
            times[name].append(time.perf_counter() - start)
    _router_tables.RouterTables._checked_encoders = checked  # type: ignore[method-assign]
    base = statistics.median(times["without"])
    print(f"{os.cpu_count()} cores, {rounds} interleaved rounds, Router.load() of the shipped router, threads=1")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name:<11} median {median * 1000:7.1f} ms  ({median / base:.2f}x the load without the check)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 15)
