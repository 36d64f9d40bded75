"""Scoring question banks on Ray Data: the same rows `jeirt-lite score` writes, computed by a pool of workers.

Each worker is an actor that loads the router folder once, either by path (the folder on storage every node can
read) or from a copy of its files shipped through Ray's object store (`ship_router=True`, for clusters without
shared storage), takes the costs given for the run (`costs=`, `--costs FILE`) in place of its own, and scores whole
batches with the same code as the single-machine path (`batch.score_chunk`, `_io.writers.score_table`). The forecast
is a distributed aggregate: each batch yields its row count and its per-LLM sums of P(correct) in float64, and only
those few numbers per batch reach the driver.

Needs the optional extra: pip install "jeirt-lite[ray]". The core package never imports Ray.

Example:
    >>> import ray
    >>> from jeirt_lite.ray_engine import score_dataset
    >>> ds = ray.data.read_parquet("bank.parquet")                                   # doctest: +SKIP
    >>> score_dataset(ds, "my_router", k=2).write_parquet("scores/")                  # doctest: +SKIP
"""

from __future__ import annotations

import gc
import re
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np

try:
    import ray
    import ray.data
except ImportError as _err:  # the extra is missing: say which one to install
    raise ImportError(
        'jeirt_lite.ray_engine needs Ray Data, which is not installed: pip install "jeirt-lite[ray]"'
    ) from _err

from ._artifact_files import read_router_files
from ._errors import SKIP_BAD, Hint, JeirtError, column_hint, hinted_error, rehint
from ._io.optional import require_pyarrow
from ._io.outputs import check_output_path
from ._io.parquet_stream import parquet_rows, write_tables
from ._io.vocabulary import (
    columns_listed,
    default_id_column,
    default_text_column,
    id_problem,
    probability_column,
    score_columns,
    text_column_missing,
    text_problem,
)
from ._io.writers import ScoredChunk, score_table
from ._limits import MAX_CHUNK_ROWS, bounded_int, check_chunk_rows, check_threads
from ._llm_params import check_costs
from ._router import DEFAULT_ROUTER_PATH
from ._router_tables import usable_cores
from ._routing import routing_rows
from ._score_request import RAY, ScoreOptions, check_k, check_score_request
from .artifact import Manifest, read_manifest
from .batch import ScoreSummary, score_chunk

DEFAULT_BATCH_SIZE = 1024
COUNT_COLUMN = "count"


class _BankScorer:
    """One per worker: loads the router once, then turns Arrow batches of texts into Arrow batches of scores."""

    def __init__(
        self,
        router_path: str,
        text_column: str,
        id_column: str,
        k: int,
        all_probabilities: bool,
        skip_bad: bool,
        threads: int,
        router_files: Optional[dict[str, bytes]] = None,
        routing: Optional[dict[str, Any]] = None,
        costs: Optional[dict[str, float]] = None,
    ):
        from ._router import Router

        if router_files is not None:
            # A private copy for this worker's lifetime; Router.load checks it against router.json's hashes.
            self._router_copy = tempfile.TemporaryDirectory(prefix="jeirt-router-")
            for name, data in router_files.items():
                (Path(self._router_copy.name) / name).write_bytes(data)
            router_path = self._router_copy.name
        self.router = Router.load(router_path, threads=threads)
        if costs is not None:  # instead of the stored ones, as `--costs FILE` does on one machine
            self.router = self.router.with_costs(costs, replace=True)
        self.pa = require_pyarrow()
        self.text_column, self.id_column = text_column, id_column
        self.options = ScoreOptions(k=k, all_probabilities=all_probabilities, skip_bad=skip_bad, **(routing or {}))
        self.columns = score_columns(k, self.router.llms, all_probabilities)
        self.name_array = self.pa.array(list(self.router.llms), type=self.pa.string())

    def __call__(self, batch: Any) -> Any:
        pa = self.pa
        texts = batch.column(self.text_column).to_pylist()
        ids = batch.column(self.id_column).combine_chunks()
        keep = []
        for i, (text, ident) in enumerate(zip(texts, ids.to_pylist())):
            problem = text_problem(text) or id_problem(ident)  # the rules of the single-machine reader
            if problem is None:
                keep.append(i)
            elif not self.options.skip_bad:
                # Rows of a distributed dataset have no global number, so the row is named by its id.
                raise hinted_error(f"row with {self.id_column} {ids[i].as_py()!r}: {problem}", SKIP_BAD)
        if len(keep) < len(texts):
            ids = ids.take(pa.array(keep, type=pa.int64()))
            texts = [texts[i] for i in keep]
        if pa.types.is_large_string(ids.type):  # the single-machine writer's id column is plain string
            ids = ids.cast(pa.string())
        if texts:
            chunk = score_chunk(self.router, [], self.router.encode(texts), self.options)
        else:  # every row of the batch was bad and skipped
            k, n_llms = self.options.k, len(self.router.llms)
            chunk = ScoredChunk(
                ids=[],
                indices=np.empty((0, k), dtype=np.int64),
                probabilities=np.empty((0, k), dtype=np.float32),
                difficulty=np.empty(0, dtype=np.float32),
                all_probabilities=np.empty((0, n_llms), dtype=np.float32) if self.options.all_probabilities else None,
            )
        return score_table(pa, ids, chunk, self.name_array, self.columns)


def _batch_sums(batch: Any, probability_columns: list[str]) -> dict[str, np.ndarray]:
    """One row per batch: its row count and each LLM's sum of P(correct), in float64."""
    out = {COUNT_COLUMN: np.asarray([batch.num_rows], dtype=np.int64)}
    for name in probability_columns:
        values = batch.column(name).to_numpy(zero_copy_only=False)
        out[name] = np.asarray([values.astype(np.float64).sum()])
    return out


def find_id_column(column_names_: list[str], text_column: str, id_column: Optional[str]) -> str:
    """The id column to carry to the output: the named one, else the first of `id`, `question_id`, `qid`."""
    if text_column not in column_names_:
        raise hinted_error(text_column_missing(text_column, column_names_), column_hint("text_column"))
    if id_column is not None:
        if id_column not in column_names_:
            raise hinted_error(
                f"no id column {id_column!r} ({columns_listed(id_column, column_names_)})", column_hint("id_column")
            )
        return id_column
    found = default_id_column(column_names_)
    if found is None:
        # A distributed dataset's rows have no global row number to stand in for the id.
        raise hinted_error(
            "the Ray engine needs an id column (rows spread over workers have no global row number): "
            f"add an 'id' column (columns: {', '.join(column_names_)})",
            Hint("id_column", "or name one with {option}", "id_column"),
        )
    return found


def _default_concurrency(threads_per_worker: int) -> int:
    if not ray.is_initialized():  # on the cores this process may use, as score_file_on_ray starts one
        ray.init(include_dashboard=False, num_cpus=usable_cores())
    resources: dict[str, float] = ray.cluster_resources()  # type: ignore[no-untyped-call]  # Ray leaves it unannotated
    cpus = int(resources.get("CPU", usable_cores()))
    # One CPU stays free for the Parquet read tasks: actors holding every CPU starve the reads, and the
    # pipeline waits forever (seen on a 2-CPU runtime with 2 workers).
    return max(1, (cpus - 1) // threads_per_worker)


def score_dataset(
    ds: Any,
    router_path: Union[str, Path],
    *,
    text_column: Optional[str] = None,
    id_column: Optional[str] = None,
    k: int = 1,
    all_probabilities: bool = False,
    skip_bad: bool = False,
    batch_size: int = DEFAULT_BATCH_SIZE,
    concurrency: Optional[int] = None,
    threads_per_worker: int = 1,
    ship_router: bool = False,
    llms: Optional[Sequence[str]] = None,
    cost_weight: float = 0.0,
    min_probability: Optional[float] = None,
    costs: Optional[Mapping[str, float]] = None,
) -> Any:
    """Score a Ray Dataset of question texts; returns a (lazy) Dataset with the columns `jeirt-lite score` writes.

    Args:
        ds: a `ray.data.Dataset` with a text column and an id column.
        router_path: the router folder, readable at the same path on every node (shared storage).
        text_column, id_column: column names, by default the first of `text`, `question`, `prompt` and of `id`,
            `question_id`, `qid`.
        k: LLMs per question; all_probabilities: one `p[<llm>]` column per LLM.
        skip_bad: drop rows without a usable text instead of failing on the first (count them by comparing
            `ds.count()` with the result's).
        batch_size: rows per worker call; concurrency: workers (default: (cluster CPUs - 1) // threads_per_worker, leaving
            one CPU for the read tasks);
        threads_per_worker: cores each worker's router uses (reserved as Ray CPUs).
        ship_router: read the router folder here, now, and send its files to the workers through the object store
            (each worker writes a private copy), instead of having every worker read `router_path`.
        llms, cost_weight, min_probability: the routing rules of `Router.route` for the top-k columns.
        costs: {LLM name: cost} for this run instead of the router's stored costs (an LLM left out has none), as
            `Router.route(costs=...)`; checked here, applied on every worker.

    Raises:
        JeirtError: a missing column, a bad k or routing option, or (when the Dataset runs) a bad row without
            `skip_bad`.
    """
    router_path = str(Path(router_path).resolve())
    manifest = read_manifest(Path(router_path))  # the manifest only: the encoder loads on the workers
    check_k(k, len(manifest.llms))
    costs = _checked_routing(manifest, k, llms, cost_weight, min_probability, costs)
    check_threads(threads_per_worker)
    check_chunk_rows(batch_size, "batch_size")
    if concurrency is not None:
        bounded_int(concurrency, "concurrency", 1, MAX_CHUNK_ROWS)
    names = list(ds.schema().names)
    if text_column is None:  # as on one machine (TextReader): a name given, '' too, is kept
        text_column = default_text_column(names)
        if text_column is None:
            raise hinted_error(text_column_missing(None, names), column_hint("text_column"))
    resolved_id = find_id_column(names, text_column, id_column)
    try:
        # A bank read as one big block (one Parquet row group) would go to one worker: streaming re-blocking to
        # batch-sized blocks (no shuffle, order kept) lets every worker take part.
        ds = ds.repartition(target_num_rows_per_block=batch_size)
    except TypeError:  # a Ray without streaming repartition: the blocks stay as read
        pass
    return ds.map_batches(
        _BankScorer,
        fn_constructor_kwargs={
            "router_path": router_path,
            "text_column": text_column,
            "id_column": resolved_id,
            "k": k,
            "all_probabilities": all_probabilities,
            "skip_bad": skip_bad,
            "threads": threads_per_worker,
            "router_files": read_router_files(Path(router_path)) if ship_router else None,
            "routing": {"llms": None if llms is None else tuple(llms), "cost_weight": cost_weight,
                        "min_probability": min_probability},
            "costs": costs,
        },
        batch_size=batch_size,
        batch_format="pyarrow",
        compute=ray.data.ActorPoolStrategy(size=concurrency or _default_concurrency(threads_per_worker)),
        num_cpus=threads_per_worker,
    )


def _checked_routing(
    manifest: Manifest, k: int, llms: Optional[Sequence[str]], cost_weight: float, min_probability: Optional[float],
    costs: Optional[Mapping[str, float]],
) -> Optional[dict[str, float]]:
    """The run's costs checked against the router's LLMs (None: the router's own), and the routing rules checked
    against the costs they will route by, on the driver: a bad rule or cost is refused before any worker starts."""
    given = None if costs is None else check_costs(costs, manifest.llms, "costs")
    routed_by = given if given is not None else manifest.costs or {}
    routing_rows(manifest.llms, k, cost_weight, min_probability, llms, routed_by)
    return given


def expected_accuracy(scored: Any, llms: Any) -> tuple[dict[str, float], int]:
    """Each LLM's mean P(correct) over a scored Dataset holding the `p[<llm>]` columns, and the row count.

    Per-batch sums are computed where the batches are; the driver adds one small row per batch.
    """
    columns = [probability_column(name) for name in llms]
    partials = scored.map_batches(
        _batch_sums, fn_kwargs={"probability_columns": columns}, batch_format="pyarrow"
    ).take_all()
    count = int(sum(int(row[COUNT_COLUMN]) for row in partials))
    if count == 0:
        raise JeirtError("no question was scored, so there is no forecast (empty bank, or every row skipped)")
    sums = np.zeros(len(columns), dtype=np.float64)
    for row in partials:
        sums += np.asarray([row[name] for name in columns], dtype=np.float64)
    return {name: float(total / count) for name, total in zip(llms, sums.tolist())}, count


def forecast_dataset(ds: Any, router_path: Union[str, Path], **score_kwargs: Any) -> dict[str, float]:
    """`jeirt-lite score --forecast` on a Ray Dataset: each LLM's expected accuracy (mean P(correct))."""
    score_kwargs.update(all_probabilities=True, k=1)
    llms = read_manifest(Path(router_path)).llms
    return expected_accuracy(score_dataset(ds, router_path, **score_kwargs), llms)[0]


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


# -- a Parquet file scored on Ray into one Parquet file (`jeirt-lite score --engine ray`) -----------------------


def score_file_on_ray(
    input_path: Path,
    *,
    router_path: Optional[Union[str, Path]] = None,
    output: Optional[Path] = None,
    text_column: Optional[str] = None,
    id_column: Optional[str] = None,
    options: Optional[ScoreOptions] = None,
    address: Optional[str] = None,
    threads_per_worker: int = 1,
    ship_router: bool = False,
    show_progress: bool = False,
    costs: Optional[Mapping[str, float]] = None,
) -> ScoreSummary:
    """`batch.score_file` on Ray Data: a Parquet bank in, one Parquet file out, the same summary.

    Workers encode and score; the driver streams the scored batches, in input order, into a temporary file next
    to the output and renames it at the end (`_io.outputs.atomic_output`), so a failed or interrupted run leaves no
    output. The forecast is aggregated from per-batch sums (`expected_accuracy`). Without a running Ray, one is
    started for the call (on `address`, else locally on the CPUs this process may use) and shut down after it. `costs`
    replaces the router's stored costs for the run, as in `score_dataset`.

    Raises:
        JeirtError: a bad input, output or argument, or a bad row without `options.skip_bad`.
    """
    options = options or ScoreOptions()
    router_path = Path(router_path) if router_path is not None else DEFAULT_ROUTER_PATH
    manifest = read_manifest(router_path)
    llms = manifest.llms
    check_score_request(options, len(llms), input_path=Path(input_path), output=output, engine=RAY)
    # Before Ray starts, as on one machine.
    costs = _checked_routing(manifest, options.k, options.llms, options.cost_weight, options.min_probability, costs)
    if output is not None:
        check_output_path(output, [input_path], router_path)
    total = parquet_rows(input_path)  # from the file's footer: a Ray count would be one more job to schedule
    started_here = not ray.is_initialized()
    if started_here:
        # Without an address: a local runtime on the CPUs this process may use; with one: join that cluster.
        ray.init(
            address=address,
            num_cpus=None if address else usable_cores(),  # a container's CPU limit included
            include_dashboard=False,
            log_to_driver=False,
        )
    try:
        run = _FileRun(Path(input_path), output, text_column, id_column, options, threads_per_worker, ship_router,
                       costs)
        rows, forecast, seconds = _score_on_ray(run, router_path, llms, show_progress)
    finally:
        if started_here:
            ray.shutdown()
    return ScoreSummary(rows=rows, skipped=total - rows, seconds=seconds, output=output, forecast=forecast)


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


def _score_on_ray(
    run: _FileRun, router_path: Path, llms: Sequence[str], show_progress: bool
) -> tuple[int, Optional[dict[str, float]], float]:
    """Runs the Ray pipeline; returns (rows scored, forecast or None, seconds).

    A worker's JeirtError (a bad row) comes back as that JeirtError. The failed run's worker actors keep their CPUs
    until its executor objects are garbage: Ray's traceback holds them in reference cycles, so they are collected
    here, before the error is raised; without that, the next Dataset on the same runtime can wait for CPUs
    indefinitely.
    """
    failure: Optional[str] = None
    try:
        return _run_pipeline(run, router_path, llms, show_progress)
    except Exception as error:
        cause = unwrap_error(error)
        if cause is None:
            raise
        failure = str(cause)
    gc.collect()
    raise rehint(failure)  # a new error from the message alone: holding `cause` would keep the cycles alive


def _run_pipeline(
    run: _FileRun, router_path: Path, llms: Sequence[str], show_progress: bool
) -> tuple[int, Optional[dict[str, float]], float]:
    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True  # the output keeps the input order, as on one machine
    context.enable_progress_bars = show_progress
    options = run.options
    started = time.perf_counter()
    ds = ray.data.read_parquet(str(run.input_path.resolve()))
    scored = score_dataset(
        ds,
        router_path,
        text_column=run.text_column,
        id_column=run.id_column,
        k=options.k,
        all_probabilities=options.all_probabilities or options.forecast,
        skip_bad=options.skip_bad,
        batch_size=options.chunk_size,  # rows per worker call
        threads_per_worker=run.threads_per_worker,
        ship_router=run.ship_router,
        llms=options.llms,
        cost_weight=options.cost_weight,
        min_probability=options.min_probability,
        costs=run.costs,
    )
    forecast: Optional[dict[str, float]] = None
    rows = 0
    if run.output is not None and options.forecast:
        scored = scored.materialize()  # scored once, in the object store; read by both passes below
    if options.forecast:
        forecast, rows = expected_accuracy(scored, llms)
    if run.output is not None:
        drop = [] if options.all_probabilities else [probability_column(name) for name in llms if options.forecast]
        rows = write_tables(scored.iter_batches(batch_format="pyarrow", batch_size=None), run.output, drop)
    return rows, forecast, time.perf_counter() - started
