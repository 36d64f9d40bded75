"""The one check of a scoring request that `score`, `batch.score_file` and the Ray engine share
(jeirt_lite._score_request), on its own: k at both ends of its range, and what the Ray engine reads and writes.
No router and no data are read."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from jeirt_lite import JeirtError
from jeirt_lite._score_request import LOCAL, RAY, ScoreOptions, check_k, check_score_request


@pytest.mark.parametrize("k", [1, 5])
def test_k_may_be_anything_from_one_to_every_llm(k: int) -> None:
    assert check_k(k, 5) == k


@pytest.mark.parametrize("k", [0, -1, 6, True, 1.0, "2", None])
def test_k_outside_its_range_or_not_an_int_is_refused(k: object) -> None:
    with pytest.raises(JeirtError, match="k must be between 1 and the router's 5 LLMs"):
        check_k(k, 5)


def test_options_default_to_the_top_llm_and_cannot_be_changed() -> None:
    options = ScoreOptions()
    assert (options.k, options.all_probabilities, options.forecast, options.skip_bad) == (1, False, False, False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.k = 3  # type: ignore[misc]


def test_the_request_s_paths_are_keyword_only(tmp_path: Path) -> None:
    with pytest.raises(TypeError):
        check_score_request(ScoreOptions(), 5, tmp_path / "bank.csv")  # type: ignore[call-arg]


@pytest.fixture
def parquet_bank(tmp_path: Path) -> Path:
    path = tmp_path / "bank.parquet"
    path.write_bytes(b"")  # only its name and its being a file are read here
    return path


def test_the_ray_engine_reads_an_existing_parquet_bank_and_writes_parquet(tmp_path: Path, parquet_bank: Path) -> None:
    options = ScoreOptions()
    check_score_request(options, 5, input_path=parquet_bank, output=tmp_path / "out.parquet", engine=RAY)
    check_score_request(ScoreOptions(forecast=True), 5, input_path=parquet_bank, engine=RAY)
    for other in ("out.csv", "out.tsv"):  # formats whose names sort before and after "parquet"
        with pytest.raises(JeirtError, match="the Ray engine writes Parquet"):
            check_score_request(options, 5, input_path=parquet_bank, output=tmp_path / other, engine=RAY)
    for other in ("bank.csv", "bank.tsv"):
        (tmp_path / other).write_text("id,text\nq1,a question\n")
        with pytest.raises(JeirtError, match=f"{other}: the Ray engine reads an existing Parquet file"):
            check_score_request(options, 5, input_path=tmp_path / other, output=tmp_path / "out.parquet", engine=RAY)
    with pytest.raises(JeirtError, match="missing.parquet: the Ray engine reads an existing Parquet file"):
        check_score_request(options, 5, input_path=tmp_path / "missing.parquet", output=tmp_path / "o.parquet",
                            engine=RAY)
    with pytest.raises(JeirtError, match="the Ray engine scores text banks only"):
        check_score_request(options, 5, vectors_path=tmp_path / "v.npy", output=tmp_path / "o.parquet", engine=RAY)


def test_the_local_engine_takes_any_table_format_in_and_out(tmp_path: Path) -> None:
    options = ScoreOptions()
    check_score_request(options, 5, input_path=tmp_path / "missing.csv", output=tmp_path / "out.jsonl", engine=LOCAL)
    check_score_request(options, 5, vectors_path=tmp_path / "v.npy", output=tmp_path / "out.csv")
