"""The Ray engine's file run (`score_file_on_ray`, jeirt_lite._ray.file_run) without a Ray runtime: the Parquet writer
it streams to, the errors unwrapped from Ray's, when it starts and stops Ray, Ray Data's console held back, what it
refuses before Ray starts, and its pipeline. Ray stands in as tests/ray_fakes.py's fakes (the runtime's functions
patched, in the module that looks them up), so nothing here schedules a task; tests/test_ray.py runs the whole
pipeline on a real runtime.
"""

from __future__ import annotations

import io
import logging
import time
from pathlib import Path
from typing import Any, Optional

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from jeirt_lite import Router
from jeirt_lite._errors import JeirtError
from jeirt_lite._io.parquet_stream import write_tables
from jeirt_lite._router import DEFAULT_ROUTER_PATH
from jeirt_lite.artifact import read_manifest
from jeirt_lite.batch import ScoreOptions, ScoreState, score_file

pytest.importorskip("ray", reason='needs Ray: pip install "jeirt-lite[ray]"')

import jeirt_lite.ray_engine as engine  # noqa: E402 - after the skip: the module imports Ray
import ray  # noqa: E402
from jeirt_lite._ray import file_run, quiet  # noqa: E402 - the engine's parts, whose names the tests replace
from ray_fakes import IDS, FakeRuntime, Materializing, batch, fake_pipeline  # noqa: E402 - Ray's stand-ins


@pytest.fixture(scope="module")
def texts(real_texts: list[str]) -> list[str]:
    return real_texts[: len(IDS)]


# -- the Parquet writer -------------------------------------------------------------------------------------------


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
    state = ScoreState()
    with pytest.raises(JeirtError, match="a bad row"):
        engine.score_file_on_ray(parquet_bank, router_path=tiny_router_path, output=tmp_path / "s.parquet",
                                 state=state)
    assert runtime.shutdowns == 1 and len(runtime.inits) == 1
    assert state.workers_started  # past its checks: `score` says no row's scores came back, not that Ray never started


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
    state = ScoreState()
    with pytest.raises(JeirtError, match=r"bank.parquet: the header names the column 'id' twice$") as on_ray:
        engine.score_file_on_ray(bank, router_path=tiny_router_path, output=tmp_path / "out.parquet", state=state)
    with pytest.raises(JeirtError) as locally:
        score_file(Router.load(tiny_router_path), input_path=bank, output=tmp_path / "local.parquet")
    assert str(on_ray.value) == str(locally.value)
    assert runtime.inits == [] and not (tmp_path / "out.parquet").exists()
    assert not state.workers_started  # what lets `score` say the run stopped before Ray started


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


# -- the pipeline: Ray's read and score_dataset replaced ----------------------------------------------------------


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


@pytest.mark.parametrize("forecast", [False, True])
def test_the_pipeline_keeps_the_fallback_column_of_a_minimum_probability_and_its_type_with_no_batch(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, forecast: bool
) -> None:
    """The workers' last column, `fallback`, is written as they give it (the forecast's `p[<llm>]` columns dropped
    before it); with no batch at all, the file of no rows still has it, a bool, as on one machine."""
    columns = {"id": ["q0", "q1", "q2"], "llm_1": ["a", "b", "a"], "p_1": [0.5, 0.25, 1.0], "difficulty": [1.0] * 3,
               "p[a]": [0.5, 0.25, 1.0], "p[b]": [0.5, 0.5, 0.5], "fallback": [True, False, True]}
    options = ScoreOptions(k=1, forecast=forecast, min_probability=0.75)
    output = tmp_path / "scores.parquet"
    fake_pipeline(monkeypatch, Materializing([pa.table(columns)]))
    run = file_run._FileRun(tmp_path / "bank.parquet", output, "body", "key", options, 1, False)
    assert file_run._run_pipeline(run, Path("router"), ["a", "b"], False)[0] == 3
    written = pq.read_table(output)
    kept = ["id", "llm_1", "p_1", "difficulty", *([] if forecast else ["p[a]", "p[b]"]), "fallback"]
    assert written.column_names == kept and written.column("fallback").to_pylist() == [True, False, True]
    output.unlink()
    fake_pipeline(monkeypatch, Materializing([]))
    run = file_run._FileRun(tmp_path / "bank.parquet", output, "body", "key", ScoreOptions(min_probability=0.75), 1,
                            False)
    assert file_run._run_pipeline(run, Path("router"), ["a", "b"], False)[0] == 0
    empty = pq.read_table(output)
    assert empty.num_rows == 0 and empty.column_names == ["id", "llm_1", "p_1", "difficulty", "fallback"]
    assert empty.schema.field("fallback").type == pa.bool_()
