"""`score --forecast-by COLUMN --engine ray` in parts, without a Ray runtime (as the tests of the engine's other
parts, tests/test_ray_worker.py, test_ray_dataset.py and test_ray_file_run.py, whose fakes in tests/ray_fakes.py it
takes): the worker carries each row's group value beside its scores under the single-machine reader's rules, each
batch is summed per group where it is, the driver adds those rows into the forecast one machine gives
(`_group_forecast.GroupSums` fed row by row, the oracle here), and the file run checks the column before Ray starts,
drops the group column from the output and returns the forecast per group. tests/test_ray_parity.py compares both
engines on a real runtime."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from jeirt_lite._errors import JeirtError
from jeirt_lite._group_forecast import MAX_GROUPS, GroupForecast, GroupSums
from jeirt_lite.artifact import read_manifest
from jeirt_lite.batch import ScoreOptions

pytest.importorskip("ray", reason='needs Ray: pip install "jeirt-lite[ray]"')

import jeirt_lite.ray_engine as engine  # noqa: E402 - after the skip: the module imports Ray
import ray  # noqa: E402
from jeirt_lite._ray import dataset, file_run  # noqa: E402
from jeirt_lite._ray.group_sums import GROUP_COLUMN, batch_group_sums, expected_accuracy_by  # noqa: E402
from jeirt_lite._ray.row_numbers import ROW_NUMBER_COLUMN, read_row_groups, row_groups  # noqa: E402
from jeirt_lite._ray.worker import BankScorer  # noqa: E402
from ray_fakes import (  # noqa: E402 - the fakes of the engine's other parts' tests
    IDS,
    FakeBank,
    FakeDataset,
    FakeRuntime,
    FakeScored,
    Materializing,
    fake_pipeline,
)

LLMS = ["b", "a"]


@pytest.fixture(scope="module")
def texts(real_texts: list[str]) -> list[str]:
    return real_texts[: len(IDS)]


def grouped_scorer(router_path: Path, *, skip_bad: bool = False, id_column: str = "id") -> Any:
    return BankScorer(str(router_path), "text", id_column, 1, True, skip_bad, 1, group_column="subject")


def bank_batch(texts: list[Any], subjects: Any, ids: Any = None) -> pa.Table:
    return pa.table({"id": pa.array(ids or IDS, pa.string()), "text": pa.array(texts, pa.string()),
                     "subject": subjects})


# -- the worker ---------------------------------------------------------------------------------------------------


def test_the_worker_carries_each_row_s_group_as_text_beside_its_unchanged_scores(
    tiny_router_path: Path, texts: list[str]
) -> None:
    plain = BankScorer(str(tiny_router_path), "text", "id", 1, True, False, 1)(bank_batch(texts, ["x"] * 4))
    # An integer column: each value read as its digits, as a CSV cell is (one machine reads it so).
    got = grouped_scorer(tiny_router_path)(bank_batch(texts, pa.array([3, 10, 3, 7], pa.int64())))
    assert got.column(GROUP_COLUMN).to_pylist() == ["3", "10", "3", "7"]
    assert got.column(GROUP_COLUMN).type == pa.string()
    assert got.drop_columns([GROUP_COLUMN]).equals(plain)


@pytest.mark.parametrize(("value", "problem"), [
    (None, "has no group value (missing or null)"),
    ("  ", "group value is empty"),
    (2.5, "group value '2.5' is a float, not a string or an integer"),
])
def test_a_bad_group_value_stops_the_worker_naming_the_row_as_one_machine_does(
    tiny_router_path: Path, texts: list[str], value: Any, problem: str
) -> None:
    # A column holds one type: every value of a float column is bad, the first row stops the batch.
    row, subjects = (0, [value] * 4) if isinstance(value, float) else (1, ["law", value, "law", "law"])
    with pytest.raises(JeirtError) as raised:
        grouped_scorer(tiny_router_path)(bank_batch(texts, subjects))
    assert str(raised.value) == f"row with id 'q{row}': {problem}; fix the row or pass skip_bad=True to skip such rows"


def test_a_bad_group_value_of_a_numbered_bank_is_named_by_its_data_row(
    tiny_router_path: Path, texts: list[str]
) -> None:
    rows = pa.table({ROW_NUMBER_COLUMN: pa.array([7, 8], pa.int64()), "text": texts[:2], "subject": ["law", ""]})
    with pytest.raises(JeirtError, match=r"^data row 8 \(1-based\): group value is empty"):
        grouped_scorer(tiny_router_path, id_column=ROW_NUMBER_COLUMN)(rows)


def test_skipped_rows_take_their_group_values_with_them_and_a_batch_of_none_keeps_the_columns(
    tiny_router_path: Path, texts: list[str]
) -> None:
    score = grouped_scorer(tiny_router_path, skip_bad=True)
    full = score(bank_batch(texts, ["law", "law", "math", "law"]))
    got = score(bank_batch([texts[0], None, texts[2], texts[3]], ["law", "law", "math", None]))
    assert got.column("id").to_pylist() == ["q0", "q2"]
    assert got.column(GROUP_COLUMN).to_pylist() == ["law", "math"]
    empty = score(bank_batch(texts, [None, " ", "", None]))
    assert empty.num_rows == 0 and empty.schema == full.schema  # the writer drops GROUP_COLUMN from every table


# -- the per-batch sums and the driver's ---------------------------------------------------------------------


def scored_table(groups: list[str], probabilities: list[list[float]]) -> pa.Table:
    """A scored batch as the worker gives it, as far as the forecast reads it (p columns in float32)."""
    columns = np.asarray(probabilities, dtype=np.float32).reshape(len(groups), len(LLMS))
    table = {f"p[{name}]": pa.array(columns[:, j], pa.float32()) for j, name in enumerate(LLMS)}
    return pa.table({"id": [f"q{i}" for i in range(len(groups))], **table, GROUP_COLUMN: pa.array(groups, pa.string())})


def test_a_batch_is_summed_per_group_in_float64_one_row_per_group() -> None:
    table = scored_table(["law", "math", "law"], [[0.25, 0.5], [0.1, 0.2], [0.75, 0.125]])
    partial = batch_group_sums(table, LLMS).to_pylist()
    assert partial == [
        {GROUP_COLUMN: "law", "count": 2, "p[b]": 0.25 + 0.75, "p[a]": 0.5 + 0.125},
        {GROUP_COLUMN: "math", "count": 1, "p[b]": float(np.float32(0.1)), "p[a]": float(np.float32(0.2))},
    ]
    assert batch_group_sums(table.slice(0, 0), LLMS).num_rows == 0


def test_the_driver_s_forecast_is_one_machine_s_over_every_batch_whatever_the_batches() -> None:
    rng = np.random.default_rng(7)
    groups = [str(g) for g in rng.choice(["law", "math", "3", "computer science"], 40)]
    probabilities = rng.random((40, len(LLMS))).astype(np.float32)
    bounds = [0, 5, 6, 6, 23, 40]  # one batch of no rows (Ray may drop it, or not)
    batches = [scored_table(groups[lo:hi], probabilities[lo:hi].tolist()) for lo, hi in zip(bounds, bounds[1:])]
    arrived: list[int] = []
    got = expected_accuracy_by(FakeScored(batches), LLMS, "subject", on_rows=arrived.append)
    oracle = GroupSums(LLMS, "subject")  # one machine: the rows in order, each one added to its group
    oracle.add(groups, probabilities)
    expected = oracle.result()
    assert isinstance(got, GroupForecast)
    assert (got.column, list(got.groups), got.counts) == ("subject", list(expected.groups), expected.counts)
    assert list(got.groups) == sorted(set(groups))  # in their text's order, whatever order the batches came in
    assert sum(arrived) == 40  # each batch group's rows counted as they arrive
    for group, means in expected.groups.items():
        assert got.groups[group] == pytest.approx(means, rel=1e-12)
    assert got.overall == pytest.approx(expected.overall, rel=1e-12)


@pytest.mark.parametrize("per_batch", [2, MAX_GROUPS + 1], ids=["a few groups a batch", "all in one batch"])
def test_more_groups_than_a_table_can_show_are_refused_across_batches_in_one_machine_s_words(
    per_batch: int,
) -> None:
    # With a few groups a batch, only the driver sees them all; with all of them in one, the worker's sums
    # must not refuse them first, naming its own column rather than the bank's.
    groups = [f"g{i}" for i in range(MAX_GROUPS + 1)]
    batches = [scored_table(groups[lo:lo + per_batch], [[0.5, 0.5]] * len(groups[lo:lo + per_batch]))
               for lo in range(0, len(groups), per_batch)]
    with pytest.raises(JeirtError) as raised:
        expected_accuracy_by(FakeScored(batches), LLMS, "subject")
    oracle = GroupSums(LLMS, "subject")
    with pytest.raises(JeirtError) as local:
        oracle.add([f"g{i}" for i in range(MAX_GROUPS + 1)], np.full((MAX_GROUPS + 1, len(LLMS)), 0.5))
    assert str(raised.value) == str(local.value)
    assert f"column 'subject' has more than {MAX_GROUPS} distinct values" in str(raised.value)


def test_no_row_scored_gives_no_forecast() -> None:
    with pytest.raises(JeirtError, match="no question was scored, so there is no forecast"):
        expected_accuracy_by(FakeScored([scored_table([], [])]), LLMS, "subject")


# -- the Dataset API ----------------------------------------------------------------------------------------------


def test_score_dataset_hands_the_workers_the_group_column_and_refuses_a_missing_one_before_any_work(
    tiny_router_path: Path
) -> None:
    ds = FakeDataset(["id", "text", "subject"])
    engine.score_dataset(ds, tiny_router_path, group_column="subject", concurrency=1)
    assert ds.mapped["fn_constructor_kwargs"]["group_column"] == "subject"
    missing = FakeDataset(["id", "text"])
    with pytest.raises(JeirtError) as raised:
        engine.score_dataset(missing, tiny_router_path, group_column="topic", concurrency=1)
    assert str(raised.value) == "no group column 'topic' (columns: id, text); see forecast_by"
    assert missing.mapped == {}


def test_forecast_by_dataset_scores_every_probability_and_sums_them_per_group(
    tiny_router_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    llms = list(read_manifest(tiny_router_path).llms)
    asked: list[dict[str, Any]] = []
    rows = np.full((3, len(llms)), 0.5, dtype=np.float32)
    table = pa.table({**{f"p[{name}]": rows[:, j] for j, name in enumerate(llms)},
                      GROUP_COLUMN: ["law", "math", "law"]})

    def score_dataset(ds: Any, router_path: Any, **kwargs: Any) -> Any:
        asked.append(kwargs)
        return FakeScored([table])

    monkeypatch.setattr(dataset, "score_dataset", score_dataset)
    got = engine.forecast_by_dataset("ds", tiny_router_path, "subject", batch_size=8)
    assert asked == [{"batch_size": 8, "all_probabilities": True, "k": 1, "group_column": "subject"}]
    assert (got.column, got.counts) == ("subject", {"law": 2, "math": 1})


# -- a numbered bank's reads --------------------------------------------------------------------------------------


def test_a_numbered_bank_s_reads_carry_the_group_column_with_its_type(tmp_path: Path) -> None:
    path = tmp_path / "bank.parquet"
    pq.write_table(pa.table({"body": [f"q {i}" for i in range(5)], "level": pa.array(range(5), pa.int32())}), path,
                   row_group_size=3)
    tables = list(read_row_groups(pa.Table.from_pylist(row_groups(path)), str(path), "body", 2, also=["level"]))
    assert all(table.column_names == [ROW_NUMBER_COLUMN, "body", "level"] for table in tables)
    read = pa.concat_tables(tables)
    assert read.column("level").to_pylist() == list(range(5)) and read.column("level").type == pa.int32()
    assert read.column(ROW_NUMBER_COLUMN).to_pylist() == [1, 2, 3, 4, 5]
    # the group column being the text column is read once
    same = list(read_row_groups(pa.Table.from_pylist(row_groups(path)), str(path), "body", 2, also=["body"]))
    assert same[0].column_names == [ROW_NUMBER_COLUMN, "body"]
    empty = tmp_path / "empty.parquet"
    pq.write_table(pa.table({"body": pa.array([], pa.string()), "level": pa.array([], pa.int32())}), empty)
    tables = list(read_row_groups(pa.Table.from_pylist(row_groups(empty)), str(empty), "body", 2, also=["level"]))
    assert tables[0].num_rows == 0 and tables[0].schema.field("level").type == pa.int32()


# -- the file run -------------------------------------------------------------------------------------------------


def test_the_file_run_refuses_a_missing_group_column_naming_the_bank_before_ray_starts(
    monkeypatch: pytest.MonkeyPatch, tiny_router_path: Path, tmp_path: Path
) -> None:
    runtime = FakeRuntime(monkeypatch, running=False)
    bank = tmp_path / "bank.parquet"
    pq.write_table(pa.table({"text": ["a question"], "subject": ["law"]}), bank)  # no id column: numbered
    with pytest.raises(JeirtError) as raised:
        engine.score_file_on_ray(bank, router_path=tiny_router_path, options=ScoreOptions(forecast_by="topic"))
    assert str(raised.value) == f"{bank}: no group column 'topic' (columns: text, subject); see forecast_by"
    assert raised.value.hint.option == "forecast_by"  # the command line words it --forecast-by
    assert runtime.inits == []


class GroupedBank(FakeBank):
    def schema(self) -> pa.Schema:
        return pa.schema([("key", pa.int64()), ("body", pa.string()), ("subject", pa.string())])


@pytest.mark.parametrize("all_probabilities", [False, True])
def test_the_file_run_returns_the_forecast_per_group_and_writes_no_group_column(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, all_probabilities: bool
) -> None:
    table = scored_table(["law", "math", "law"], [[0.25, 0.5], [0.1, 0.2], [0.75, 0.125]])
    scored = Materializing([table.append_column("llm_1", pa.array(["a", "a", "b"]))])
    asked = fake_pipeline(monkeypatch, scored)
    monkeypatch.setattr(ray.data, "read_parquet", GroupedBank)
    output = tmp_path / "scores.parquet"
    # forecast_by alone asks for the forecast, as ScoreOptions.forecasting says
    options = ScoreOptions(forecast_by="subject", all_probabilities=all_probabilities)
    run = file_run._FileRun(tmp_path / "bank.parquet", output, "body", "key", options, 1, False)
    rows, forecast, _ = file_run._run_pipeline(run, Path("router"), LLMS, False)
    assert asked[0]["group_column"] == "subject" and asked[0]["all_probabilities"]
    assert rows == 3 and run.state.rows_scored == 3 and scored.materialized == 1
    assert isinstance(forecast, GroupForecast) and forecast.counts == {"law": 2, "math": 1}
    assert forecast.groups["law"]["b"] == pytest.approx(0.5)
    written = pq.read_table(output).column_names
    assert written == (["id", "p[b]", "p[a]", "llm_1"] if all_probabilities else ["id", "llm_1"])


def test_the_summary_holds_the_forecast_per_group_and_the_whole_bank_s_as_its_forecast(
    monkeypatch: pytest.MonkeyPatch, tiny_router_path: Path, tmp_path: Path
) -> None:
    FakeRuntime(monkeypatch, running=True)
    bank = tmp_path / "bank.parquet"
    pq.write_table(pa.table({"id": ["q0", "q1", "q2"], "text": ["a", "b", "c"], "subject": ["law", None, "law"]}),
                   bank)
    by_group = GroupForecast("subject", {"x": 0.5}, {"law": {"x": 0.5}}, {"law": 2})
    monkeypatch.setattr(file_run, "_score_on_ray", lambda *_: (2, by_group, 0.5))
    summary = engine.score_file_on_ray(bank, router_path=tiny_router_path,
                                       options=ScoreOptions(forecast_by="subject", skip_bad=True))
    assert summary.group_forecast is by_group and summary.forecast == by_group.overall
    assert (summary.rows, summary.skipped) == (2, 1)
