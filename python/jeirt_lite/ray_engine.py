"""Scoring question banks on Ray Data: the same rows `jeirt-lite score` writes, computed by a pool of workers.

Each worker is an actor that loads the router folder once, either by path (the folder on storage every node can
read) or from a copy of its files shipped through Ray's object store (`ship_router=True`, for clusters without
shared storage), takes the costs given for the run (`costs=`, `--costs FILE`) in place of its own, and scores whole
batches with the same code as the single-machine path (`batch.score_chunk`, `_io.writers.score_table`). The forecast
is a distributed aggregate: each batch yields its row count and its per-LLM sums of P(correct) in float64, and only
those few numbers per batch reach the driver; per group of a column (`forecast_by_dataset`, `--forecast-by`), one
such row per group of each batch.

Needs the optional extra: pip install "jeirt-lite[ray]". The core package never imports Ray. This module is the
public face of `jeirt_lite._ray`, where the worker, the Dataset API and the file-to-file run each have a module.

Example:
    >>> import ray
    >>> from jeirt_lite.ray_engine import score_dataset
    >>> ds = ray.data.read_parquet("bank.parquet")                                   # doctest: +SKIP
    >>> score_dataset(ds, "my_router", k=2).write_parquet("scores/")                  # doctest: +SKIP
"""

from __future__ import annotations

from ._ray.dataset import (
    DEFAULT_BATCH_SIZE,
    expected_accuracy,
    find_id_column,
    forecast_by_dataset,
    forecast_dataset,
    score_dataset,
)
from ._ray.file_run import score_file_on_ray, unwrap_error
from ._ray.group_sums import COUNT_COLUMN, GROUP_COLUMN, expected_accuracy_by

__all__ = [
    "COUNT_COLUMN",
    "DEFAULT_BATCH_SIZE",
    "GROUP_COLUMN",
    "expected_accuracy",
    "expected_accuracy_by",
    "find_id_column",
    "forecast_by_dataset",
    "forecast_dataset",
    "score_dataset",
    "score_file_on_ray",
    "unwrap_error",
]
