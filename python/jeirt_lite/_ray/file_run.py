"""The Ray engine's file-to-file run (`jeirt-lite score --engine ray`): `score_file_on_ray` reads a Parquet bank
on Ray Data (one without an id column with its data row numbers, `row_numbers`), scores it with
`dataset.score_dataset` and streams the scores into one Parquet file, with the summary `batch.score_file` returns;
a worker's JeirtError comes back as that error (`unwrap_error`). Asked to be quiet, it keeps Ray's own lines off
stderr (the `quiet` module)."""

from __future__ import annotations

import gc
import re
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Optional, Union

import ray
import ray.data

from .._errors import JeirtError, in_file, rehint, reraised_as
from .._group_forecast import GroupForecast
from .._io.optional import require_pyarrow
from .._io.outputs import check_output_path
from .._io.parquet_stream import parquet_column_types, parquet_rows, write_tables
from .._io.vocabulary import default_id_column, probability_column
from .._router import DEFAULT_ROUTER_PATH
from .._router_tables import usable_cores
from .._score_request import RAY, ScoreOptions, check_score_request
from ..artifact import PathLike, read_manifest
from ..batch import ScoreState, ScoreSummary
from .dataset import (
    check_key_types,
    checked_routing,
    expected_accuracy,
    find_id_column,
    score_dataset,
    text_column_of,
)
from .group_sums import GROUP_COLUMN, check_group_column, expected_accuracy_by
from .quiet import init_logging_level, ray_data_console
from .row_numbers import ROW_NUMBER_COLUMN, ROW_TYPE, read_numbered
from .worker import empty_scores


def unwrap_error(error: BaseException) -> Optional[JeirtError]:
    """The JeirtError a worker raised, found inside Ray's wrapping exceptions, or None.

    Ray Data re-raises a worker's exception as RayTaskError(UserCodeException), which does not always keep the
    original as a cause; its text then still holds the "JeirtError: <message>" line, which is used instead.
    """
    seen: set[int] = set()
    current: Optional[BaseException] = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, JeirtError):
            return current
        match = _JEIRT_ERROR_LINE.search(str(current))
        if match is not None:
            return rehint(match.group(1))
        cause = getattr(current, "cause", None)
        current = cause if isinstance(cause, BaseException) else current.__cause__
    return None


_JEIRT_ERROR_LINE = re.compile(r"JeirtError: (.+)")


def score_file_on_ray(
    input_path: PathLike,
    *,
    router_path: Optional[PathLike] = None,
    output: Optional[PathLike] = None,
    text_column: Optional[str] = None,
    id_column: Optional[str] = None,
    options: Optional[ScoreOptions] = None,
    address: Optional[str] = None,
    threads_per_worker: int = 1,
    ship_router: bool = False,
    show_progress: bool = False,
    costs: Optional[Mapping[str, float]] = None,
    quiet: bool = False,
    state: Optional[ScoreState] = None,
) -> ScoreSummary:
    """`batch.score_file` on Ray Data: a Parquet bank in, one Parquet file out, the same summary.

    Workers encode and score; the driver streams the scored batches, in input order, into a temporary file next
    to the output and renames it at the end (`_io.outputs.atomic_output`), so a failed or interrupted run leaves no
    output. The forecast is aggregated from per-batch sums (`expected_accuracy`; by `options.forecast_by`'s groups,
    `expected_accuracy_by`, into the summary's `group_forecast`). Without a running Ray, one is
    started for the call (on `address`, else locally on the CPUs this process may use) and shut down after it. `costs`
    replaces the router's stored costs for the run, as in `score_dataset`. The paths are a str or a Path, as
    `batch.score_file` takes them.

    `show_progress` turns on Ray Data's progress bars; `quiet` keeps Ray's own log lines off this process's stderr
    (as `score -q` does; Ray's session logs keep them); `state` counts the rows scored and written so far, for a
    caller to say how far a failed or interrupted run got.

    Raises:
        JeirtError: a bad input, output or argument, or a bad row without `options.skip_bad`.
    """
    options = options or ScoreOptions()
    router_path = Path(router_path) if router_path is not None else DEFAULT_ROUTER_PATH
    # None is refused by the request's check, with what to give instead.
    source, target = (None if path is None else Path(path) for path in (input_path, output))
    manifest = read_manifest(router_path)
    llms = manifest.llms
    check_score_request(options, len(llms), input_path=source, output=target, engine=RAY)
    # Before Ray starts, as on one machine.
    costs = checked_routing(manifest, options.k, options.llms, options.cost_weight, options.min_probability, costs)
    assert source is not None  # refused above
    if target is not None:
        check_output_path(target, [source], router_path)
    total = parquet_rows(source)  # from the file's footer: a Ray count would be one more job to schedule
    _columns(source, parquet_column_types(source), text_column, id_column, options.forecast_by)  # before Ray starts
    state = state if state is not None else ScoreState()
    state.workers_started = True  # from here on, workers may score rows this process has not counted yet
    started_here = not ray.is_initialized()
    if started_here:
        # Without an address: a local runtime on the CPUs this process may use; with one: join that cluster.
        ray.init(
            address=address,
            num_cpus=None if address else usable_cores(),  # a container's CPU limit included
            include_dashboard=False,
            log_to_driver=False,
            logging_level=init_logging_level(quiet),
        )
    try:
        run = _FileRun(source, target, text_column, id_column, options, threads_per_worker, ship_router, costs,
                       state)
        with ray_data_console(quiet):
            rows, forecast, seconds = _score_on_ray(run, router_path, llms, show_progress)
    finally:
        if started_here:
            ray.shutdown()
    by_group = None
    if isinstance(forecast, GroupForecast):  # the whole bank's forecast is its `overall`, as on one machine
        by_group, forecast = forecast, forecast.overall
    return ScoreSummary(rows=rows, skipped=total - rows, seconds=seconds, output=target, forecast=forecast,
                        group_forecast=by_group)


@dataclass(frozen=True)
class _FileRun:
    """The arguments of one `score_file_on_ray` call that the pipeline needs."""

    input_path: Path
    output: Optional[Path]
    text_column: Optional[str]
    id_column: Optional[str]
    options: ScoreOptions
    threads_per_worker: int
    ship_router: bool
    costs: Optional[dict[str, float]] = None  # None: the router's own
    # rows_scored: the rows written so far, or all of them once the forecast's pass has scored them
    state: ScoreState = field(default_factory=ScoreState)


# Each LLM's expected accuracy on the bank, or (`forecast_by`) on the bank and on each group of it.
Forecast = Union[dict[str, float], GroupForecast]


def _score_on_ray(
    run: _FileRun, router_path: Path, llms: Sequence[str], show_progress: bool
) -> tuple[int, Optional[Forecast], float]:
    """Runs the Ray pipeline; returns (rows scored, forecast or None, seconds).

    A worker's JeirtError (a bad row) comes back as that JeirtError. The failed run's worker actors keep their CPUs
    until its executor objects are garbage: Ray's traceback holds them in reference cycles, so they are collected
    here, before the error is raised; without that, the next Dataset on the same runtime can wait for CPUs
    indefinitely.
    """
    failure: Optional[JeirtError] = None
    try:
        return _run_pipeline(run, router_path, llms, show_progress)
    except Exception as error:
        cause = unwrap_error(error)
        if cause is None:
            raise
        # A new error of the message and hint alone: holding `cause` would keep the cycles alive.
        failure = reraised_as(rehint(str(cause)), cause)
        del cause
    gc.collect()
    raise failure


def _run_pipeline(
    run: _FileRun, router_path: Path, llms: Sequence[str], show_progress: bool
) -> tuple[int, Optional[Forecast], float]:
    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True  # the output keeps the input order, as on one machine
    context.enable_progress_bars = show_progress
    options = run.options
    started = time.perf_counter()
    ds, text_column, id_column, id_type = _bank(run)
    scored = score_dataset(
        ds,
        router_path,
        text_column=text_column,
        id_column=id_column,
        k=options.k,
        all_probabilities=options.all_probabilities or options.forecasting,
        skip_bad=options.skip_bad,
        batch_size=options.chunk_size,  # rows per worker call
        threads_per_worker=run.threads_per_worker,
        ship_router=run.ship_router,
        llms=options.llms,
        cost_weight=options.cost_weight,
        min_probability=options.min_probability,
        costs=run.costs,
        group_column=options.forecast_by,
    )
    forecast: Optional[Forecast] = None
    rows = 0
    if run.output is not None and options.forecasting:
        scored = scored.materialize()  # scored once, in the object store; read by both passes below
    if options.forecasting:
        forecast, rows = _forecast(scored, llms, options, run.state)
    if run.output is not None:
        forecast_only = [probability_column(name) for name in llms if not options.all_probabilities]
        drop = (forecast_only if options.forecasting else []) + ([GROUP_COLUMN] if options.forecast_by else [])
        schema = _scored_schema(id_type, options, llms)
        batches = scored.iter_batches(batch_format="pyarrow", batch_size=None)
        if not options.forecasting:  # scored on their way to the file: counted as they are written
            batches = _counted(batches, run.state)
        rows = write_tables(batches, run.output, drop, schema)
    return rows, forecast, time.perf_counter() - started


def _forecast(scored: Any, llms: Sequence[str], options: ScoreOptions, state: ScoreState) -> tuple[Forecast, int]:
    """The forecast (per group of `options.forecast_by`'s column, if given) and the rows it covers. Counted as each
    batch's sums arrive: an interrupted run says how far it got; once done, every row is scored before any is
    written or printed, and a failure after says so."""
    on_rows = partial(_add_scored, state)
    if options.forecast_by is None:
        return expected_accuracy(scored, llms, on_rows=on_rows)
    by_group = expected_accuracy_by(scored, llms, options.forecast_by, on_rows=on_rows)
    return by_group, by_group.rows


def _add_scored(state: ScoreState, rows: int) -> None:
    state.rows_scored += rows


def _counted(tables: Iterable[Any], state: ScoreState) -> Iterator[Any]:
    """The `tables`, each counted in `state.rows_scored` once its reader asks for the next: once it is written."""
    for table in tables:
        yield table
        state.rows_scored += table.num_rows


def _bank(run: _FileRun) -> tuple[Any, str, str, Any]:
    """The bank's Dataset, its text and id columns and the ids' Arrow type. A bank without an id column is read
    with its data row numbers as ids, the ids one machine gives it."""
    path = run.input_path.resolve()
    ds = ray.data.read_parquet(str(path))
    schema = ds.schema()  # from the file's footer: no row is read
    column_types = dict(zip(schema.names, schema.types))
    text_column, id_column = _columns(run.input_path, column_types, run.text_column, run.id_column,
                                      run.options.forecast_by)
    if id_column is None:
        also = [run.options.forecast_by] if run.options.forecast_by is not None else []
        numbered = read_numbered(path, text_column, run.options.chunk_size, also)
        return numbered, text_column, ROW_NUMBER_COLUMN, ROW_TYPE
    return ds, text_column, id_column, column_types[id_column]


def _columns(
    path: Path, column_types: Mapping[str, Any], text_column: Optional[str], id_column: Optional[str],
    group_column: Optional[str],
) -> tuple[str, Optional[str]]:
    """The text and id columns (None: the rows are numbered) of the bank at `path` of `column_types` (Arrow types by
    name), its group column checked, and both columns' types, in the order and the words of one machine's reader."""
    names = list(column_types)
    try:
        text = text_column_of(names, text_column)
        check_group_column(names, group_column)  # before the id column, as one machine's reader checks them
        without_ids = id_column is None and default_id_column(names) is None
        numbered = without_ids and text in names and text != ROW_NUMBER_COLUMN
        ids = None if numbered else find_id_column(names, text, id_column)
        check_key_types(column_types, ids, group_column)
    except JeirtError as error:  # named by the bank, as one machine's reader names it
        raise in_file(path, error) from None
    return text, ids


def _scored_schema(id_type: Any, options: ScoreOptions, llms: Sequence[str]) -> Any:
    """The schema of the scores, which the output has even when no row is scored: an empty bank, or one whose every
    row is skipped, gives a file of no rows, as on one machine."""
    all_probabilities = options.all_probabilities or options.forecasting
    fallback = options.min_probability is not None
    return empty_scores(require_pyarrow(), id_type, options.k, llms, all_probabilities, fallback).schema
