"""`score --min-probability T`'s `fallback` column: in CSV, TSV, JSONL and Parquet, on both of score's paths (one
thread: encoded in turn; two: the background pipeline), it holds `RouteResult.fallback` for the same texts, where
`p_1 < T` cannot tell it (a p_1 just below T prints as T with 7 digits); it is there only with that rule, with the
rows `--skip-bad` keeps and in an output of no rows; and a bank's own `fallback` column does not become it. The
Ray engine's column: tests/test_ray_worker.py and test_ray_file_run.py."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from bank_files import ROUTED_QUESTIONS as QUESTIONS
from bank_files import write_csv_bank
from jeirt_lite import Router
from jeirt_lite._io.writers import CsvWriter, JsonlWriter, ParquetWriter, ScoredChunk, TsvWriter
from jeirt_lite.batch import ScoreOptions, score_file
from jeirt_lite.cli import main

FORMATS = ["csv", "tsv", "jsonl", "parquet"]


@pytest.fixture(scope="module")
def router() -> Router:
    return Router.load(threads=1)


@pytest.fixture(scope="module")
def threshold(router: Router) -> float:
    """A T that some questions' most likely LLM clears and others' does not, a hair above the median question's
    best P(correct): that question falls back, yet its p_1 prints as T does with 7 digits."""
    best = router.route(QUESTIONS, 1, llms=router.priced_llms).probabilities[:, 0]  # min_probability's LLMs
    median = best[np.argsort(best)[len(best) // 2]]
    return float(median) + 1e-12


@pytest.fixture
def bank(tmp_path: Path) -> Path:
    return write_csv_bank(tmp_path / "bank.csv", QUESTIONS)


def read_scores(path: Path) -> list[dict[str, Any]]:
    """The output's rows, every value as its format reads back (CSV and TSV: text)."""
    if path.suffix == ".parquet":
        return pq.read_table(path).to_pylist()
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle, delimiter="\t" if path.suffix == ".tsv" else ","))


def as_bools(values: list[Any], suffix: str) -> list[bool]:
    """The column's values as bools, each checked to be its format's form: a bool in JSONL and Parquet, the word
    `true` or `false` in CSV and TSV."""
    if suffix in (".csv", ".tsv"):
        assert set(values) <= {"true", "false"}
        return [value == "true" for value in values]
    assert all(type(value) is bool for value in values)
    return list(values)


def test_the_threshold_splits_the_questions_and_a_p_1_printed_as_t_still_falls_back(
    router: Router, threshold: float
) -> None:
    result = router.route(QUESTIONS, 1, min_probability=threshold)
    assert result.fallback is not None and result.fallback.any() and not result.fallback.all()
    printed = [f"{p:.7g}" for p in result.probabilities[:, 0].tolist()]
    # What the column is for: a fallback whose p_1 reads as T itself in CSV and JSONL.
    assert any(fell and text == f"{threshold:.7g}" for fell, text in zip(result.fallback.tolist(), printed))


@pytest.mark.parametrize("threads", ["1", "2"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_the_fallback_column_is_route_s_fallback(
    router: Router, bank: Path, tmp_path: Path, threshold: float, fmt: str, threads: str
) -> None:
    out = tmp_path / f"scores.{fmt}"
    assert main(["score", str(bank), "-o", str(out), "--k", "2", "--min-probability", repr(threshold),
                 "--threads", threads, "-q"]) == 0
    rows = read_scores(out)
    expected = router.route(QUESTIONS, 2, min_probability=threshold)
    assert expected.fallback is not None
    assert list(rows[0]) == ["id", "llm_1", "p_1", "llm_2", "p_2", "difficulty", "fallback"]
    assert as_bools([row["fallback"] for row in rows], out.suffix) == expected.fallback.tolist()
    assert [[row["llm_1"], row["llm_2"]] for row in rows] == expected.names
    if fmt == "parquet":
        assert pq.read_schema(out).field("fallback").type == pa.bool_()


@pytest.mark.parametrize("fmt", FORMATS)
def test_score_file_writes_it_after_every_probability_with_its_min_probability(
    router: Router, bank: Path, tmp_path: Path, threshold: float, fmt: str
) -> None:
    out = tmp_path / f"scores.{fmt}"
    options = ScoreOptions(all_probabilities=True, min_probability=threshold, chunk_size=4)  # chunks of 4 and 2
    score_file(router, input_path=bank, output=out, options=options)
    rows = read_scores(out)
    assert list(rows[0]) == ["id", "llm_1", "p_1", "difficulty", *(f"p[{name}]" for name in router.llms),
                             "fallback"]
    expected = router.route(QUESTIONS, 1, min_probability=threshold).fallback
    assert expected is not None
    assert as_bools([row["fallback"] for row in rows], out.suffix) == expected.tolist()


@pytest.mark.parametrize("rule", [[], ["--cost-weight", "0.0005"], ["--llms", "Yi-34B,gemma-7b"]])
def test_no_fallback_column_without_a_minimum_probability(bank: Path, tmp_path: Path, rule: list[str]) -> None:
    for fmt in FORMATS:
        out = tmp_path / f"scores.{fmt}"
        assert main(["score", str(bank), "-o", str(out), "--threads", "1", "-q", *rule]) == 0
        assert list(read_scores(out)[0]) == ["id", "llm_1", "p_1", "difficulty"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_rows_skip_bad_keeps_have_their_fallback_and_no_row_still_gives_the_column(
    router: Router, tmp_path: Path, threshold: float, fmt: str
) -> None:
    bank = tmp_path / "bank.csv"
    bank.write_text("id,text\n" + "".join(f"q{i},{text}\n" for i, text in enumerate(QUESTIONS)) + "bad, \n")
    out = tmp_path / f"scores.{fmt}"
    assert main(["score", str(bank), "-o", str(out), "--min-probability", repr(threshold), "--skip-bad",
                 "--threads", "1", "-q"]) == 0
    rows = read_scores(out)
    expected = router.route(QUESTIONS, 1, min_probability=threshold).fallback
    assert expected is not None
    assert [row["id"] for row in rows] == [f"q{i}" for i in range(len(QUESTIONS))]
    assert as_bools([row["fallback"] for row in rows], out.suffix) == expected.tolist()
    bad = tmp_path / "bad.csv"
    bad.write_text("id,text\nq0, \n")
    empty = tmp_path / f"empty.{fmt}"
    assert main(["score", str(bad), "-o", str(empty), "--min-probability", "0.5", "--skip-bad", "--threads", "1",
                 "-q"]) == 0
    if fmt == "parquet":
        assert pq.read_table(empty).num_rows == 0
        assert pq.read_schema(empty).field("fallback").type == pa.bool_()
    elif fmt == "jsonl":
        assert empty.read_text() == ""  # JSONL has no header: no row, no column
    else:
        assert empty.read_text().splitlines()[0].split("," if fmt == "csv" else "\t")[-1] == "fallback"


@pytest.mark.parametrize("id_flags", [[], ["--id-column", "fallback"]], ids=["beside-the-id", "as-the-id"])
def test_a_bank_s_own_fallback_column_does_not_become_the_output_s(
    router: Router, tmp_path: Path, threshold: float, id_flags: list[str]
) -> None:
    # The output holds its own columns only (a bank's columns are not copied, as a bank's llm_1 column is not):
    # the bank's `fallback`, the opposite of route's, is read as an id only when named so.
    expected = router.route(QUESTIONS, 1, min_probability=threshold).fallback
    assert expected is not None
    opposite = ["false" if fell else "true" for fell in expected.tolist()]
    bank = tmp_path / "bank.csv"
    bank.write_text("id,text,fallback,llm_1\n" + "".join(
        f"q{i},{text},{flag}{i},x\n" for i, (text, flag) in enumerate(zip(QUESTIONS, opposite))))
    for fmt in FORMATS:
        out = tmp_path / f"scores.{fmt}"
        assert main(["score", str(bank), "-o", str(out), "--min-probability", repr(threshold), "--threads", "1",
                     "-q", *id_flags]) == 0
        rows = read_scores(out)
        assert list(rows[0]) == ["id", "llm_1", "p_1", "difficulty", "fallback"]
        assert as_bools([row["fallback"] for row in rows], out.suffix) == expected.tolist()
        ids = [f"{flag}{i}" for i, flag in enumerate(opposite)] if id_flags else [f"q{i}" for i in range(len(QUESTIONS))]
        assert [row["id"] for row in rows] == ids
        assert "x" not in {row["llm_1"] for row in rows}


# -- the writers --------------------------------------------------------------------------------------------------

# Ids and LLM names holding the line end that ends a CSV row: the CSV writer cannot find its rows' ends by it.
HOSTILE_IDS = ["plain", "two\r\nlines", 'say "hi"', "a,b", "\r\n", "tab\there", "last"]


def _chunk(flags: list[bool]) -> ScoredChunk:
    n = len(flags)
    rng = np.random.default_rng(3)
    return ScoredChunk(
        ids=HOSTILE_IDS[:n],
        indices=np.tile(np.array([[1, 0]], dtype=np.uint32), (n, 1)),
        probabilities=rng.random((n, 2), dtype=np.float32),
        difficulty=rng.random(n, dtype=np.float32),
        fallback=np.array(flags, dtype=bool),
    )


@pytest.mark.parametrize("writer_class", [CsvWriter, TsvWriter, JsonlWriter, ParquetWriter])
@pytest.mark.parametrize("ids", [HOSTILE_IDS, ["q0", "q1", "q2", "q3", "q4", "q5", "q6"]], ids=["hostile", "plain"])
def test_every_writer_writes_the_flags_of_each_row_whatever_its_id(
    tmp_path: Path, writer_class: type[Any], ids: list[str]
) -> None:
    flags = [True, False, False, True, True, False, True]
    names = ["llm\r\na", "llm,b"]
    suffix = {CsvWriter: ".csv", TsvWriter: ".tsv", JsonlWriter: ".jsonl", ParquetWriter: ".parquet"}[writer_class]
    path = tmp_path / f"out{suffix}"
    writer = writer_class(path, 2, names, False, fallback=True)
    chunk = _chunk(flags)
    chunk.ids = list(ids)
    writer.write(chunk)
    writer.write(_chunk(flags[:2]))
    writer.close()
    rows = read_scores(path)
    assert as_bools([row["fallback"] for row in rows], suffix) == flags + flags[:2]
    assert [row["id"] for row in rows] == ids + HOSTILE_IDS[:2]
    assert [row["llm_1"] for row in rows] == [names[1]] * len(rows)


def test_a_writer_refuses_a_chunk_whose_flags_its_columns_do_not_hold(tmp_path: Path) -> None:
    with_flags = _chunk([True])
    without = ScoredChunk(with_flags.ids, with_flags.indices, with_flags.probabilities, with_flags.difficulty)
    for writer_class, suffix in ((CsvWriter, ".csv"), (JsonlWriter, ".jsonl"), (ParquetWriter, ".parquet")):
        flagged = writer_class(tmp_path / f"a{suffix}", 2, ["a", "b"], False, fallback=True)
        with pytest.raises(ValueError, match="a chunk without fallback flags for columns with them"):
            flagged.write(without)
        plain = writer_class(tmp_path / f"b{suffix}", 2, ["a", "b"], False)
        with pytest.raises(ValueError, match="a chunk with fallback flags for columns without them"):
            plain.write(with_flags)
        flagged.close()
        plain.close()
