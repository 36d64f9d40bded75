"""The Ray engine's Dataset API (jeirt_lite.ray_engine, its jeirt_lite._ray.dataset) without a Ray runtime: the id
column, the pool size, what `score_dataset` asks of Ray Data (a Dataset that records its calls) and the forecast's
sums. Ray stands in as tests/ray_fakes.py's fakes, so nothing here schedules a task; tests/test_ray.py runs the
whole pipeline on a real runtime.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pyarrow as pa
import pytest
from jeirt_lite._artifact_files import read_router_files
from jeirt_lite._errors import JeirtError
from jeirt_lite.artifact import read_manifest

pytest.importorskip("ray", reason='needs Ray: pip install "jeirt-lite[ray]"')

import jeirt_lite.ray_engine as engine  # noqa: E402 - after the skip: the module imports Ray
import ray  # noqa: E402
from jeirt_lite._ray import dataset  # noqa: E402 - the engine's part whose names the tests replace
from jeirt_lite._ray.worker import BankScorer  # noqa: E402
from ray_fakes import IDS, FakeDataset, FakeScored, batch  # noqa: E402 - Ray's stand-ins


@pytest.fixture(scope="module")
def texts(real_texts: list[str]) -> list[str]:
    return real_texts[: len(IDS)]


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


# -- the forecast's sums ------------------------------------------------------------------------------------------


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
