"""`jeirt-lite score --engine ray`: a Parquet bank scored on Ray Data, written as one Parquet file.

Workers encode and score; the driver streams the scored batches, in input order, into a temporary file next to
the output and renames it at the end (`writers.atomic_output`), so a failed or interrupted run leaves no output,
as on one machine. The forecast is aggregated from per-batch sums (jeirt_lite.ray.expected_accuracy).
"""

from __future__ import annotations

import argparse
import gc
import os
import time
from pathlib import Path
from typing import Any, Optional, Sequence, TextIO

from .artifact import load_artifact
from .errors import JeirtError
from .readers import format_of, require_pyarrow
from .router import DEFAULT_ROUTER_PATH
from .writers import atomic_output, check_output_path


def _import_engine() -> Any:
    try:
        from . import ray as engine
    except ImportError as err:  # the extra is missing: a clear error, not a traceback
        raise JeirtError(str(err)) from err
    return engine


def check_ray_arguments(args: argparse.Namespace) -> None:
    if args.vectors is not None:
        raise JeirtError("--engine ray scores text banks only; --vectors runs on one machine")
    if args.input is None or format_of(args.input) != "parquet":
        raise JeirtError("--engine ray reads a Parquet bank (INPUT.parquet)")
    if not args.input.is_file():
        raise JeirtError(f"{args.input}: no such file")
    if args.output is not None and format_of(args.output, "output") != "parquet":
        raise JeirtError("--engine ray writes Parquet (-o OUTPUT.parquet)")
    for flag, given in (("--address", args.address is not None), ("--ship-router", args.ship_router)):
        if given and args.engine != "ray":
            raise JeirtError(f"{flag} goes with --engine ray")


def _parquet_rows(path: Path) -> int:
    pa = require_pyarrow()
    try:
        return int(pa.parquet.ParquetFile(str(path)).metadata.num_rows)
    except (pa.ArrowInvalid, OSError) as err:
        raise JeirtError(f"{path}: not a readable Parquet file ({err})") from err


def _write_parquet(scored: Any, output: Path, drop: list[str]) -> int:
    """Stream the scored batches, in order, into one Parquet file; returns the rows written."""
    pa = require_pyarrow()
    rows = 0
    with atomic_output(output) as temporary:
        writer: Any = None
        try:
            for table in scored.iter_batches(batch_format="pyarrow", batch_size=None):
                if drop:
                    table = table.drop_columns(drop)
                if writer is None:
                    writer = pa.parquet.ParquetWriter(str(temporary), table.schema)
                if table.num_rows:
                    writer.write_table(table)
                rows += table.num_rows
        finally:
            if writer is not None:
                writer.close()
        if writer is None:
            raise JeirtError("the Ray engine produced no batches (empty bank?); no output written")
    return rows


def run_score_ray(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    check_ray_arguments(args)
    if args.output is not None:
        check_output_path(args.output, [args.input])
    engine = _import_engine()
    ray = engine.ray
    total = _parquet_rows(args.input)  # from the file's footer: a Ray count would be one more job to schedule
    router_path = Path(args.router) if args.router is not None else DEFAULT_ROUTER_PATH
    llms = load_artifact(router_path).llm_names
    started_here = not ray.is_initialized()
    if started_here:
        # Without --address: a local runtime on this machine's CPUs; with it: join that cluster.
        ray.init(
            address=args.address,
            num_cpus=None if args.address else (os.cpu_count() or 1),
            include_dashboard=False,
            log_to_driver=False,
        )
    try:
        rows, forecast, seconds = _score_on_ray(engine, args, router_path, llms)
    finally:
        if started_here:
            ray.shutdown()
    if forecast is not None:
        out.write(f"expected accuracy on {rows:,} questions (mean P(correct)):\n")
        width = max(len(name) for name in forecast)
        out.writelines(
            f"  {name:<{width}}  {value:.6f}\n" for name, value in sorted(forecast.items(), key=lambda i: -i[1])
        )
    if not args.quiet:
        where = f" to {args.output}" if args.output is not None else ""
        err.write(f"scored {rows:,} questions{where} on Ray in {seconds:.2f} s ({rows / seconds:,.0f} rows/s)\n")
    if total - rows:
        err.write(f"skipped {total - rows:,} bad rows (--skip-bad)\n")
    return 0


def _score_on_ray(
    engine: Any, args: argparse.Namespace, router_path: Path, llms: Sequence[str]
) -> tuple[int, Optional[dict[str, float]], float]:
    """Runs the Ray pipeline; returns (rows scored, forecast or None, seconds).

    A worker's JeirtError (a bad row) comes back as that JeirtError. The failed run's worker actors keep their CPUs
    until its executor objects are garbage: Ray's traceback holds them in reference cycles, so they are collected
    here, before the error is raised; without that, the next Dataset on the same runtime can wait for CPUs indefinitely.
    """
    failure: Optional[str] = None
    try:
        return _run_pipeline(engine, args, router_path, llms)
    except Exception as error:
        cause = engine.unwrap_error(error)
        if cause is None:
            raise
        failure = str(cause)
    gc.collect()
    raise JeirtError(failure)


def _run_pipeline(
    engine: Any, args: argparse.Namespace, router_path: Path, llms: Sequence[str]
) -> tuple[int, Optional[dict[str, float]], float]:
    ray = engine.ray
    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True  # the output keeps the input order, as on one machine
    context.enable_progress_bars = not args.quiet
    started = time.perf_counter()
    ds = ray.data.read_parquet(str(args.input.resolve()))
    scored = engine.score_dataset(
        ds,
        router_path,
        text_column=args.text_column,
        id_column=args.id_column,
        k=args.k,
        all_probabilities=args.all_probabilities or args.forecast,
        skip_bad=args.skip_bad,
        batch_size=args.chunk_size,  # rows per worker call
        threads_per_worker=args.threads or 1,
        ship_router=args.ship_router,
    )
    forecast: Optional[dict[str, float]] = None
    rows = 0
    if args.output is not None and args.forecast:
        scored = scored.materialize()  # scored once, in the object store; read by both passes below
    if args.forecast:
        forecast, rows = engine.expected_accuracy(scored, llms)
    if args.output is not None:
        drop = [] if args.all_probabilities else [f"p[{name}]" for name in llms if args.forecast]
        rows = _write_parquet(scored, args.output, drop)
    return rows, forecast, time.perf_counter() - started
