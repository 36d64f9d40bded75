"""Ray's stand-ins for the tests of the Ray engine's parts, which run without a Ray runtime (tests/test_ray_worker.py,
test_ray_dataset.py, test_ray_file_run.py, test_ray_group_forecast.py): a Dataset that records what `score_dataset`
asks of it, a scored Dataset of given Arrow tables, the runtime's functions patched in the module that looks them
up, the file run's pipeline with Ray's read and `score_dataset` replaced; and the bank the tests score (its ids, an
Arrow batch of ids and texts). It imports Ray: import it after `pytest.importorskip("ray")`.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import pyarrow as pa
import pytest
import ray
from jeirt_lite._ray import file_run

IDS = ["q0", "q1", "q2", "q3"]


def batch(ids: list[Any], texts: list[Any], id_type: Any = None) -> pa.Table:
    return pa.table({"id": pa.array(ids, type=id_type or pa.string()), "text": pa.array(texts, type=pa.string())})


class FakeDataset:
    """Records what `score_dataset` asks of a Ray Dataset."""

    def __init__(self, names: list[str], streaming_repartition: bool = True, types: Optional[dict[str, Any]] = None):
        self.names, self.streaming_repartition = names, streaming_repartition
        self.types = types or {}  # a column's Arrow type, when not a string
        self.repartitioned: Optional[int] = None
        self.mapped: dict[str, Any] = {}

    def schema(self) -> Any:
        return pa.schema([(name, self.types.get(name, pa.string())) for name in self.names])

    def repartition(self, *, target_num_rows_per_block: int) -> FakeDataset:
        if not self.streaming_repartition:
            raise TypeError("repartition() got an unexpected keyword argument 'target_num_rows_per_block'")
        self.repartitioned = target_num_rows_per_block
        return self

    def map_batches(self, fn: Any, **kwargs: Any) -> FakeDataset:
        self.mapped = {"fn": fn, **kwargs}
        return self


class FakeScored:
    """A scored Dataset of the given Arrow tables (its batches), as far as the forecast and the writer use it."""

    def __init__(self, tables: list[pa.Table]) -> None:
        self.tables = tables

    def map_batches(self, fn: Callable[..., Any], *, fn_kwargs: dict[str, Any], batch_format: str) -> Any:
        """The batches mapped by `fn` (to an Arrow table, or a dict of NumPy columns), whose rows the driver
        streams (`iter_rows`)."""
        assert batch_format == "pyarrow"
        rows = [row for table in self.tables for row in pa.table(fn(table, **fn_kwargs)).to_pylist()]
        return type("Mapped", (), {"iter_rows": lambda self: iter(rows)})()

    def iter_batches(self, *, batch_format: str, batch_size: Any) -> Any:
        assert (batch_format, batch_size) == ("pyarrow", None)
        return iter(self.tables)


class FakeRuntime:
    """ray.init, ray.shutdown and ray.is_initialized as score_file_on_ray calls them."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, running: bool) -> None:
        self.running, self.inits, self.shutdowns = running, [], 0
        monkeypatch.setattr(ray, "is_initialized", lambda: self.running)
        monkeypatch.setattr(ray, "init", lambda **kwargs: self.inits.append(kwargs))
        monkeypatch.setattr(ray, "shutdown", self.shutdown)

    def shutdown(self) -> None:
        self.shutdowns += 1


class Materializing(FakeScored):
    def __init__(self, tables: list[pa.Table]) -> None:
        super().__init__(tables)
        self.materialized = 0

    def materialize(self) -> Materializing:
        self.materialized += 1
        return self


class FakeBank:
    """The Dataset `ray.data.read_parquet` gives the pipeline: a bank whose schema is known before a row is read."""

    def __init__(self, path: str) -> None:
        self.path = path

    def schema(self) -> pa.Schema:
        return pa.schema([("key", pa.int64()), ("body", pa.string())])


def fake_pipeline(monkeypatch: pytest.MonkeyPatch, scored: Materializing) -> list[dict[str, Any]]:
    """`score_dataset` and Ray's read replaced in the pipeline: every bank scores as `scored`; returns the calls."""
    asked: list[dict[str, Any]] = []

    def score_dataset(ds: Any, router_path: Any, **kwargs: Any) -> Any:
        asked.append({"ds": ds.path, "router_path": router_path, **kwargs})
        return scored

    monkeypatch.setattr(ray.data, "read_parquet", FakeBank)
    monkeypatch.setattr(file_run, "score_dataset", score_dataset)
    return asked
