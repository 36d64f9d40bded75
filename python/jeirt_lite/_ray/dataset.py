"""The Ray engine's Dataset API: `score_dataset` maps a Ray Dataset of texts to the columns `jeirt-lite score`
writes, `forecast_dataset` and `expected_accuracy` aggregate each LLM's mean P(correct) from per-batch sums, so only
a few numbers per batch reach the driver; `forecast_by_dataset` does it per group of a column (`group_sums`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np
import ray
import ray.data

from .._artifact_files import read_router_files
from .._errors import Hint, JeirtError, column_hint, hinted_error
from .._group_forecast import NO_FORECAST, GroupForecast
from .._io.vocabulary import (
    TEXT_COLUMNS,
    column_missing,
    default_id_column,
    default_text_column,
    key_columns_problem,
    probability_column,
)
from .._limits import MAX_CHUNK_ROWS, bounded_int, check_chunk_rows, check_threads
from .._llm_params import check_costs
from .._router_tables import usable_cores
from .._routing import routing_rows
from .._score_request import check_k
from ..artifact import Manifest, read_manifest
from .group_sums import COUNT_COLUMN, check_group_column, expected_accuracy_by
from .worker import BankScorer

DEFAULT_BATCH_SIZE = 1024

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
        raise hinted_error(column_missing("text", text_column, column_names_), column_hint("text_column"))
    if id_column is not None:
        if id_column not in column_names_:
            raise hinted_error(column_missing("id", id_column, column_names_), column_hint("id_column"))
        return id_column
    found = default_id_column(column_names_)
    if found is None:
        # A distributed dataset's rows have no global row number to stand in for the id; a Parquet file's do, and
        # score_file_on_ray gives them (row_numbers.py).
        raise hinted_error(
            "a Ray Dataset needs an id column to be scored (rows spread over workers have no global row number; "
            f"score_file_on_ray numbers a Parquet file's rows): add an 'id' column (columns: {', '.join(column_names_)})",
            Hint("id_column", "or name one with {option}", "id_column"),
        )
    return found


def check_key_types(column_types: Mapping[str, Any], id_column: Optional[str], group_column: Optional[str]) -> None:
    """Refuse an id or group column whose Arrow type (in `column_types`, by name) no row's value can be an id or
    name a group by, before any worker starts, in the single-machine reader's words and order."""
    found = key_columns_problem(column_types.get, id_column, group_column)
    if found is not None:
        raise hinted_error(found[0], column_hint(found[1]))


def text_column_of(names: list[str], text_column: Optional[str]) -> str:
    """The text column of a bank of columns `names`: the named one, else the first of `text`, `question`, `prompt`
    (its presence is checked with the id column's, by `find_id_column`)."""
    if text_column is not None:  # as on one machine (TextReader): a name given, '' too, is kept
        return text_column
    found = default_text_column(names)
    if found is None:
        raise hinted_error(column_missing("text", None, names, TEXT_COLUMNS), column_hint("text_column"))
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
    group_column: Optional[str] = None,
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
        llms, cost_weight, min_probability: the routing rules of `Router.route` for the top-k columns; with
            min_probability, a last column `fallback` (bool) marks the rows where no LLM cleared it.
        costs: {LLM name: cost} for this run instead of the router's stored costs (an LLM left out has none), as
            `Router.route(costs=...)`; checked here, applied on every worker.
        group_column: carry each row's value of this column, as text, in the column `GROUP_COLUMN`, for
            `expected_accuracy_by`; a row whose value cannot name a group (null, blank, neither a string nor an
            integer) is a bad row.

    Raises:
        JeirtError: a missing column, a bad k or routing option, or (when the Dataset runs) a bad row without
            `skip_bad`.
    """
    router_path = str(Path(router_path).resolve())
    manifest = read_manifest(Path(router_path))  # the manifest only: the encoder loads on the workers
    check_k(k, len(manifest.llms))
    costs = checked_routing(manifest, k, llms, cost_weight, min_probability, costs)
    check_threads(threads_per_worker)
    check_chunk_rows(batch_size, "batch_size")
    if concurrency is not None:
        bounded_int(concurrency, "concurrency", 1, MAX_CHUNK_ROWS)
    schema = ds.schema()
    names = list(schema.names)
    text_column = text_column_of(names, text_column)
    resolved_id = find_id_column(names, text_column, id_column)
    check_group_column(names, group_column)
    check_key_types(dict(zip(names, schema.types)), resolved_id, group_column)
    try:
        # A bank read as one big block (one Parquet row group) would go to one worker: streaming re-blocking to
        # batch-sized blocks (no shuffle, order kept) lets every worker take part.
        ds = ds.repartition(target_num_rows_per_block=batch_size)
    except TypeError:  # a Ray without streaming repartition: the blocks stay as read
        pass
    return ds.map_batches(
        BankScorer,
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
            "group_column": group_column,
        },
        batch_size=batch_size,
        batch_format="pyarrow",
        compute=ray.data.ActorPoolStrategy(size=concurrency or _default_concurrency(threads_per_worker)),
        num_cpus=threads_per_worker,
    )


def checked_routing(
    manifest: Manifest, k: int, llms: Optional[Sequence[str]], cost_weight: float, min_probability: Optional[float],
    costs: Optional[Mapping[str, float]],
) -> Optional[dict[str, float]]:
    """The run's costs checked against the router's LLMs (None: the router's own), and the routing rules checked
    against the costs they will route by, on the driver: a bad rule or cost is refused before any worker starts."""
    given = None if costs is None else check_costs(costs, manifest.llms, "costs")
    routed_by = given if given is not None else manifest.costs or {}
    routing_rows(manifest.llms, k, cost_weight, min_probability, llms, routed_by)
    return given


def expected_accuracy(
    scored: Any, llms: Any, on_rows: Optional[Callable[[int], None]] = None
) -> tuple[dict[str, float], int]:
    """Each LLM's mean P(correct) over a scored Dataset holding the `p[<llm>]` columns, and the row count.

    Per-batch sums are computed where the batches are; the driver adds one small row per batch as it arrives, and
    calls `on_rows` with its row count (so that an interrupted run can say how many rows were scored).
    """
    columns = [probability_column(name) for name in llms]
    partials = scored.map_batches(
        _batch_sums, fn_kwargs={"probability_columns": columns}, batch_format="pyarrow"
    ).iter_rows()
    count = 0
    sums = np.zeros(len(columns), dtype=np.float64)
    for row in partials:
        sums += np.asarray([row[name] for name in columns], dtype=np.float64)
        count += int(row[COUNT_COLUMN])
        if on_rows is not None:
            on_rows(int(row[COUNT_COLUMN]))
    if count == 0:
        raise JeirtError(NO_FORECAST)
    return {name: float(total / count) for name, total in zip(llms, sums.tolist())}, count


def forecast_dataset(ds: Any, router_path: Union[str, Path], **score_kwargs: Any) -> dict[str, float]:
    """`jeirt-lite score --forecast` on a Ray Dataset: each LLM's expected accuracy (mean P(correct))."""
    score_kwargs.update(all_probabilities=True, k=1)
    llms = read_manifest(Path(router_path)).llms
    return expected_accuracy(score_dataset(ds, router_path, **score_kwargs), llms)[0]


def forecast_by_dataset(
    ds: Any, router_path: Union[str, Path], column: str, **score_kwargs: Any
) -> GroupForecast:
    """`jeirt-lite score --forecast-by COLUMN` on a Ray Dataset: each LLM's expected accuracy (mean P(correct)) on
    the whole Dataset and on each group of its rows, a group being a value of `column` read as text (at most
    MAX_GROUPS of them). `score_kwargs` as `score_dataset` takes them."""
    score_kwargs.update(all_probabilities=True, k=1, group_column=column)
    llms = read_manifest(Path(router_path)).llms
    return expected_accuracy_by(score_dataset(ds, router_path, **score_kwargs), llms, column)
