"""Streaming batch scoring (jeirt_lite.batch) against one-shot Router calls on the same texts, every format."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from jeirt_lite import EncodedQuestions, JeirtError, Router
from jeirt_lite._io.outputs import partial_path
from jeirt_lite._progress import Progress
from jeirt_lite.batch import ScoreOptions, ScoreState, score_file

FORMATS = ["csv", "jsonl", "parquet"]


@pytest.fixture(scope="module")
def router(tiny_router_path: Path) -> Router:
    return Router.load(tiny_router_path, threads=1)


@pytest.fixture(scope="module")
def bank(real_texts: list[str]) -> tuple[list[str], list[str]]:
    """Real MMLU-Pro texts (many span several lines, with quotes and commas) and string ids."""
    texts = real_texts[:120]
    return [f"q{i:04d}" for i in range(len(texts))], texts


def write_bank(path: Path, rows: Sequence[dict[str, Any]]) -> Path:
    kind = path.suffix
    if kind == ".csv":
        columns = list(rows[0])
        with open(path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=columns)
            writer.writeheader()
            writer.writerows(rows)
    elif kind == ".jsonl":
        with open(path, "w", encoding="utf-8") as handle:
            handle.writelines(json.dumps(row) + "\n" for row in rows)
    else:
        pq.write_table(pa.Table.from_pylist(list(rows)), path)
    return path


def read_scores(path: Path) -> list[dict[str, Any]]:
    if path.suffix == ".csv":
        with open(path, newline="", encoding="utf-8") as handle:
            return list(csv.DictReader(handle))
    if path.suffix == ".jsonl":
        with open(path, encoding="utf-8") as handle:
            return [json.loads(line) for line in handle]
    return pq.read_table(path).to_pylist()


def column(rows: list[dict[str, Any]], name: str) -> np.ndarray:
    return np.asarray([float(row[name]) for row in rows])


def check_against_one_shot(
    router: Router, texts: list[str], rows: list[dict[str, Any]], k: int, everything: bool
) -> None:
    expected = router.route(texts, k=k)
    assert len(rows) == len(texts)
    for rank in range(k):
        assert [row[f"llm_{rank + 1}"] for row in rows] == [names[rank] for names in expected.names]
        np.testing.assert_allclose(
            column(rows, f"p_{rank + 1}"), expected.probabilities[:, rank], rtol=1e-5, atol=1e-7
        )
    np.testing.assert_allclose(column(rows, "difficulty"), router.difficulty(texts), rtol=1e-5)
    if everything:
        probabilities = router.predict_proba(texts)
        for j, name in enumerate(router.llms):
            np.testing.assert_allclose(column(rows, f"p[{name}]"), probabilities[:, j], rtol=1e-5, atol=1e-7)
    else:
        assert not any(key.startswith("p[") for key in rows[0])


@pytest.mark.parametrize("source", FORMATS)
@pytest.mark.parametrize("target", FORMATS)
def test_every_format_in_and_out_matches_one_shot_scoring(
    router: Router, bank: tuple[list[str], list[str]], tmp_path: Path, source: str, target: str
) -> None:
    ids, texts = bank
    path = write_bank(
        tmp_path / f"bank.{source}", [{"id": i, "text": t, "other": 1} for i, t in zip(ids, texts)]
    )
    output = tmp_path / f"scores.{target}"
    summary = score_file(router, input_path=path, output=output, options=ScoreOptions(k=2, chunk_size=17))
    assert summary.rows == len(texts) and summary.skipped == 0
    rows = read_scores(output)
    assert [str(row["id"]) for row in rows] == ids  # carried through, in input order
    check_against_one_shot(router, texts, rows, k=2, everything=False)
    assert list(rows[0]) == ["id", "llm_1", "p_1", "llm_2", "p_2", "difficulty"]
    assert [p.name for p in tmp_path.iterdir()] and not list(tmp_path.glob(".*partial*"))


@pytest.mark.parametrize("chunk_size", [1, 7, 64, 4096])
def test_chunk_size_does_not_change_the_scores(
    router: Router, bank: tuple[list[str], list[str]], tmp_path: Path, chunk_size: int
) -> None:
    _, texts = bank
    path = write_bank(tmp_path / "bank.jsonl", [{"question_id": n, "text": t} for n, t in enumerate(texts)])
    output = tmp_path / "scores.parquet"
    summary = score_file(
        router,
        input_path=path,
        output=output,
        options=ScoreOptions(k=3, all_probabilities=True, forecast=True, chunk_size=chunk_size),
    )
    rows = read_scores(output)
    assert [row["id"] for row in rows] == list(range(len(texts)))  # question_id found without being named
    check_against_one_shot(router, texts, rows, k=3, everything=True)
    assert pq.ParquetFile(output).metadata.num_row_groups == -(-len(texts) // chunk_size)
    assert summary.forecast is not None
    expected = router.forecast(texts)
    assert list(summary.forecast) == list(expected)
    np.testing.assert_allclose(list(summary.forecast.values()), list(expected.values()), rtol=1e-5, atol=1e-7)


def test_a_text_repeated_in_a_chunk_is_encoded_once_and_scored_for_every_row(
    router: Router, bank: tuple[list[str], list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A long table of answers: each question once per LLM, the rows of one LLM after the other's.
    _, texts = bank
    repeated = texts[:30] * 4
    path = write_bank(tmp_path / "answers.csv", [{"id": i, "text": t} for i, t in enumerate(repeated)])
    encoded: list[str] = []
    encode = Router.encode

    def counting(self: Router, texts: Sequence[str], **kwargs: Any) -> EncodedQuestions:
        encoded.extend(texts)
        return encode(self, texts, **kwargs)

    monkeypatch.setattr(Router, "encode", counting)
    state = ScoreState()
    output = tmp_path / "scores.csv"
    score_file(router, input_path=path, output=output, options=ScoreOptions(k=2, chunk_size=50), state=state)
    # Each chunk of 50 rows encodes its distinct texts once: 30, 30 and 20 of them.
    assert len(encoded) == sum(len(set(repeated[i : i + 50])) for i in range(0, 120, 50)) == 80
    assert state.rows_read == 120
    monkeypatch.setattr(Router, "encode", encode)
    check_against_one_shot(router, repeated, read_scores(output), k=2, everything=False)


def test_forecast_without_an_output_file(
    router: Router, bank: tuple[list[str], list[str]], tmp_path: Path
) -> None:
    _, texts = bank
    path = write_bank(tmp_path / "bank.csv", [{"text": t} for t in texts])
    summary = score_file(router, input_path=path, options=ScoreOptions(forecast=True, chunk_size=50))
    assert summary.output is None and summary.rows == len(texts)
    assert summary.forecast == pytest.approx(router.forecast(texts), rel=1e-5)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bank.csv"]


def test_paths_may_be_strings_as_everywhere_in_the_api(
    router: Router, bank: tuple[list[str], list[str]], tmp_path: Path
) -> None:
    # Router.load and Router.save take a str or a Path: score_file's paths did not (a str had no .suffix).
    ids, texts = bank
    path = write_bank(tmp_path / "bank.csv", [{"id": i, "text": t} for i, t in zip(ids[:10], texts[:10])])
    summary = score_file(router, input_path=str(path), output=str(tmp_path / "s.csv"))
    assert summary.output == tmp_path / "s.csv" and summary.rows == 10
    assert [row["id"] for row in read_scores(tmp_path / "s.csv")] == ids[:10]
    vectors, id_file = tmp_path / "v.npy", tmp_path / "ids.txt"
    np.save(vectors, router.encode(texts[:10]).vectors)
    id_file.write_text("\n".join(ids[:10]) + "\n", encoding="utf-8")
    plain = router.with_neighbours(None)
    score_file(plain, vectors_path=str(vectors), ids_path=str(id_file), output=str(tmp_path / "v.csv"))
    assert [row["id"] for row in read_scores(tmp_path / "v.csv")] == ids[:10]
    with pytest.raises(JeirtError, match="is also the input"):
        score_file(router, input_path=str(path), output=str(path))


def test_without_an_id_column_ids_are_row_numbers(
    router: Router, bank: tuple[list[str], list[str]], tmp_path: Path
) -> None:
    _, texts = bank
    path = write_bank(tmp_path / "bank.csv", [{"text": t, "label": "x"} for t in texts[:10]])
    score_file(router, input_path=path, output=tmp_path / "s.jsonl", options=ScoreOptions(chunk_size=3))
    assert [row["id"] for row in read_scores(tmp_path / "s.jsonl")] == list(range(1, 11))  # as errors count


def test_parquet_ids_keep_their_type_and_dates_survive_every_format(router: Router, tmp_path: Path) -> None:
    import datetime

    days = [datetime.date(2024, 1, d) for d in (1, 2, 3)]
    path = tmp_path / "bank.parquet"
    pq.write_table(pa.table({"id": days, "text": ["what is the price", "acid base", "law"]}), path)
    for target in FORMATS:
        score_file(
            router, input_path=path, output=tmp_path / f"s.{target}", options=ScoreOptions(chunk_size=2)
        )
    assert pq.read_table(tmp_path / "s.parquet").column("id").to_pylist() == days
    assert [row["id"] for row in read_scores(tmp_path / "s.jsonl")] == [str(day) for day in days]
    assert [row["id"] for row in read_scores(tmp_path / "s.csv")] == [str(day) for day in days]


def test_named_columns(router: Router, bank: tuple[list[str], list[str]], tmp_path: Path) -> None:
    ids, texts = bank
    rows = [{"qid": i, "question": t, "id": "ignored"} for i, t in zip(ids[:5], texts[:5])]
    path = write_bank(tmp_path / "bank.parquet", rows)
    score_file(router, input_path=path, output=tmp_path / "s.csv", text_column="question", id_column="qid")
    assert [row["id"] for row in read_scores(tmp_path / "s.csv")] == ids[:5]
    # Unnamed: the text is the first of text, question, prompt, the id the first of id, question_id, qid (as train
    # reads a table of answers), so a bank of train's column names needs no option.
    score_file(router, input_path=path, output=tmp_path / "d.csv")
    assert [(row["id"], row["llm_1"]) for row in read_scores(tmp_path / "d.csv")] == [
        ("ignored", row["llm_1"]) for row in read_scores(tmp_path / "s.csv")]
    by_qid = write_bank(tmp_path / "by_qid.jsonl", [{"qid": i, "prompt": t} for i, t in zip(ids[:5], texts[:5])])
    score_file(router, input_path=by_qid, output=tmp_path / "q.csv")
    assert read_scores(tmp_path / "q.csv") == read_scores(tmp_path / "s.csv")
    other = write_bank(tmp_path / "other.parquet", [{"qid": i, "body": t} for i, t in zip(ids[:5], texts[:5])])
    with pytest.raises(JeirtError, match=r"no text column \(looked for 'text', 'question', 'prompt'; columns: qid, body\)"):
        score_file(router, input_path=other, output=tmp_path / "t.csv")
    with pytest.raises(JeirtError, match="no id column 'nope'"):
        score_file(
            router, input_path=path, output=tmp_path / "t.csv", text_column="question", id_column="nope"
        )
    assert not (tmp_path / "t.csv").exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a named pipe")
def test_a_jsonl_bank_on_a_pipe_is_read_by_its_first_line_s_fields(
    router: Router, bank: tuple[list[str], list[str]], tmp_path: Path
) -> None:
    # A pipe can be read once: the text field is learned from the first line read ahead, not from a second reading.
    ids, texts = bank
    rows = [{"qid": i, "prompt": t} for i, t in zip(ids[:5], texts[:5])]
    pipe = tmp_path / "bank.jsonl"
    os.mkfifo(pipe)
    data = "".join(json.dumps(row) + "\n" for row in rows).encode()

    def feed() -> None:  # the first line in two writes, apart: the reader must wait for its end, not guess
        with open(pipe, "wb", buffering=0) as writer:
            writer.write(data[:10])
            time.sleep(0.2)
            writer.write(data[10:])

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    try:
        score_file(router, input_path=pipe, output=tmp_path / "p.csv")
    finally:
        feeder.join(timeout=30)
    score_file(router, input_path=write_bank(tmp_path / "named.jsonl", rows), output=tmp_path / "n.csv",
               text_column="prompt", id_column="qid")
    assert read_scores(tmp_path / "p.csv") == read_scores(tmp_path / "n.csv")
    assert [row["id"] for row in read_scores(tmp_path / "p.csv")] == ids[:5]


def test_a_jsonl_bank_s_text_field_is_that_of_its_first_readable_object(router: Router, tmp_path: Path) -> None:
    long_first = tmp_path / "long.jsonl"  # a first line longer than any read buffer
    rows = [{"qid": "a", "question": "what is the price of a market " * 3000}, {"qid": "b", "question": "acid"}]
    long_first.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    score_file(router, input_path=long_first, output=tmp_path / "l.csv")
    assert [row["id"] for row in read_scores(tmp_path / "l.csv")] == ["a", "b"]
    unreadable_first = tmp_path / "unreadable.jsonl"  # the first readable object stands for the header
    unreadable_first.write_text('{"qid": \n' + json.dumps({"qid": "b", "prompt": "acid"}) + "\n", encoding="utf-8")
    summary = score_file(router, input_path=unreadable_first, output=tmp_path / "u.csv",
                         options=ScoreOptions(skip_bad=True))
    assert summary.skipped == 1 and [row["id"] for row in read_scores(tmp_path / "u.csv")] == ["b"]


# -- bad rows ------------------------------------------------------------------------------------------------


def _bad_csv(path: Path) -> Path:
    lines = [
        b"id,text",
        b"a,what is the price",
        b"b,",
        b"c,acid base",
        b'd,"  "',
        b"e,caf\xe9 and \xff market",
        b"f,law",
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def _bad_jsonl(path: Path) -> Path:
    lines = [
        b'{"id": "a", "text": "what is the price"}',
        b'{"id": "b", "text": 42}',
        b"",  # blank lines are not data rows
        b'{"id": "c", "text": "acid base"}',
        b'{"id": "d", "text": null}',
        b'{"id": "e", "text": "caf\xe9"}',
        b'{"id": "f", "text": "law"',
        b'["not", "an", "object"]',
        b'{"id": "g", "question": "no text field"}',
        b'{"id": "h", "text": "velocity"}',
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


@pytest.mark.parametrize(
    ("make", "row", "problem", "skipped", "kept"),
    [
        (_bad_csv, 2, "text is empty", 3, ["a", "c", "f"]),
        (_bad_jsonl, 2, "text is an int, not a string", 6, ["a", "c", "h"]),
    ],
)
def test_bad_rows_stop_the_run_with_their_row_number_or_are_skipped_and_counted(
    router: Router, tmp_path: Path, make: Any, row: int, problem: str, skipped: int, kept: list[str]
) -> None:
    path = make(tmp_path / ("bank.csv" if make is _bad_csv else "bank.jsonl"))
    output = tmp_path / "scores.csv"
    with pytest.raises(
        JeirtError, match=rf"data row {row} \(1-based, .* not counted.*\): {problem}.*skip_bad=True"
    ):
        score_file(router, input_path=path, output=output)
    assert not output.exists() and not partial_path(output).exists()

    summary = score_file(
        router, input_path=path, output=output, options=ScoreOptions(skip_bad=True, chunk_size=2)
    )
    assert summary.skipped == skipped and summary.rows == len(kept)
    assert [r["id"] for r in read_scores(output)] == kept


def test_each_kind_of_bad_jsonl_row_is_named(router: Router, tmp_path: Path) -> None:
    path = _bad_jsonl(tmp_path / "bank.jsonl")
    lines = path.read_bytes().split(b"\n")
    expected = {
        2: "text is an int, not a string",
        4: "has no text",
        5: "not valid UTF-8",
        6: "not valid JSON",
        7: "line is an array, not a JSON object",
        8: "no field 'text' (fields: id, question)",
    }
    good = [line for n, line in enumerate(lines, 1) if line]
    for row, problem in expected.items():
        single = tmp_path / f"row{row}.jsonl"
        single.write_bytes(good[0] + b"\n" + good[row - 1] + b"\n")
        with pytest.raises(JeirtError, match=rf"data row 2 \(.*line 2\): .*{re.escape(problem)}"):
            score_file(router, input_path=single, output=tmp_path / "s.csv")


def test_undecodable_csv_bytes_are_a_bad_row_not_a_crash(router: Router, tmp_path: Path) -> None:
    path = tmp_path / "bank.csv"
    path.write_bytes(b"text\nwhat is the price\ncaf\xe9 market\n")
    with pytest.raises(JeirtError, match=r"data row 2 .*not valid UTF-8"):
        score_file(router, input_path=path, output=tmp_path / "s.csv")


def test_null_and_non_text_parquet_values(router: Router, tmp_path: Path) -> None:
    path = tmp_path / "bank.parquet"
    pq.write_table(pa.table({"text": ["what is the price", None, "acid base"]}), path)
    with pytest.raises(JeirtError, match=r"data row 2 .*has no text"):
        score_file(router, input_path=path, output=tmp_path / "s.csv")
    summary = score_file(
        router, input_path=path, output=tmp_path / "s.csv", options=ScoreOptions(skip_bad=True)
    )
    assert (summary.rows, summary.skipped) == (2, 1)
    assert [r["id"] for r in read_scores(tmp_path / "s.csv")] == ["1", "3"]  # row numbers keep the gap
    numbers = tmp_path / "numbers.parquet"
    pq.write_table(pa.table({"text": [1, 2]}), numbers)
    with pytest.raises(JeirtError, match=r"data row 1 .*text is an int, not a string"):
        score_file(router, input_path=numbers, output=tmp_path / "s.csv")


# -- all or nothing ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("target", FORMATS)
def test_a_failure_on_a_later_chunk_leaves_no_output_and_keeps_an_older_file(
    router: Router, bank: tuple[list[str], list[str]], tmp_path: Path, target: str
) -> None:
    _, texts = bank
    rows = [{"text": t} for t in texts[:50]] + [{"text": ""}] + [{"text": t} for t in texts[:10]]
    path = write_bank(tmp_path / "bank.csv", rows)
    output = tmp_path / f"scores.{target}"
    output.write_text("previous results\n")
    state = ScoreState()
    with pytest.raises(JeirtError, match="data row 51"):
        score_file(router, input_path=path, output=output, options=ScoreOptions(chunk_size=8), state=state)
    assert state.rows_scored == 48  # six whole chunks were written before the chunk holding row 51
    assert output.read_text() == "previous results\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bank.csv", f"scores.{target}"]


def test_an_interrupt_between_chunks_deletes_the_partial_file(
    router: Router, bank: tuple[list[str], list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, texts = bank
    path = write_bank(tmp_path / "bank.csv", [{"text": t} for t in texts])
    output = tmp_path / "scores.parquet"
    calls = {"n": 0}
    original = router.route

    def interrupted_on_third_chunk(questions: Any, k: int = 1, **more: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 3:
            assert partial_path(output).exists()  # the first two chunks were being written here
            raise KeyboardInterrupt
        return original(questions, k=k, **more)

    monkeypatch.setattr(router, "route", interrupted_on_third_chunk)
    state = ScoreState()
    with pytest.raises(KeyboardInterrupt):
        score_file(router, input_path=path, output=output, options=ScoreOptions(chunk_size=10), state=state)
    assert state.rows_scored == 20
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bank.csv"]


def test_empty_bank(router: Router, tmp_path: Path) -> None:
    path = tmp_path / "bank.csv"
    path.write_text("id,text\n")
    for target in FORMATS:
        summary = score_file(
            router, input_path=path, output=tmp_path / f"s.{target}", options=ScoreOptions(k=2)
        )
        assert summary.rows == 0 and read_scores(tmp_path / f"s.{target}") == []
    assert pq.read_schema(tmp_path / "s.parquet").names == [
        "id",
        "llm_1",
        "p_1",
        "llm_2",
        "p_2",
        "difficulty",
    ]
    with pytest.raises(JeirtError, match="no question was scored"):
        score_file(router, input_path=path, output=tmp_path / "f.csv", options=ScoreOptions(forecast=True))
    assert not (tmp_path / "f.csv").exists()


@pytest.mark.parametrize(("header", "rows"), [("id,text", "q1, \nq2,\n"), ("id\ttext", "q1\t \n"),
                                              ("id,text", "")])
def test_a_csv_banks_empty_day_has_the_text_ids_of_its_other_days(
    router: Router, tmp_path: Path, header: str, rows: str
) -> None:
    """A CSV or TSV id is text on every row: a bank of no row, or whose every row is skipped, keeps that type in its
    Parquet file, so that a daily bank's files read as one table (an empty one had int64 ids)."""
    suffix = ".tsv" if "\t" in header else ".csv"
    day, empty_day = tmp_path / f"day{suffix}", tmp_path / f"empty_day{suffix}"
    day.write_text(f"{header}\n" + ("q0\tWhat is 7 * 8?\n" if suffix == ".tsv" else "q0,What is 7 * 8?\n"))
    empty_day.write_text(f"{header}\n{rows}")
    for bank in (day, empty_day):
        score_file(router, input_path=bank, output=bank.with_suffix(".parquet"), options=ScoreOptions(skip_bad=True))
    assert pq.read_schema(empty_day.with_suffix(".parquet")) == pq.read_schema(day.with_suffix(".parquet"))


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("bank.txt", "text\nx\n", "cannot tell the input format from the suffix '.txt'"),
        ("bank.csv", "", "empty file"),
        ("missing.csv", None, "no such file"),
        ("bank.parquet", "not parquet", "not a readable Parquet file"),
    ],
)
def test_unusable_inputs(router: Router, tmp_path: Path, name: str, content: Any, message: str) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    with pytest.raises(JeirtError, match=message):
        score_file(router, input_path=path, output=tmp_path / "s.csv")


def test_unusable_outputs_and_arguments(
    router: Router, bank: tuple[list[str], list[str]], tmp_path: Path
) -> None:
    path = write_bank(tmp_path / "bank.csv", [{"text": t} for t in bank[1][:3]])
    with pytest.raises(JeirtError, match="output format from the suffix '.xlsx'"):
        score_file(router, input_path=path, output=tmp_path / "s.xlsx")
    # A folder is named as one, suffix or none (`-o .` said "cannot tell the output format from the suffix ''").
    (tmp_path / "out").mkdir()
    for folder in (tmp_path / "out", tmp_path):
        with pytest.raises(JeirtError, match=re.escape(f"{folder}: is a folder; give a file name such as "
                                                       f"{folder / 'scores.parquet'}")):
            score_file(router, input_path=path, output=folder)
    (tmp_path / "out").rmdir()
    with pytest.raises(JeirtError, match="no such folder"):
        score_file(router, input_path=path, output=tmp_path / "nope" / "s.csv")
    with pytest.raises(JeirtError, match="is also the input"):
        score_file(router, input_path=path, output=path)
    with pytest.raises(JeirtError, match="k must be between 1 and the router's 5 LLMs, got 6"):
        score_file(router, input_path=path, output=tmp_path / "s.csv", options=ScoreOptions(k=6))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bank.csv"]


def test_parquet_without_pyarrow_names_the_extra(
    router: Router, bank: tuple[list[str], list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_bank(tmp_path / "bank.csv", [{"text": t} for t in bank[1][:3]])
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # makes `import pyarrow` fail
    with pytest.raises(JeirtError, match=r"pip install 'jeirt-lite\[parquet\]'"):
        score_file(router, input_path=path, output=tmp_path / "s.parquet")
    score_file(router, input_path=path, output=tmp_path / "s.csv")  # the other formats do not need it
    assert len(read_scores(tmp_path / "s.csv")) == 3


# -- precomputed vectors -------------------------------------------------------------------------------------


def test_vectors_mode_matches_routing_the_vectors(router: Router, tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(103, router.dim)).astype(np.float64)  # any float dtype is accepted
    np.save(tmp_path / "q.npy", vectors)
    output = tmp_path / "s.parquet"
    summary = score_file(
        router,
        vectors_path=tmp_path / "q.npy",
        output=output,
        options=ScoreOptions(k=2, all_probabilities=True, forecast=True, chunk_size=10),
    )
    rows = read_scores(output)
    expected = router.route(EncodedQuestions(vectors), k=2)
    assert [row["id"] for row in rows] == list(range(103))
    assert [row["llm_1"] for row in rows] == [names[0] for names in expected.names]
    np.testing.assert_allclose(column(rows, "p_2"), expected.probabilities[:, 1], rtol=1e-5)
    np.testing.assert_allclose(column(rows, "difficulty"), np.linalg.norm(vectors, axis=1), rtol=1e-5)
    assert summary.forecast == pytest.approx(router.forecast(EncodedQuestions(vectors)), rel=1e-5)


def test_vectors_mode_ids_and_bad_rows(router: Router, tmp_path: Path) -> None:
    vectors = np.ones((6, router.dim), dtype=np.float32)
    vectors[4, 0] = np.nan
    np.save(tmp_path / "q.npy", vectors)
    (tmp_path / "ids.txt").write_text("".join(f"id-{i}\n" for i in range(6)))
    with pytest.raises(JeirtError, match=r"vector row 4 \(0-based, as in the array\) contains NaN"):
        score_file(router, vectors_path=tmp_path / "q.npy", output=tmp_path / "s.csv")
    summary = score_file(
        router,
        vectors_path=tmp_path / "q.npy",
        ids_path=tmp_path / "ids.txt",
        output=tmp_path / "s.csv",
        options=ScoreOptions(skip_bad=True, chunk_size=4),
    )
    assert summary.skipped == 1
    assert [row["id"] for row in read_scores(tmp_path / "s.csv")] == ["id-0", "id-1", "id-2", "id-3", "id-5"]
    np.save(tmp_path / "ids.npy", np.arange(100, 106))
    score_file(
        router,
        vectors_path=tmp_path / "q.npy",
        ids_path=tmp_path / "ids.npy",
        output=tmp_path / "s.jsonl",
        options=ScoreOptions(skip_bad=True),
    )
    assert [row["id"] for row in read_scores(tmp_path / "s.jsonl")] == [100, 101, 102, 103, 105]
    (tmp_path / "short.txt").write_text("a\nb\n")
    with pytest.raises(JeirtError, match="has 2 ids but the vectors have 6 rows"):
        score_file(
            router,
            vectors_path=tmp_path / "q.npy",
            ids_path=tmp_path / "short.txt",
            output=tmp_path / "t.csv",
            options=ScoreOptions(skip_bad=True),
        )
    (tmp_path / "trailing.txt").write_text("".join(f"id-{i}\n" for i in range(6)) + "\n \n")
    score_file(router, vectors_path=tmp_path / "q.npy", ids_path=tmp_path / "trailing.txt",
               output=tmp_path / "t.csv", options=ScoreOptions(skip_bad=True))
    assert [row["id"] for row in read_scores(tmp_path / "t.csv")][-1] == "id-5"  # blank lines at the end: no ids
    (tmp_path / "t.csv").unlink()
    for name, text, problem in (("more.txt", "a\nb\nc\nd\ne\nf\n\ng\n", "has more ids than the 6 vector rows"),
                                ("blank.txt", "a\nb\n\nd\ne\nf\n", r"id 3 \(1-based\): id is empty")):
        (tmp_path / name).write_text(text)
        with pytest.raises(JeirtError, match=problem):
            score_file(router, vectors_path=tmp_path / "q.npy", ids_path=tmp_path / name,
                       output=tmp_path / "t.csv", options=ScoreOptions(skip_bad=True))
    np.save(tmp_path / "wrong.npy", np.ones((3, router.dim + 1)))
    with pytest.raises(JeirtError, match=r"shape \(N, 4\) for this router, got \(3, 5\)"):
        score_file(router, vectors_path=tmp_path / "wrong.npy", output=tmp_path / "t.csv")
    assert not (tmp_path / "t.csv").exists()


# -- progress line -------------------------------------------------------------------------------------------


def test_progress_line_shows_rate_share_and_eta() -> None:
    stream = io.StringIO()
    progress = Progress(total=1000, stream=stream)
    progress.advance(250)
    line = progress.line(progress.started + 1.0)
    assert line.startswith("250/1,000 rows   25%  250 rows/s  ETA 0:03")
    progress.close()
    assert stream.getvalue().startswith("\r250/1,000 rows") and stream.getvalue().endswith("\n")
    unknown = Progress(estimate_total=lambda: 20.0, stream=stream)
    unknown.advance(10)
    assert " 50%" in unknown.line(unknown.started + 2.0) and "ETA 0:02" in unknown.line(unknown.started + 2.0)
    quiet = io.StringIO()
    silent = Progress(total=10, enabled=False, stream=quiet)
    silent.advance(5)
    silent.close()
    assert quiet.getvalue() == ""


def test_unusable_vector_files(router: Router, tmp_path: Path) -> None:
    np.save(tmp_path / "objects.npy", np.array([[1, "a", 2, 3]], dtype=object), allow_pickle=True)
    np.save(tmp_path / "fortran.npy", np.asfortranarray(np.ones((3, router.dim))))
    full = np.ones((5, router.dim), dtype=np.float32)
    np.save(tmp_path / "full.npy", full)
    (tmp_path / "cut.npy").write_bytes((tmp_path / "full.npy").read_bytes()[:-10])
    (tmp_path / "junk.npy").write_bytes(b"not an array")
    for name, message in [
        ("objects.npy", "holds Python objects"),
        ("fortran.npy", "Fortran order"),
        ("cut.npy", "file ends early"),
        ("junk.npy", "not a readable .npy array"),
        ("absent.npy", "no such file"),
    ]:
        with pytest.raises(JeirtError, match=message):
            score_file(
                router,
                vectors_path=tmp_path / name,
                output=tmp_path / "s.csv",
                options=ScoreOptions(chunk_size=2),
            )
        assert not (tmp_path / "s.csv").exists()


def test_an_output_that_is_a_symbolic_link_is_replaced_and_its_target_left_as_it_was(
    router: Router, bank: tuple[list[str], list[str]], tmp_path: Path
) -> None:
    ids, texts = bank
    path = write_bank(tmp_path / "bank.csv", [{"id": i, "text": t} for i, t in zip(ids[:5], texts)])
    target = tmp_path / "elsewhere.csv"
    target.write_text("kept\n")
    (tmp_path / "scores.csv").symlink_to(target)
    score_file(router, input_path=path, output=tmp_path / "scores.csv", options=ScoreOptions(k=1))
    assert not (tmp_path / "scores.csv").is_symlink() and len(read_scores(tmp_path / "scores.csv")) == 5
    assert target.read_text() == "kept\n"
