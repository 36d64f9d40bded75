"""The Ray engine's parts (jeirt_lite.ray_engine, its modules in jeirt_lite._ray) run without a Ray runtime: the
worker's scorer on Arrow batches, the router files shipped to it, the id column, the pool size, what `score_dataset`
asks of Ray Data, the forecast's sums, the Parquet writer, the errors unwrapped and when `score_file_on_ray` starts
and stops Ray. Ray stands in as small fakes (a Dataset that records its calls, the runtime's functions patched, in
the module that looks them up), so nothing here schedules a task; tests/test_ray.py runs the whole pipeline on a
real runtime.
"""

from __future__ import annotations

import io
import logging
import re
import time
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from jeirt_lite import Router
from jeirt_lite._artifact_files import read_router_files
from jeirt_lite._errors import JeirtError
from jeirt_lite._io.parquet_stream import write_tables
from jeirt_lite._router import DEFAULT_ROUTER_PATH
from jeirt_lite.artifact import read_manifest
from jeirt_lite.batch import ScoreOptions, score_file

pytest.importorskip("ray", reason='needs Ray: pip install "jeirt-lite[ray]"')

import jeirt_lite.ray_engine as engine  # noqa: E402 - after the skip: the module imports Ray
import ray  # noqa: E402
from jeirt_lite._ray import dataset, file_run, quiet  # noqa: E402 - the engine's parts, whose names the tests replace
from jeirt_lite._ray.worker import BankScorer  # noqa: E402

IDS = ["q0", "q1", "q2", "q3"]


@pytest.fixture(scope="module")
def texts(real_texts: list[str]) -> list[str]:
    return real_texts[: len(IDS)]


def scorer(router_path: Path, *, k: int = 2, all_probabilities: bool = False, skip_bad: bool = False,
           router_files: Optional[dict[str, bytes]] = None) -> Any:
    return BankScorer(str(router_path), "text", "id", k, all_probabilities, skip_bad, 1, router_files)


def batch(ids: list[Any], texts: list[Any], id_type: Any = None) -> pa.Table:
    return pa.table({"id": pa.array(ids, type=id_type or pa.string()), "text": pa.array(texts, type=pa.string())})


# -- the worker's scorer ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("all_probabilities", [False, True])
def test_a_batch_whose_every_row_is_skipped_gives_an_empty_table_of_the_scored_schema(
    tiny_router_path: Path, texts: list[str], all_probabilities: bool
) -> None:
    score = scorer(tiny_router_path, k=2, all_probabilities=all_probabilities, skip_bad=True)
    full = score(batch(IDS, texts))
    empty = score(batch(IDS, [None, " ", "", None]))
    assert empty.num_rows == 0
    assert empty.schema == full.schema


def test_large_string_ids_come_out_as_the_single_machine_writer_s_strings(
    tiny_router_path: Path, texts: list[str]
) -> None:
    score = scorer(tiny_router_path)
    plain = score(batch(IDS, texts))
    large = score(batch(IDS, texts, pa.large_string()))
    assert large.schema.field("id").type == pa.string()
    assert large.equals(plain)


def test_skipped_rows_take_their_ids_with_them(tiny_router_path: Path, texts: list[str]) -> None:
    score = scorer(tiny_router_path, skip_bad=True)
    got = score(batch(IDS, [texts[0], None, texts[2], "  "]))
    assert got.column("id").to_pylist() == ["q0", "q2"]
    assert got.equals(score(batch(["q0", "q2"], [texts[0], texts[2]])))
    with pytest.raises(JeirtError, match="row with id 'q1': has no text"):
        scorer(tiny_router_path)(batch(IDS, [texts[0], None, texts[2], texts[3]]))


def test_a_worker_given_the_router_s_files_loads_its_own_copy(
    tiny_router_path: Path, tmp_path: Path, texts: list[str]
) -> None:
    files = read_router_files(tiny_router_path)
    shipped = scorer(tmp_path / "no_such_router", router_files=files)  # the path is not read
    assert shipped(batch(IDS, texts)).equals(scorer(tiny_router_path)(batch(IDS, texts)))


def test_the_router_s_files_are_every_file_of_its_folder_and_need_a_router_json(
    tiny_router_path: Path, tmp_path: Path
) -> None:
    files = read_router_files(tiny_router_path)
    assert sorted(files) == sorted(entry.name for entry in tiny_router_path.iterdir() if entry.is_file())
    assert files["router.json"] == (tiny_router_path / "router.json").read_bytes()
    folder = tmp_path / "not_a_router"
    (folder / "sub").mkdir(parents=True)
    (folder / "table.bin").write_bytes(b"\0")
    with pytest.raises(JeirtError, match="not_a_router: not a router folder"):
        read_router_files(folder)


# -- a bank without ids: its rows numbered ---------------------------------------------------------------------


def test_a_bank_without_ids_is_read_with_its_data_row_numbers_group_by_group(tmp_path: Path) -> None:
    from jeirt_lite._ray.row_numbers import ROW_NUMBER_COLUMN, read_row_groups, row_groups

    texts = [f"question {i}" for i in range(13)]
    path = tmp_path / "bank.parquet"
    pq.write_table(pa.table({"other": list(range(13)), "body": texts}), path, row_group_size=5)
    groups = row_groups(path)
    assert groups == [{"group": 0, "first": 1}, {"group": 1, "first": 6}, {"group": 2, "first": 11}]
    # Each read task reads its groups, batch_size rows at a time, in any order the tasks run.
    later, earlier = pa.Table.from_pylist(groups[1:]), pa.Table.from_pylist(groups[:1])
    tables = list(read_row_groups(later, str(path), "body", 2)) + list(read_row_groups(earlier, str(path), "body", 2))
    assert [table.num_rows for table in tables] == [2, 2, 1, 2, 1, 2, 2, 1]
    assert all(table.column_names == [ROW_NUMBER_COLUMN, "body"] for table in tables)
    numbered = pa.concat_tables(tables).sort_by(ROW_NUMBER_COLUMN)
    assert numbered.column(ROW_NUMBER_COLUMN).to_pylist() == list(range(1, 14))
    assert numbered.column(ROW_NUMBER_COLUMN).type == pa.int64()  # as one machine writes row numbers
    assert numbered.column("body").to_pylist() == texts


@pytest.mark.parametrize("row_group_size", [None, 0])
def test_an_empty_bank_without_ids_still_gives_its_columns(tmp_path: Path, row_group_size: Optional[int]) -> None:
    from jeirt_lite._ray.row_numbers import ROW_NUMBER_COLUMN, read_row_groups, row_groups

    path = tmp_path / "empty.parquet"
    empty = pa.table({"text": pa.array([], pa.large_string())})
    if row_group_size is None:
        pq.write_table(empty, path)  # one row group of no rows
    else:
        pq.ParquetWriter(str(path), empty.schema).close()  # no row group at all
    tables = list(read_row_groups(pa.Table.from_pylist(row_groups(path)), str(path), "text", 4))
    assert [table.num_rows for table in tables] == [0]
    assert tables[0].schema == pa.schema([(ROW_NUMBER_COLUMN, pa.int64()), ("text", pa.large_string())])


def test_a_bad_row_of_a_numbered_bank_is_named_by_its_number(tiny_router_path: Path, texts: list[str]) -> None:
    from jeirt_lite._ray.row_numbers import ROW_NUMBER_COLUMN

    numbered = BankScorer(str(tiny_router_path), "text", ROW_NUMBER_COLUMN, 1, False, False, 1)
    rows = pa.table({ROW_NUMBER_COLUMN: pa.array([7, 8], pa.int64()), "text": [texts[0], " "]})
    with pytest.raises(JeirtError, match=r"^data row 8 \(1-based\): text is empty"):
        numbered(rows)


# -- the id column and the pool size ------------------------------------------------------------------------------


def test_the_id_column_is_the_named_one_else_the_first_of_id_question_id_qid() -> None:
    assert engine.find_id_column(["text", "key", "id"], "text", "key") == "key"
    assert engine.find_id_column(["text", "qid", "id"], "text", None) == "id"
    assert engine.find_id_column(["qid", "question_id", "text"], "text", None) == "question_id"
    assert engine.find_id_column(["qid", "text"], "text", None) == "qid"
    with pytest.raises(JeirtError, match="no id column 'key'"):
        engine.find_id_column(["text", "id"], "text", "key")
    with pytest.raises(JeirtError, match="no text column 'body'"):
        engine.find_id_column(["text", "id"], "body", "id")
    with pytest.raises(JeirtError, match="needs an id column"):
        engine.find_id_column(["text"], "text", None)


@pytest.mark.parametrize(("cpus", "threads", "workers"), [(1, 1, 1), (2, 1, 1), (3, 1, 2), (9, 2, 4), (9, 4, 2), (2, 4, 1)])
def test_the_default_pool_leaves_one_cpu_to_the_reads(
    monkeypatch: pytest.MonkeyPatch, cpus: int, threads: int, workers: int
) -> None:
    monkeypatch.setattr(ray, "is_initialized", lambda: True)
    monkeypatch.setattr(ray, "cluster_resources", lambda: {"CPU": float(cpus)})
    assert dataset._default_concurrency(threads) == workers


def test_the_default_pool_starts_ray_when_none_runs_and_counts_the_usable_cores_without_a_cpu_resource(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[dict[str, Any]] = []
    monkeypatch.setattr(ray, "is_initialized", lambda: bool(started))
    monkeypatch.setattr(ray, "init", lambda **kwargs: started.append(kwargs))
    monkeypatch.setattr(ray, "cluster_resources", lambda: {})
    monkeypatch.setattr(dataset, "usable_cores", lambda: 5)  # the cores this process may use, a CPU limit included
    assert dataset._default_concurrency(1) == 4
    assert started == [{"include_dashboard": False, "num_cpus": 5}]
    assert dataset._default_concurrency(1) == 4 and len(started) == 1  # running now: not started again
    monkeypatch.setattr(dataset, "usable_cores", lambda: 1)
    assert dataset._default_concurrency(1) == 1


# -- what score_dataset asks of Ray Data --------------------------------------------------------------------------


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


def test_score_dataset_hands_ray_the_scorer_its_arguments_and_the_pool(tiny_router_path: Path) -> None:
    ds = FakeDataset(["question_id", "text"])
    assert engine.score_dataset(ds, tiny_router_path, k=2, batch_size=40, concurrency=3, threads_per_worker=2) is ds
    assert ds.repartitioned == 40
    mapped = ds.mapped
    assert mapped["fn"] is BankScorer
    assert mapped["fn_constructor_kwargs"] == {
        "router_path": str(tiny_router_path.resolve()), "text_column": "text", "id_column": "question_id", "k": 2,
        "all_probabilities": False, "skip_bad": False, "threads": 2, "router_files": None,
        "routing": {"llms": None, "cost_weight": 0.0, "min_probability": None}, "costs": None, "group_column": None,
    }
    assert (mapped["batch_size"], mapped["batch_format"], mapped["num_cpus"]) == (40, "pyarrow", 2)
    assert (mapped["compute"].min_size, mapped["compute"].max_size) == (3, 3)


def test_score_dataset_ships_the_router_only_when_asked_and_sizes_the_pool_by_default(
    tiny_router_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dataset, "_default_concurrency", lambda threads: 7 * threads)
    ds = FakeDataset(["id", "text"], streaming_repartition=False)  # an older Ray: the blocks stay as read
    engine.score_dataset(ds, tiny_router_path, ship_router=True, threads_per_worker=2)
    assert ds.repartitioned is None
    assert ds.mapped["fn_constructor_kwargs"]["router_files"] == read_router_files(tiny_router_path)
    assert ds.mapped["batch_size"] == engine.DEFAULT_BATCH_SIZE
    assert ds.mapped["compute"].min_size == 14


def test_score_dataset_s_defaults_are_the_command_line_s(tiny_router_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dataset, "_default_concurrency", lambda threads: threads)
    ds = FakeDataset(["id", "text"])
    engine.score_dataset(ds, tiny_router_path)
    given = ds.mapped["fn_constructor_kwargs"]
    assert (given["text_column"], given["id_column"], given["k"], given["threads"]) == ("text", "id", 1, 1)
    assert not given["all_probabilities"] and not given["skip_bad"] and given["router_files"] is None
    assert ds.mapped["num_cpus"] == 1


def test_score_dataset_refuses_a_text_column_named_empty(tiny_router_path: Path) -> None:
    # '' names a column, as on one machine: not the default's `text`, which the dataset has.
    with pytest.raises(JeirtError, match="no text column ''"):
        engine.score_dataset(FakeDataset(["id", "text"]), tiny_router_path, text_column="", concurrency=1)


def test_score_dataset_without_a_text_column_says_what_it_looked_for(tiny_router_path: Path) -> None:
    # The words of one machine's reader (TextReader), not a column `text` the caller never named.
    with pytest.raises(JeirtError, match=r"no text column \(looked for 'text', 'question', 'prompt'; columns: id, body\)"):
        engine.score_dataset(FakeDataset(["id", "body"]), tiny_router_path, concurrency=1)


@pytest.mark.parametrize(("types", "group", "refused"), [
    ({"id": pa.float64()}, None, "id column 'id' is of type double: "),
    ({"subject": pa.bool_()}, "subject", "group column 'subject' is of type bool: "),
])
def test_score_dataset_refuses_an_id_or_group_column_of_a_type_no_row_can_use_before_any_work(
    tiny_router_path: Path, types: dict[str, Any], group: Optional[str], refused: str
) -> None:
    ds = FakeDataset(["id", "text", "subject"], types=types)
    with pytest.raises(JeirtError, match="^" + re.escape(refused)):
        engine.score_dataset(ds, tiny_router_path, concurrency=1, skip_bad=True, group_column=group)
    assert ds.mapped == {}


def test_score_dataset_hands_the_workers_route_s_rules_checked_before_any_work(
    tiny_router_path: Path, texts: list[str]
) -> None:
    names = list(read_manifest(tiny_router_path).llms)
    ds = FakeDataset(["id", "text"])
    engine.score_dataset(ds, tiny_router_path, k=1, llms=names[1:], concurrency=1)
    routing = ds.mapped["fn_constructor_kwargs"]["routing"]
    assert routing == {"llms": tuple(names[1:]), "cost_weight": 0.0, "min_probability": None}
    worker = BankScorer(str(tiny_router_path), "text", "id", 1, False, False, 1, None, routing)
    chosen = worker(batch(IDS, texts)).column("llm_1").to_pylist()
    assert names[0] not in chosen
    untouched = FakeDataset(["id", "text"])
    with pytest.raises(JeirtError, match="unknown LLM 'nope'"):
        engine.score_dataset(untouched, tiny_router_path, llms=["nope"], concurrency=1)
    assert untouched.mapped == {}


def test_score_dataset_hands_the_workers_the_given_costs_in_place_of_the_stored_ones(
    tiny_router_path: Path, texts: list[str], tmp_path: Path
) -> None:
    from jeirt_lite import Router

    router = Router.load(tiny_router_path, threads=1)
    stored = {name: 0.0 if name == "llm-0" else 5.0 for name in router.llms}  # llm-0 free, the rest dear
    priced = router.with_costs(stored).save(tmp_path / "priced")
    given = {"llm-1": 0.0, "llm-2": 5.0}  # llm-0 has no cost in this run: replaced, not merged
    ds = FakeDataset(["id", "text"])
    engine.score_dataset(ds, priced, cost_weight=1.0, costs=given, concurrency=1)
    handed = ds.mapped["fn_constructor_kwargs"]
    assert handed["costs"] == given
    worker = BankScorer(str(priced), "text", "id", 1, False, False, 1, None, handed["routing"], given)
    assert worker.router.costs == given
    expected = router.route(texts, 1, costs=given, cost_weight=1.0).names
    assert worker(batch(IDS, texts)).column("llm_1").to_pylist() == [names[0] for names in expected]
    for bad, message in (({"nope": 1.0}, "costs: costs names unknown LLM 'nope'"), ({"llm-1": -1.0}, "finite")):
        untouched = FakeDataset(["id", "text"])
        with pytest.raises(JeirtError, match=message):
            engine.score_dataset(untouched, priced, cost_weight=1.0, costs=bad, concurrency=1)
        assert untouched.mapped == {}


def test_score_dataset_refuses_a_weight_that_overflows_the_costs_before_any_work(
    tiny_router_path: Path, tmp_path: Path
) -> None:
    # It was refused by the workers' first batch, once Ray had started them.
    from jeirt_lite import Router

    router = Router.load(tiny_router_path, threads=1)
    costly = router.with_costs({name: 10.0 for name in router.llms}).save(tmp_path / "costly")
    untouched = FakeDataset(["id", "text"])
    with pytest.raises(JeirtError, match=r"cost_weight 1e\+308 times the costs overflows"):
        engine.score_dataset(untouched, costly, cost_weight=1e308, concurrency=1)
    assert untouched.mapped == {}


@pytest.mark.parametrize("concurrency", [0, -1])
def test_score_dataset_refuses_a_pool_of_no_workers(tiny_router_path: Path, concurrency: int) -> None:
    with pytest.raises(JeirtError, match="concurrency"):
        engine.score_dataset(FakeDataset(["id", "text"]), tiny_router_path, concurrency=concurrency)


# -- the forecast's sums and the Parquet writer -------------------------------------------------------------------


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


def p_table(values: dict[str, list[float]]) -> pa.Table:
    return pa.table({name: pa.array(column, type=pa.float32()) for name, column in values.items()})


def test_the_forecast_is_each_llm_s_mean_over_every_batch_summed_in_float64() -> None:
    batches = [{"a": [0.25, 0.5, 1.0], "b": [0.1, 0.2, 0.3]}, {"a": [0.75], "b": [0.9]}, {"a": [], "b": []}]
    means, count = engine.expected_accuracy(FakeScored([p_table(
        {f"p[{name}]": column for name, column in values.items()}) for values in batches]), ["b", "a"])
    assert count == 4
    for name in ("a", "b"):
        every = np.concatenate([np.asarray(values[name], dtype=np.float32) for values in batches])
        assert means[name] == every.astype(np.float64).sum() / 4
    assert list(means) == ["b", "a"]


def test_no_question_scored_gives_no_forecast() -> None:
    with pytest.raises(JeirtError, match="no question was scored"):
        engine.expected_accuracy(FakeScored([p_table({"p[a]": []})]), ["a"])


def test_the_writer_streams_the_batches_in_order_dropping_what_it_is_told(tmp_path: Path) -> None:
    tables = [pa.table({"id": ["q0", "q1"], "p[a]": [0.5, 0.25]}), pa.table({"id": [], "p[a]": []}),
              pa.table({"id": ["q2"], "p[a]": [1.0]})]
    schema = pa.schema([("id", pa.int64()), ("p[a]", pa.float32())])  # written only when no table comes
    output = tmp_path / "scores.parquet"
    assert write_tables(iter(tables), output, ["p[a]"], schema) == 3
    assert pq.read_table(output).to_pydict() == {"id": ["q0", "q1", "q2"]}
    assert write_tables(iter(tables), output, [], schema) == 3
    assert pq.read_table(output).column_names == ["id", "p[a]"]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["scores.parquet"]


def test_the_writer_given_no_table_writes_a_file_of_no_rows_with_the_schema(tmp_path: Path) -> None:
    # Ray Data drops empty batches: an empty bank, or one whose every row was skipped, comes as no table at all.
    schema = pa.schema([("id", pa.int64()), ("llm_1", pa.string()), ("p[a]", pa.float32())])
    output = tmp_path / "none.parquet"
    assert write_tables(iter([]), output, ["p[a]"], schema) == 0
    written = pq.read_table(output)
    assert written.num_rows == 0 and written.schema == pa.schema([("id", pa.int64()), ("llm_1", pa.string())])
    assert sorted(path.name for path in tmp_path.iterdir()) == ["none.parquet"]


@pytest.mark.parametrize(("id_type", "written"), [(pa.string(), pa.string()), (pa.large_string(), pa.string()),
                                                  (pa.int64(), pa.int64())])
def test_the_scores_of_no_rows_have_the_columns_and_types_of_a_scored_batch(
    tiny_router_path: Path, texts: list[str], id_type: Any, written: Any
) -> None:
    from jeirt_lite._ray.worker import empty_scores

    llms = read_manifest(tiny_router_path).llms
    for k, all_probabilities in ((1, False), (3, True)):
        ids = list(range(len(texts))) if pa.types.is_integer(id_type) else IDS
        full = scorer(tiny_router_path, k=k, all_probabilities=all_probabilities)(batch(ids, texts, id_type))
        empty = empty_scores(pa, id_type, k, llms, all_probabilities)
        assert empty.num_rows == 0 and empty.schema == full.schema
        assert empty.schema.field("id").type == written


# -- the errors that come back, and starting and stopping Ray -----------------------------------------------------


def test_a_worker_s_jeirt_error_is_found_in_ray_s_wrapping() -> None:
    from ray.exceptions import RayTaskError

    error = JeirtError("row with id 'q7': has no text")
    assert engine.unwrap_error(error) is error
    outer = RuntimeError("the pipeline failed")
    outer.__cause__ = ValueError("inner")
    outer.__cause__.__cause__ = error
    assert engine.unwrap_error(outer) is error
    wrapped = RayTaskError("map_batches", "Traceback ...", error)  # Ray's cause attribute, not __cause__
    assert engine.unwrap_error(wrapped) is error
    from_text = engine.unwrap_error(RuntimeError("UserCodeException\njeirt_lite.JeirtError: a bad row\n"))
    assert isinstance(from_text, JeirtError) and str(from_text) == "a bad row"
    looped = ValueError("no JeirtError here")
    looped.__cause__ = RuntimeError("nor here")
    looped.__cause__.__cause__ = looped
    assert engine.unwrap_error(looped) is None


def test_a_pipeline_error_that_holds_no_jeirt_error_is_raised_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*_: Any) -> Any:
        raise failure

    monkeypatch.setattr(file_run, "_run_pipeline", fail)
    failure: Exception = RuntimeError("JeirtError: row with id 'q1': has no text (missing or null)")
    with pytest.raises(JeirtError, match="^row with id 'q1'") as caught:
        file_run._score_on_ray(None, Path("router"), [], False)  # type: ignore[arg-type]
    assert caught.value is not failure
    failure = OSError("disk full")
    with pytest.raises(OSError) as raised:
        file_run._score_on_ray(None, Path("router"), [], False)  # type: ignore[arg-type]
    assert raised.value is failure


class FakeRuntime:
    """ray.init, ray.shutdown and ray.is_initialized as score_file_on_ray calls them."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, running: bool) -> None:
        self.running, self.inits, self.shutdowns = running, [], 0
        monkeypatch.setattr(ray, "is_initialized", lambda: self.running)
        monkeypatch.setattr(ray, "init", lambda **kwargs: self.inits.append(kwargs))
        monkeypatch.setattr(ray, "shutdown", self.shutdown)

    def shutdown(self) -> None:
        self.shutdowns += 1


@pytest.fixture
def parquet_bank(tmp_path: Path, texts: list[str]) -> Path:
    path = tmp_path / "bank.parquet"
    pq.write_table(batch(IDS, texts), path)
    return path


@pytest.mark.parametrize(("running", "address", "cores", "quiet"), [
    (False, None, 3, False), (False, None, 1, True), (False, "ray://head:10001", 3, True), (True, None, 3, False),
])
def test_ray_is_started_for_the_call_only_when_none_runs_and_stopped_after_it(
    monkeypatch: pytest.MonkeyPatch, tiny_router_path: Path, parquet_bank: Path, tmp_path: Path,
    running: bool, address: Optional[str], cores: int, quiet: bool,
) -> None:
    runtime = FakeRuntime(monkeypatch, running)
    monkeypatch.setattr(file_run, "usable_cores", lambda: cores)
    runs: list[Any] = []

    def pipeline(run: Any, router_path: Path, llms: Any, show_progress: bool) -> Any:
        runs.append((run, router_path, show_progress))
        return 3, None, 0.5

    monkeypatch.setattr(file_run, "_score_on_ray", pipeline)
    output = tmp_path / "scores.parquet"
    summary = engine.score_file_on_ray(parquet_bank, router_path=tiny_router_path, output=output, address=address,
                                       quiet=quiet)
    assert (summary.rows, summary.skipped, summary.seconds, summary.output) == (3, 1, 0.5, output)
    run, router_path, show_progress = runs[0]
    assert run.options == ScoreOptions() and router_path == tiny_router_path and not show_progress
    if running:
        assert runtime.inits == [] and runtime.shutdowns == 0
    else:
        cpus = None if address else cores  # a local runtime on the cores this process may use
        # Quiet: only errors from the driver's "ray" logger (a joined cluster's own processes log as they do).
        assert runtime.inits == [{"address": address, "num_cpus": cpus, "include_dashboard": False,
                                  "log_to_driver": False, "logging_level": logging.ERROR if quiet else logging.INFO}]
        assert runtime.shutdowns == 1


def test_score_file_on_ray_takes_str_paths_as_score_file_does_and_refuses_no_input_in_words(
    monkeypatch: pytest.MonkeyPatch, tiny_router_path: Path, parquet_bank: Path
) -> None:
    FakeRuntime(monkeypatch, running=True)
    runs: list[Any] = []
    monkeypatch.setattr(file_run, "_score_on_ray", lambda run, *_: runs.append(run) or (4, None, 0.5))
    monkeypatch.chdir(parquet_bank.parent)
    summary = engine.score_file_on_ray("bank.parquet", router_path=str(tiny_router_path), output="scores.parquet")
    assert summary.output == Path("scores.parquet")
    assert (runs[0].input_path, runs[0].output) == (Path("bank.parquet"), Path("scores.parquet"))
    with pytest.raises(JeirtError, match="give an input file of question texts"):
        engine.score_file_on_ray(None, output="scores.parquet")  # type: ignore[arg-type]


def test_quiet_holds_back_ray_data_s_console_lines_for_the_run_only(monkeypatch: pytest.MonkeyPatch) -> None:
    console = io.StringIO()
    for handler in logging.getLogger("ray.data").handlers:  # its console writes to the stderr of its creation
        if isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler):
            monkeypatch.setattr(handler, "stream", console)
    data_logger = logging.getLogger("ray.data.jeirt_test")  # a child: its records reach Ray Data's handlers
    with quiet.ray_data_console(True):
        data_logger.error("held back")
    with quiet.ray_data_console(False):
        data_logger.info("shown when not quiet")
    data_logger.info("shown after")
    err = console.getvalue()
    assert "held back" not in err and "shown when not quiet" in err and "shown after" in err


def test_ray_started_for_the_call_is_stopped_when_the_run_fails(
    monkeypatch: pytest.MonkeyPatch, tiny_router_path: Path, parquet_bank: Path, tmp_path: Path
) -> None:
    runtime = FakeRuntime(monkeypatch, running=False)

    def pipeline(*_: Any) -> Any:
        raise JeirtError("a bad row")

    monkeypatch.setattr(file_run, "_score_on_ray", pipeline)
    with pytest.raises(JeirtError, match="a bad row"):
        engine.score_file_on_ray(parquet_bank, router_path=tiny_router_path, output=tmp_path / "s.parquet")
    assert runtime.shutdowns == 1


def test_the_forecast_alone_needs_no_output_and_the_default_router_is_the_shipped_one(
    monkeypatch: pytest.MonkeyPatch, parquet_bank: Path
) -> None:
    FakeRuntime(monkeypatch, running=True)
    seen: list[Path] = []

    def pipeline(run: Any, router_path: Path, llms: Any, show_progress: bool) -> Any:
        seen.append(router_path)
        return 4, {name: 0.5 for name in llms}, 0.5

    monkeypatch.setattr(file_run, "_score_on_ray", pipeline)
    summary = engine.score_file_on_ray(parquet_bank, options=ScoreOptions(forecast=True))
    assert seen == [DEFAULT_ROUTER_PATH]
    assert summary.output is None and summary.forecast is not None
    assert list(summary.forecast) == list(read_manifest(DEFAULT_ROUTER_PATH).llms)


def test_an_output_that_would_replace_the_bank_is_refused_before_ray_starts(
    monkeypatch: pytest.MonkeyPatch, tiny_router_path: Path, parquet_bank: Path
) -> None:
    runtime = FakeRuntime(monkeypatch, running=False)
    before = parquet_bank.read_bytes()
    with pytest.raises(JeirtError, match="bank.parquet"):
        engine.score_file_on_ray(parquet_bank, router_path=tiny_router_path, output=parquet_bank)
    assert runtime.inits == [] and parquet_bank.read_bytes() == before


def test_a_bank_naming_a_column_twice_is_refused_as_on_one_machine_before_ray_starts(
    monkeypatch: pytest.MonkeyPatch, tiny_router_path: Path, tmp_path: Path
) -> None:
    # The footer's columns were read into a mapping, which kept one of the two: Ray then failed in its reader.
    runtime = FakeRuntime(monkeypatch, running=False)
    bank = tmp_path / "bank.parquet"
    pq.write_table(pa.table([pa.array(["a"]), pa.array(["What is 2 + 2?"]), pa.array(["b"])],
                            names=["id", "text", "id"]), bank)
    with pytest.raises(JeirtError, match=r"bank.parquet: the header names the column 'id' twice$") as on_ray:
        engine.score_file_on_ray(bank, router_path=tiny_router_path, output=tmp_path / "out.parquet")
    with pytest.raises(JeirtError) as locally:
        score_file(Router.load(tiny_router_path), input_path=bank, output=tmp_path / "local.parquet")
    assert str(on_ray.value) == str(locally.value)
    assert runtime.inits == [] and not (tmp_path / "out.parquet").exists()


def test_a_bank_missing_both_its_id_and_group_columns_is_named_for_the_same_one_as_on_one_machine(
    monkeypatch: pytest.MonkeyPatch, tiny_router_path: Path, tmp_path: Path
) -> None:
    runtime = FakeRuntime(monkeypatch, running=False)
    bank = tmp_path / "bank.parquet"
    pq.write_table(pa.table({"text": ["What is 2 + 2?"]}), bank)
    options = ScoreOptions(forecast_by="subject")
    with pytest.raises(JeirtError, match="no group column 'subject'") as on_ray:
        engine.score_file_on_ray(bank, router_path=tiny_router_path, options=options, id_column="qid")
    with pytest.raises(JeirtError) as locally:
        score_file(Router.load(tiny_router_path), input_path=bank, id_column="qid", options=options)
    assert str(on_ray.value) == str(locally.value)
    assert runtime.inits == []


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


@pytest.mark.parametrize(("write", "forecast", "all_probabilities"),
                         [(True, False, False), (True, True, False), (True, True, True), (False, True, False)])
def test_the_pipeline_scores_once_for_both_passes_keeps_the_order_and_drops_the_forecast_s_columns(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, write: bool, forecast: bool, all_probabilities: bool
) -> None:
    context = ray.data.DataContext.get_current()
    monkeypatch.setattr(context.execution_options, "preserve_order", False)
    monkeypatch.setattr(context, "enable_progress_bars", True)
    columns = {"id": ["q0", "q1", "q2"], "llm_1": ["a", "b", "a"], "p[a]": [0.5, 0.25, 1.0], "p[b]": [0.5, 0.5, 0.5]}
    scored = Materializing([pa.table(columns)])
    asked = fake_pipeline(monkeypatch, scored)
    options = ScoreOptions(k=1, all_probabilities=all_probabilities, forecast=forecast, chunk_size=40, skip_bad=True,
                           llms=("b",), min_probability=0.25)
    output = tmp_path / "scores.parquet" if write else None
    run = file_run._FileRun(tmp_path / "bank.parquet", output, "body", "key", options, 2, True, {"b": 1.0})
    started = time.perf_counter()
    rows, means, seconds = file_run._run_pipeline(run, Path("router"), ["a", "b"], False)
    assert 0 <= seconds <= time.perf_counter() - started
    assert context.execution_options.preserve_order and not context.enable_progress_bars
    assert asked == [{
        "ds": str((tmp_path / "bank.parquet").resolve()), "router_path": Path("router"),
        "text_column": "body", "id_column": "key", "k": 1, "all_probabilities": all_probabilities or forecast,
        "skip_bad": True, "batch_size": 40, "threads_per_worker": 2, "ship_router": True,
        "llms": ("b",), "cost_weight": 0.0, "min_probability": 0.25, "costs": {"b": 1.0}, "group_column": None,
    }]
    assert rows == 3
    # What a failed run's note counts: the rows written, or all of them once the forecast's pass scored them.
    assert run.state.rows_scored == 3
    assert scored.materialized == (1 if write and forecast else 0)  # scored once, read by both passes
    assert means == ({"a": pytest.approx(1.75 / 3), "b": 0.5} if forecast else None)
    if output is not None:
        kept = list(columns) if all_probabilities or not forecast else ["id", "llm_1"]
        assert pq.read_table(output).column_names == kept


@pytest.mark.parametrize("all_probabilities", [False, True])
def test_the_pipeline_writes_an_empty_file_of_the_bank_s_id_type_when_no_batch_comes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, all_probabilities: bool
) -> None:
    """An empty bank, or one whose every row is skipped (Ray Data then streams no batch at all): a file of no rows
    with the scored columns, as on one machine; --forecast still refuses, and then writes nothing."""
    fake_pipeline(monkeypatch, Materializing([]))
    output = tmp_path / "scores.parquet"
    options = ScoreOptions(k=2, all_probabilities=all_probabilities)
    run = file_run._FileRun(tmp_path / "bank.parquet", output, "body", "key", options, 1, False)
    assert file_run._run_pipeline(run, Path("router"), ["a", "b"], False)[:2] == (0, None)
    written = pq.read_table(output)
    probabilities = ["p[a]", "p[b]"] if all_probabilities else []
    assert written.num_rows == 0
    assert written.column_names == ["id", "llm_1", "p_1", "llm_2", "p_2", "difficulty", *probabilities]
    assert written.schema.field("id").type == pa.int64()  # the bank's id type, as a scored batch keeps it
    output.unlink()
    run = file_run._FileRun(tmp_path / "bank.parquet", output, "body", "key", ScoreOptions(forecast=True), 1, False)
    with pytest.raises(JeirtError, match="no question was scored, so there is no forecast"):
        file_run._run_pipeline(run, Path("router"), ["a", "b"], False)
    assert not output.exists() and not list(tmp_path.iterdir())
