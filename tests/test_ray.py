"""The Ray Data engine (jeirt_lite.ray_engine, `score --engine ray`) against the single-machine path on the same bank.

Tests that need Ray share one local runtime of 2 CPUs; Ray comes with the `test` extra. Each has a time limit
(pytest-timeout), so a pipeline that waits for CPUs forever fails the test instead of hanging the suite. The import
checks run everywhere: the core package must never import Ray.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from jeirt_lite.cli import main

HAS_RAY = importlib.util.find_spec("ray") is not None


def needs_ray(test: Any) -> Any:
    """Skipped without Ray; at most 5 minutes, well above what the whole file needs on a small busy machine."""
    return pytest.mark.skipif(not HAS_RAY, reason='needs Ray: pip install "jeirt-lite[ray]"')(
        pytest.mark.timeout(300)(test)
    )


def test_the_core_package_does_not_import_ray() -> None:
    code = "import sys, jeirt_lite, jeirt_lite.cli, jeirt_lite.batch; print('ray' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_the_engine_without_ray_names_the_extra() -> None:
    # sys.modules["ray"] = None makes `import ray` fail as if Ray were not installed.
    code = (
        "import sys; sys.modules['ray'] = None\n"
        "try:\n    import jeirt_lite.ray_engine\nexcept ImportError as err:\n    print(err)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.startswith("jeirt_lite.ray_engine needs Ray Data")  # the module, to a Python caller
    assert 'pip install "jeirt-lite[ray]"' in result.stdout


def test_the_command_without_ray_names_the_option_given_not_a_module(tmp_path: Path) -> None:
    code = "import sys; sys.modules['ray'] = None; from jeirt_lite.cli import main; sys.exit(main())"
    command = [sys.executable, "-c", code, "score", "bank.parquet", "-o", "s.parquet", "--engine", "ray"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, cwd=tmp_path)
    assert result.returncode == 1
    # What the user typed, not the module that needs Ray.
    assert result.stderr.startswith(
        'jeirt-lite: error: --engine ray needs Ray Data, which is not installed: pip install "jeirt-lite[ray]"'
    )
    assert "jeirt_lite.ray_engine" not in result.stderr and "Traceback" not in result.stderr


@pytest.mark.skipif(not HAS_RAY, reason='needs Ray: pip install "jeirt-lite[ray]"')
def test_the_command_with_ray_installed_names_what_failed_to_import_not_a_missing_ray(tmp_path: Path) -> None:
    # Any ImportError on the way to the engine was reported as Ray missing, sending the user to install what they have.
    code = ("import sys; sys.modules['jeirt_lite._ray.file_run'] = None; from jeirt_lite.cli import main; "
            "sys.exit(main())")
    command = [sys.executable, "-c", code, "score", "bank.parquet", "-o", "s.parquet", "--engine", "ray"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith("jeirt-lite: error: --engine ray: ") and "jeirt_lite._ray.file_run" in result.stderr
    assert "not installed" not in result.stderr


@pytest.fixture(scope="module")
def ray_runtime() -> Iterator[Any]:
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def bank(tmp_path_factory: pytest.TempPathFactory, real_texts: list[str]) -> Path:
    """150 real MMLU-Pro texts with string ids, in two row groups so Ray reads more than one block."""
    texts = real_texts[:150]
    path = tmp_path_factory.mktemp("ray") / "bank.parquet"
    pq.write_table(
        pa.table({"id": [f"q{i:04d}" for i in range(len(texts))], "text": texts}), path, row_group_size=80
    )
    return path


def score(capsys: pytest.CaptureFixture[str], *args: Any) -> tuple[int, str, str]:
    code = main(["score", *map(str, args)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def wait_for_free_cpus(ray: Any, cpus: float, polls: int = 120) -> bool:
    for _ in range(polls):
        if ray.available_resources().get("CPU", 0.0) >= cpus:
            return True
        time.sleep(0.25)
    return False


def by_id(path: Path) -> pa.Table:
    return pq.read_table(path).sort_by("id")


@needs_ray
@pytest.mark.parametrize("extra", [["--k", "2"], ["--k", "3", "--all", "--forecast"], ["--k", "2", "--ship-router"]])
def test_ray_cli_writes_exactly_the_single_machine_rows_and_forecast(
    ray_runtime: Any, capsys: pytest.CaptureFixture[str], tiny_router_path: Path, bank: Path, tmp_path: Path,
    extra: list[str],
) -> None:
    local, distributed = tmp_path / "local.parquet", tmp_path / "ray.parquet"
    ray_only = [flag for flag in extra if flag == "--ship-router"]
    common = [bank, "--router", tiny_router_path, "-q", *(flag for flag in extra if flag not in ray_only)]
    # The tiny router's encoder runs in ONNX Runtime, whose sums depend on its thread count: bit for bit holds at
    # the thread count of each Ray worker (1 unless --threads is given; docs/guide/guarantees.md).
    code, local_out, _ = score(capsys, *common, "-o", local, "--threads", "1")
    assert code == 0
    code, ray_out, err = score(capsys, *common, *ray_only, "-o", distributed, "--engine", "ray", "--chunk-size", "40")
    assert code == 0, err
    expected, got = by_id(local), by_id(distributed)
    assert got.schema == expected.schema
    assert got.equals(expected)  # same ids, LLM names and float32 values, bit for bit
    assert pq.read_table(distributed).column("id").to_pylist() == pq.read_table(local).column("id").to_pylist()
    if "--forecast" in extra:
        # Same LLMs and values to the 6 printed decimals (float64 sums of float32 p, against the kernel's means).
        assert ray_out == local_out and "expected accuracy on 150 questions" in ray_out
    assert not list(tmp_path.glob(".*partial*"))


@needs_ray
def test_a_static_router_on_ray_gives_the_local_output_bit_for_bit_at_any_thread_count(
    ray_runtime: Any, capsys: pytest.CaptureFixture[str], bank: Path, tmp_path: Path
) -> None:
    """The shipped router encodes in Rust, row by row: neither the thread count nor the batches change a bit."""
    distributed = tmp_path / "ray.parquet"
    code, _, err = score(capsys, bank, "-q", "--k", "2", "--all", "-o", distributed, "--engine", "ray",
                         "--chunk-size", "40")
    assert code == 0, err
    for threads in ("1", "16"):
        local = tmp_path / f"local{threads}.parquet"
        assert score(capsys, bank, "-q", "--k", "2", "--all", "-o", local, "--threads", threads)[0] == 0
        assert by_id(distributed).equals(by_id(local))


def test_an_onnx_router_differs_across_thread_counts_only_within_the_stated_bound(
    capsys: pytest.CaptureFixture[str], tiny_router_path: Path, bank: Path, tmp_path: Path
) -> None:
    """What holds between a Ray worker (1 thread) and a local run on more threads for a router encoded by ONNX
    Runtime: every P(correct) within 1e-6 and every difficulty within 1e-5 relative (docs/guide/guarantees.md)."""
    tables = []
    for threads in ("1", "16"):
        output = tmp_path / f"t{threads}.parquet"
        args = [bank, "--router", tiny_router_path, "-q", "--k", "5", "--all", "-o", output, "--threads", threads]
        assert score(capsys, *args)[0] == 0
        tables.append(by_id(output))
    one, many = tables
    for name in one.column_names:
        if name.startswith("p[") or name.startswith("p_"):
            gap = np.abs(one.column(name).to_numpy() - many.column(name).to_numpy())
            assert gap.max() <= 1e-6, name
    d1, d16 = one.column("difficulty").to_numpy(), many.column("difficulty").to_numpy()
    assert (np.abs(d1 - d16) <= 1e-5 * np.abs(d1)).all()


@needs_ray
def test_bad_rows_stop_the_run_or_are_skipped_and_counted_as_on_one_machine(
    ray_runtime: Any, capsys: pytest.CaptureFixture[str], tiny_router_path: Path, real_texts: list[str],
    tmp_path: Path,
) -> None:
    texts: list[Any] = list(real_texts[:30])
    texts[7], texts[19] = None, "   "
    ids: list[Any] = [f"q{i:02d}" for i in range(30)]
    ids[25] = " "  # a blank id, refused as on one machine
    bank = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"id": ids, "text": texts}), bank)
    output = tmp_path / "ray.parquet"
    code, _, err = score(capsys, bank, "--router", tiny_router_path, "-o", output, "--engine", "ray", "-q")
    assert code == 1
    # As on one machine: the error, then how far the run got.
    error, note = err.splitlines()
    assert "row with id 'q07': has no text (missing or null)" in error and "--skip-bad" in error
    # The workers may have scored rows of other batches: the note says only what this process knows.
    assert note == (f"jeirt-lite: stopped before any row's scores came back from the Ray workers; no output was "
                    f"written ({output} left untouched)")
    assert not output.exists() and not list(tmp_path.glob(".*partial*"))
    # The failed run's worker gives its CPU back (it used to hold it until a garbage collection happened to run,
    # and the next run on this runtime then waited for CPUs). Actors die asynchronously, hence the polling.
    assert wait_for_free_cpus(ray_runtime, 2.0)

    local = tmp_path / "local.parquet"
    common = [bank, "--router", tiny_router_path, "--skip-bad", "-q"]
    assert score(capsys, *common, "-o", local)[0] == 0
    code, _, err = score(capsys, *common, "-o", output, "--engine", "ray", "--chunk-size", "8")
    assert code == 0 and "skipped 3 bad rows" in err
    assert by_id(output).equals(by_id(local))


@needs_ray
@pytest.mark.parametrize(("texts", "flags", "skipped"), [([], [], ""), ([None, " ", ""], ["--skip-bad"], "3 bad rows")])
def test_no_row_scored_gives_the_file_of_no_rows_one_machine_writes_but_no_forecast(
    ray_runtime: Any, capsys: pytest.CaptureFixture[str], tiny_router_path: Path, tmp_path: Path,
    texts: list[Any], flags: list[str], skipped: str,
) -> None:
    """An empty bank, or one whose every row is skipped: a daily pipeline gets an empty day's file, not an error."""
    bank = tmp_path / "day.parquet"
    pq.write_table(pa.table({"id": pa.array([f"q{i}" for i in range(len(texts))], pa.string()),
                             "text": pa.array(texts, pa.string())}), bank)
    common = [bank, "--router", tiny_router_path, "--k", "2", "--all", *flags]
    local, distributed = tmp_path / "local.parquet", tmp_path / "ray.parquet"
    assert score(capsys, *common, "-o", local)[0] == 0
    code, _, err = score(capsys, *common, "-o", distributed, "--engine", "ray")
    assert code == 0, err
    assert "scored 0 questions" in err and (f"skipped {skipped}" in err) == bool(skipped)
    expected, got = pq.read_table(local), pq.read_table(distributed)
    assert got.num_rows == 0 and got.schema == expected.schema
    refused = tmp_path / "forecast.parquet"
    code, _, err = score(capsys, *common, "-o", refused, "--engine", "ray", "--forecast")
    assert code == 1 and "no question was scored, so there is no forecast" in err
    assert not refused.exists() and not list(tmp_path.glob(".*partial*"))


@needs_ray
@pytest.mark.skipif(os.name == "nt", reason="a POSIX shell starts it with stderr closed")
def test_a_ray_run_started_with_stderr_closed_writes_its_output(
    tiny_router_path: Path, bank: Path, tmp_path: Path
) -> None:
    """`2>&-`, as a service manager may start it: ray.init's faulthandler asked the closed stderr for its descriptor
    and the run ended in a traceback no one saw, exit 1, nothing written. Its own runtime: a fresh process."""
    output = tmp_path / "scores.parquet"
    script = 'exec "$0" -m jeirt_lite score "$1" -o "$2" --router "$3" --engine ray --threads 1 2>&-'
    done = subprocess.run(["sh", "-c", script, sys.executable, str(bank), str(output), str(tiny_router_path)],
                          capture_output=True, timeout=240, stdin=subprocess.DEVNULL, check=False)
    # Nothing of this run's own on stdout (its summary went to the closed stderr). Ray's raylet may print its own
    # warnings there (on a busy machine: that it started more workers than it expected), which are not the run's.
    ours = [line for line in done.stdout.decode(errors="replace").splitlines()
            if line.strip() and "(raylet)" not in line]
    assert done.returncode == 0 and ours == []
    assert pq.read_table(output).num_rows == pq.read_metadata(bank).num_rows


@needs_ray
def test_a_forecast_that_cannot_be_printed_says_every_row_was_scored_as_on_one_machine(
    ray_runtime: Any, capsys: pytest.CaptureFixture[str], tiny_router_path: Path, bank: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The forecast's pass scores every row before a line is printed: a stdout closed (`>&-`, Python's sys.stdout
    None) fails the print, and the note said 'stopped before any row was scored' on Ray."""
    monkeypatch.setattr(sys, "stdout", None)
    common = [bank, "--router", tiny_router_path, "--forecast", "-q"]
    local_code, _, local = score(capsys, *common)
    code, _, err = score(capsys, *common, "--engine", "ray")
    error = "jeirt-lite: error: stdout: write error: Bad file descriptor"
    assert (local_code, local.splitlines()) == (1, [error, "jeirt-lite: stopped after scoring 150 rows (of 150 read)"])
    assert (code, err.splitlines()) == (1, [error, "jeirt-lite: stopped after scoring 150 rows"])


@needs_ray
def test_ray_engine_refuses_what_it_cannot_do(
    ray_runtime: Any, capsys: pytest.CaptureFixture[str], tiny_router_path: Path, bank: Path, tmp_path: Path
) -> None:
    code, _, err = score(capsys, bank, "--router", tiny_router_path, "-o", tmp_path / "s.csv", "--engine", "ray")
    assert code == 1 and "writes Parquet" in err
    no_ids = tmp_path / "no_ids.parquet"
    pq.write_table(pa.table({"text": ["what is a prime number"]}), no_ids)
    code, _, err = score(capsys, no_ids, "--router", tiny_router_path, "-o", tmp_path / "s.parquet", "--engine", "ray",
                         "--id-column", "key")  # a bank without ids has its rows numbered, but this one is named
    assert code == 1 and "no id column 'key'" in err
    code, _, err = score(capsys, bank, "--router", tiny_router_path, "-o", tmp_path / "s.parquet", "--ship-router")
    assert code == 2 and "--ship-router goes with --engine ray" in err
    not_parquet = tmp_path / "bank.parquet"
    not_parquet.write_text("id,text\nq1,what is a prime number\n")  # a CSV under a Parquet name
    code, _, err = score(capsys, not_parquet, "--router", tiny_router_path, "-o", tmp_path / "s.parquet",
                         "--engine", "ray")
    assert code == 1 and "bank.parquet: not a readable Parquet file" in err


# Costs stored in the router, and the costs of a table for one run: replaced, not merged (llm-0, cheapest stored,
# has none for the run), and weighed at 0.01 they route elsewhere than the stored ones.
STORED_COSTS = {"llm-0": 0.0, "llm-1": 1.0, "llm-2": 2.0, "llm-3": 3.0, "llm-4": 4.0}
GIVEN_COSTS = {"llm-1": 4.0, "llm-2": 0.0, "llm-3": 1.0, "llm-4": 2.0}


@pytest.fixture(scope="module")
def priced_router(tiny_router_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from jeirt_lite import Router

    folder = tmp_path_factory.mktemp("priced") / "router"
    Router.load(tiny_router_path, threads=1).with_costs(STORED_COSTS).save(folder)
    return folder


def costs_table(path: Path, costs: dict[str, Any]) -> Path:
    path.write_text("llm,cost\n" + "".join(f"{name},{cost}\n" for name, cost in costs.items()))
    return path


@needs_ray
@pytest.mark.parametrize("ship", [[], ["--ship-router"]])
def test_costs_given_on_ray_route_every_question_as_the_same_costs_on_one_machine(
    ray_runtime: Any, capsys: pytest.CaptureFixture[str], priced_router: Path, bank: Path, tmp_path: Path,
    ship: list[str],
) -> None:
    prices = costs_table(tmp_path / "prices.csv", GIVEN_COSTS)
    common = [bank, "--router", priced_router, "-q", "--k", "2", "--cost-weight", "0.01"]
    stored, local, distributed = (tmp_path / f"{name}.parquet" for name in ("stored", "local", "ray"))
    assert score(capsys, *common, "-o", stored, "--threads", "1")[0] == 0
    assert score(capsys, *common, "--costs", prices, "-o", local, "--threads", "1")[0] == 0
    code, _, err = score(capsys, *common, *ship, "--costs", prices, "-o", distributed, "--engine", "ray",
                         "--chunk-size", "40")
    assert code == 0, err
    chosen = ["llm_1", "llm_2"]
    assert not by_id(local).select(chosen).equals(by_id(stored).select(chosen))  # the given costs route elsewhere
    assert by_id(distributed).equals(by_id(local))


@needs_ray
@pytest.mark.parametrize(
    ("costs", "flags", "output", "code", "message"),
    [({"llm-1": 1.0, "nope": 2.0}, [], "s.parquet", 1, "prices.csv: costs names unknown LLM 'nope'"),
     ({"llm-1": 1.0, "llm-2": -1}, [], "s.parquet", 1,
      "prices.csv: data row 2: the cost of 'llm-2' must be a finite number >= 0, got '-1'"),
     # A rule is checked against the given costs, which leave llm-0 without one (the stored costs give it 0).
     ({"llm-1": 1.0}, ["--llms", "llm-0,llm-1", "--cost-weight", "0.5"], "s.parquet", 2, "missing: llm-0"),
     ({"llm-1": 1.0}, [], "prices.csv", 1, "prices.csv: is also the input")],  # the scores would replace the prices
)
def test_bad_costs_on_ray_are_refused_before_ray_starts(
    capsys: pytest.CaptureFixture[str], priced_router: Path, bank: Path, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, costs: dict[str, Any], flags: list[str], output: str, code: int, message: str,
) -> None:
    from jeirt_lite import ray_engine

    called: list[Any] = []
    monkeypatch.setattr(ray_engine, "score_file_on_ray", lambda *args, **kwargs: called.append(args))
    prices = costs_table(tmp_path / "prices.csv", costs)
    before = prices.read_bytes()
    got, _, err = score(capsys, bank, "--router", priced_router, "-o", tmp_path / output, "--engine", "ray",
                        "--costs", prices, *flags)
    assert (got, called) == (code, []), err
    assert message in err
    assert prices.read_bytes() == before and not (tmp_path / "s.parquet").exists()


@needs_ray
def test_score_file_on_ray_refuses_costs_for_an_unknown_llm_before_ray_starts(
    priced_router: Path, bank: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import jeirt_lite.ray_engine as engine
    import ray
    from jeirt_lite._errors import JeirtError
    from jeirt_lite._ray import file_run
    from jeirt_lite.batch import ScoreOptions

    monkeypatch.setattr(ray, "init", lambda **kwargs: pytest.fail("Ray started"))
    monkeypatch.setattr(file_run, "_score_on_ray", lambda *args: pytest.fail("the pipeline ran"))
    options = ScoreOptions(cost_weight=0.01)
    with pytest.raises(JeirtError, match="costs: costs names unknown LLM 'nope'"):
        engine.score_file_on_ray(bank, router_path=priced_router, output=tmp_path / "s.parquet", options=options,
                                 costs={"nope": 1.0})
    with pytest.raises(JeirtError, match="llm-0"):  # the rules against the given costs, which do not price llm-0
        engine.score_file_on_ray(bank, router_path=priced_router, output=tmp_path / "s.parquet",
                                 options=ScoreOptions(llms=("llm-0",), cost_weight=0.01), costs={"llm-1": 1.0})
    assert not (tmp_path / "s.parquet").exists()


@needs_ray
def test_a_shipped_router_needs_no_folder_on_the_workers(
    ray_runtime: Any, tiny_router_path: Path, bank: Path, tmp_path: Path
) -> None:
    from jeirt_lite.ray_engine import score_dataset

    expected = pa.Table.from_pylist(
        score_dataset(ray_runtime.data.read_parquet(str(bank)), tiny_router_path, k=2, concurrency=1).take_all()
    ).sort_by("id")
    copy = tmp_path / "router_copy"
    shutil.copytree(tiny_router_path, copy)
    lazy = score_dataset(ray_runtime.data.read_parquet(str(bank)), copy, k=2, concurrency=1, ship_router=True)
    shutil.rmtree(copy)  # the files were read when the Dataset was defined; the workers get them from Ray
    got = pa.Table.from_pylist(lazy.take_all()).sort_by("id")
    assert got.equals(expected)


def crash_once_scorer(marker: Path) -> Any:
    """A BankScorer whose process dies (os._exit) at its first batch if `marker` does not exist yet."""
    from jeirt_lite._ray.worker import BankScorer

    class CrashOnce(BankScorer):  # type: ignore[misc]
        def __call__(self, batch: Any) -> Any:
            if not marker.exists():
                marker.write_text("crashed once")
                os._exit(1)  # the whole worker process, as a killed or out-of-memory worker would
            return super().__call__(batch)

    return CrashOnce


@needs_ray
def test_a_worker_that_dies_is_replaced_and_the_output_is_complete(
    ray_runtime: Any, capsys: pytest.CaptureFixture[str], tiny_router_path: Path, bank: Path, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from jeirt_lite._ray import dataset
    from ray import cloudpickle

    local, distributed, marker = tmp_path / "local.parquet", tmp_path / "ray.parquet", tmp_path / "crashed"
    common = [bank, "--router", tiny_router_path, "-q", "--k", "2"]
    assert score(capsys, *common, "-o", local)[0] == 0
    # The crashing class travels to the workers by value (this test module is not importable there).
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    monkeypatch.setattr(dataset, "BankScorer", crash_once_scorer(marker))  # where score_dataset finds it
    try:
        code, _, err = score(capsys, *common, "-o", distributed, "--engine", "ray", "--chunk-size", "40")
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    assert marker.exists(), "the worker never crashed: the test did not test a retry"
    assert code == 0, err
    assert by_id(distributed).equals(by_id(local))


@needs_ray
def test_score_dataset_matches_score_file(ray_runtime: Any, tiny_router_path: Path, bank: Path, tmp_path: Path) -> None:
    from jeirt_lite import Router
    from jeirt_lite.batch import ScoreOptions, score_file
    from jeirt_lite.ray_engine import forecast_dataset, score_dataset

    router = Router.load(tiny_router_path, threads=1)
    local = tmp_path / "local.parquet"
    summary = score_file(
        router, input_path=bank, output=local, options=ScoreOptions(k=2, all_probabilities=True, forecast=True)
    )
    ds = ray_runtime.data.read_parquet(str(bank))
    rows = score_dataset(ds, tiny_router_path, k=2, all_probabilities=True, batch_size=32, concurrency=1)
    got = pa.Table.from_pylist(rows.take_all()).sort_by("id")
    expected = by_id(local)
    assert got.column_names == expected.column_names
    for name in expected.column_names:
        assert got.column(name).to_pylist() == expected.column(name).to_pylist(), name
    renamed = ds.rename_columns({"id": "qid", "text": "question"})  # train's names: found unnamed, as on one machine
    again = score_dataset(renamed, tiny_router_path, k=2, all_probabilities=True, batch_size=32, concurrency=1)
    assert pa.Table.from_pylist(again.take_all()).sort_by("id").equals(got)
    forecast = forecast_dataset(ds, tiny_router_path, batch_size=32, concurrency=1)
    assert summary.forecast is not None and list(forecast) == list(summary.forecast)
    for name, value in summary.forecast.items():
        assert forecast[name] == pytest.approx(value, rel=1e-6)


@needs_ray
def test_score_file_on_ray_returns_what_score_file_returns(
    ray_runtime: Any, tiny_router_path: Path, bank: Path, tmp_path: Path
) -> None:
    from jeirt_lite import Router
    from jeirt_lite.batch import ScoreOptions, ScoreSummary, score_file
    from jeirt_lite.ray_engine import score_file_on_ray

    options = ScoreOptions(k=2, forecast=True, chunk_size=40)
    local_path, ray_path = tmp_path / "local.parquet", tmp_path / "ray.parquet"
    local = score_file(Router.load(tiny_router_path, threads=1), input_path=bank, output=local_path, options=options)
    distributed = score_file_on_ray(bank, router_path=tiny_router_path, output=ray_path, options=options)
    assert isinstance(distributed, ScoreSummary)
    assert (distributed.rows, distributed.skipped, distributed.output) == (local.rows, local.skipped, ray_path)
    assert distributed.seconds > 0
    assert local.forecast is not None and distributed.forecast is not None
    assert list(distributed.forecast) == list(local.forecast)
    for name, value in local.forecast.items():
        assert distributed.forecast[name] == pytest.approx(value, rel=1e-6)
    assert by_id(ray_path).equals(by_id(local_path))


@needs_ray
def test_an_interrupted_forecast_says_how_many_rows_it_scored(
    ray_runtime: Any, capsys: pytest.CaptureFixture[str], tiny_router_path: Path, bank: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The driver took the per-batch sums only once every batch was done: a forecast-only run interrupted after
    rows were scored said 'before any row was scored'. Interrupted here as the first batch's sums arrive."""
    from jeirt_lite._ray import file_run

    count = file_run._add_scored

    def interrupted(state: Any, rows: int) -> None:
        count(state, rows)
        raise KeyboardInterrupt

    monkeypatch.setattr(file_run, "_add_scored", interrupted)
    code, out, err = score(capsys, bank, "--router", tiny_router_path, "--forecast", "-q", "--engine", "ray",
                           "--chunk-size", "40")
    assert (code, out) == (130, "")
    note = re.fullmatch(r"jeirt-lite: interrupted after scoring (\d+) rows", err.splitlines()[-1])
    assert note is not None and 0 < int(note.group(1)) <= 150, err
    assert wait_for_free_cpus(ray_runtime, 2.0)
