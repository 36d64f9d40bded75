"""Hostile input and output paths through the I/O wing: each case ends in a clear JeirtError that names the file
and row (the input untouched, no output) or in a complete, correct result."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jeirt_lite
import numpy as np
import pyarrow.parquet as pq
import pytest
from jeirt_lite import EncodedQuestions, JeirtError, Router
from jeirt_lite._io.formats import read_question_table
from jeirt_lite._io.outputs import partial_path, refuse_inputs, remove_stale_partials, writer_token
from jeirt_lite._io.tables import read_table
from jeirt_lite.batch import ScoreOptions, score_file
from jeirt_lite.cli import main
from npy_bytes import MAGIC, npy_bytes


@pytest.fixture(scope="module")
def router(tiny_router_path: Path) -> Router:
    return Router.load(tiny_router_path, threads=1)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(jeirt_lite.__file__).resolve().parents[1]), env.get("PYTHONPATH", "")])
    return env


def _cli(capsys: pytest.CaptureFixture[str], *args: Any) -> tuple[int, str]:
    code = main([str(arg) for arg in args])
    return code, capsys.readouterr().err


def _bank_lines(n: int) -> list[str]:
    return [f"q{i},what is the price of a market {i}" for i in range(n)]


# -- CSV read strictly ---------------------------------------------------------------------------------------


def test_an_unclosed_quote_is_an_error_naming_its_row_never_a_merge(router: Router, tmp_path: Path) -> None:
    lines = ["id,text", *_bank_lines(1000)]
    lines[20] = 'q19,"what is the price of a market'  # data row 20 opens a quote it never closes
    bank = tmp_path / "bank.csv"
    bank.write_text("\n".join(lines) + "\n", encoding="utf-8")
    output = tmp_path / "scores.csv"
    with pytest.raises(JeirtError, match=r"bank\.csv: data row 20 \(.*\) .*starting on line 21 is never closed"):
        score_file(router, input_path=bank, output=output, options=ScoreOptions(chunk_size=7, skip_bad=True))
    assert not output.exists()
    with pytest.raises(JeirtError, match="data row 20"):  # the same reader for add-llm and score
        read_question_table(bank)


def test_a_malformed_first_row_is_named_by_its_own_line_after_a_long_header_or_blank_lines(tmp_path: Path) -> None:
    bank = tmp_path / "bank.csv"
    cases = (("id,text", 2), ('"question\nid",text', 3), ("id,text\n\n", 4))  # a quoted name may hold a newline
    for before, line in cases:
        bank.write_text(f'{before}\na,"never closed\n', encoding="utf-8")
        with pytest.raises(JeirtError, match=rf"data row 1 \(.*\) .*the row starting on line {line} is never closed"):
            read_question_table(bank)


def test_text_after_a_closing_quote_is_an_error(router: Router, tmp_path: Path) -> None:
    bank = tmp_path / "bank.csv"
    bank.write_text('id,text\na,plain\nb,"quoted" and more\nc,plain\n', encoding="utf-8")
    with pytest.raises(JeirtError, match=r"data row 2 .*not valid CSV .*the row starts on line 3"):
        score_file(router, input_path=bank, output=tmp_path / "s.csv")


def test_ragged_rows_are_bad_rows_not_shifted_columns(router: Router, tmp_path: Path) -> None:
    bank = tmp_path / "bank.csv"
    # Row 2's unquoted comma would make "what is the price" its text and drop the rest.
    bank.write_text("id,text\na,acid base\nb,what is the price, of a market\nc\nd,law\n", encoding="utf-8")
    with pytest.raises(JeirtError, match=r"data row 2 .*has 3 fields, the header has 2"):
        score_file(router, input_path=bank, output=tmp_path / "s.csv")
    summary = score_file(router, input_path=bank, output=tmp_path / "s.csv", options=ScoreOptions(skip_bad=True))
    assert (summary.rows, summary.skipped) == (2, 2)
    assert [row.split(",")[0] for row in (tmp_path / "s.csv").read_text().splitlines()[1:]] == ["a", "d"]


def test_blank_lines_and_embedded_newlines(router: Router, tmp_path: Path) -> None:
    bank = tmp_path / "bank.csv"
    bank.write_text('id,text\n\na,"two\nlines"\n\n\nb,law\n\n', encoding="utf-8")
    table = read_question_table(bank)
    assert table.texts == ["two\nlines", "law"] and table.ids == ["a", "b"]


def test_nul_bytes(router: Router, tmp_path: Path) -> None:
    bank = tmp_path / "bank.csv"
    bank.write_bytes(b"id,text\na,acid\x00 base\nb,law\n")
    with pytest.raises(JeirtError, match=r"data row 1 .*NUL character"):
        score_file(router, input_path=bank, output=tmp_path / "s.csv")
    utf16_without_mark = tmp_path / "wide.csv"
    utf16_without_mark.write_bytes("id,text\na,law\n".encode("utf-16-le"))
    with pytest.raises(JeirtError, match=r"wide\.csv: has a NUL byte at byte 1"):
        score_file(router, input_path=utf16_without_mark, output=tmp_path / "s.csv")


# -- encodings, decided once for every reader ----------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_utf16_and_utf8_byte_order_marks(router: Router, tmp_path: Path, suffix: str) -> None:
    text = "id,text\na,law\n" if suffix == ".csv" else '{"id": "a", "text": "law"}\n'
    marked = tmp_path / f"marked{suffix}"
    marked.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    assert read_question_table(marked).ids == ["a"]  # a UTF-8 byte-order mark is dropped
    wide = tmp_path / f"wide{suffix}"
    wide.write_bytes(text.encode("utf-16"))  # with its byte-order mark
    for read in (
        lambda: score_file(router, input_path=wide, output=tmp_path / "s.csv"),
        lambda: read_question_table(wide),
        lambda: read_table(wide),
    ):
        with pytest.raises(JeirtError, match=r"wide\.\w+: is UTF-16 \(byte-order mark FF FE at byte 0\)"):
            read()


def test_bytes_that_are_not_utf8_in_any_column_are_a_bad_row(router: Router, tmp_path: Path) -> None:
    bank = tmp_path / "bank.csv"
    bank.write_bytes(b"id,text\nca\xe9,acid base\nb,law\n")  # the id, not the text, is Latin-1
    output = tmp_path / "s.csv"
    with pytest.raises(JeirtError, match=r"data row 1 .*not valid UTF-8"):
        score_file(router, input_path=bank, output=output)
    summary = score_file(router, input_path=bank, output=output, options=ScoreOptions(skip_bad=True))
    assert (summary.rows, summary.skipped) == (1, 1)


def test_question_ids_file_that_is_not_utf8(
    tiny_router_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    ids = tmp_path / "ids.txt"
    ids.write_bytes(b"q1\nq\xe92\n")
    code, err = _cli(capsys, "report", tiny_router_path, "--data", tmp_path, "--question-ids", ids, "-o", tmp_path / "r.html")
    assert code == 1 and "ids.txt: line 2 (byte 4) is not valid UTF-8" in err


# -- outputs never replace an input --------------------------------------------------------------------------


def _jsonl_bank(path: Path, n: int = 40) -> Path:
    path.write_text("".join(json.dumps({"id": f"q{i}", "text": f"what is the price {i}"}) + "\n" for i in range(n)))
    return path


def test_score_onto_its_own_bank_is_refused_under_any_name(
    tiny_router_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bank = _jsonl_bank(tmp_path / "bank.jsonl")
    before = bank.read_bytes()
    link = tmp_path / "link.jsonl"
    link.symlink_to(bank)
    hard = tmp_path / "hard.jsonl"
    os.link(bank, hard)
    for target in (bank, link, hard, tmp_path / "." / "bank.jsonl"):
        code, err = _cli(capsys, "score", bank, "-o", target, "--router", tiny_router_path)
        assert code == 1 and "is also the input" in err, err
    assert bank.read_bytes() == before
    code, _ = _cli(capsys, "score", bank, "-o", tmp_path / "p.jsonl", "--router", tiny_router_path)
    assert code == 0 and len((tmp_path / "p.jsonl").read_text().splitlines()) == 40


def test_add_llm_onto_its_answers_or_a_folder_holding_them_is_refused(
    tiny_router_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    answers = tmp_path / "a.csv"
    answers.write_text("text,correct\n" + "".join(f"what is the price {i},{i % 2}\n" for i in range(10)))
    before = answers.read_bytes()
    base = ["add-llm", tiny_router_path, "--name", "x", "--answers", answers, "--overwrite"]
    code, err = _cli(capsys, *base, "-o", answers)
    assert code == 1 and "is also the input" in err
    code, err = _cli(capsys, *base, "-o", tmp_path)
    assert code == 1 and "holds the input" in err
    code, err = _cli(capsys, *base, "-o", tiny_router_path)
    assert code == 1 and "is also the input" in err
    assert answers.read_bytes() == before and Router.load(tiny_router_path).llms[-1] != "x"


def test_score_and_report_onto_an_input_are_refused(
    router: Router, tiny_router_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bank = tmp_path / "bank.csv"
    bank.write_text("id,text\na,law\n")
    hard = tmp_path / "hard.csv"
    os.link(bank, hard)
    with pytest.raises(JeirtError, match="is also the input"):
        score_file(router, input_path=bank, output=hard)
    assert bank.read_text() == "id,text\na,law\n"
    data = tmp_path / "data"
    data.mkdir()
    (data / "questions.csv").write_text("question_id,text\nq1,law\n")
    code, err = _cli(capsys, "report", tiny_router_path, "--data", data, "-o", data / "questions.csv")
    assert code == 1 and "is also the input" in err
    assert (data / "questions.csv").read_text() == "question_id,text\nq1,law\n"


def test_training_refuses_an_output_folder_holding_its_data(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    from jeirt_lite_training.__main__ import main as training_main

    data = tmp_path / "data"
    data.mkdir()
    for target, message in ((data, "is also the input"), (tmp_path, "holds the input")):
        assert training_main(["fit", "--data", str(data), "--out", str(target)]) == 1
        err = capsys.readouterr().err
        assert err.startswith("jeirt-lite: error: ") and message in err  # no traceback
    with pytest.raises(JeirtError, match="holds the input"):
        refuse_inputs(tmp_path, [data / "questions.csv"], replaces_folder=True)


# -- .npy question vectors -----------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [(1, 0), (2, 0), (3, 0)])
def test_every_npy_format_version_is_read(router: Router, tmp_path: Path, version: tuple[int, int]) -> None:
    from numpy.lib import format as npy

    vectors = np.random.default_rng(1).normal(size=(9, router.dim)).astype(np.float32)
    path = tmp_path / "v.npy"
    with open(path, "wb") as handle:
        npy.write_array(handle, vectors, version=version)
    output = tmp_path / "s.csv"
    summary = score_file(router, vectors_path=path, output=output, options=ScoreOptions(chunk_size=4))
    assert summary.rows == 9
    best = [line.split(",")[1] for line in output.read_text().splitlines()[1:]]
    assert best == router.route(EncodedQuestions(vectors)).best


def test_vectors_in_an_unregistered_format_are_refused(router: Router, tmp_path: Path) -> None:
    (tmp_path / "v.txt").write_text("0 0 0 0\n")
    with pytest.raises(JeirtError, match=r"v\.txt: question vectors must be a \.npy file"):
        score_file(router, vectors_path=tmp_path / "v.txt", output=tmp_path / "s.csv")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 4), }", 4), "format version 4.0"),
        (npy_bytes("[1, 2]"), "not a dict of descr"),
        (npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 4), }"), "is not a tuple of sizes"),
        (npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 4), }", data=bytes(20)), "bytes after"),
        (npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }", data=bytes(16)), "file ends early"),
        (npy_bytes("{'descr': 'zz9', 'fortran_order': False, 'shape': (1, 4), }", data=bytes(16)), "descr 'zz9'"),
        (npy_bytes("__import__('os')"), "not a Python literal"),
        (MAGIC + b"\x01\x00\xff", "header is cut short"),
    ],
    ids=["version", "not-a-dict", "negative-shape", "extra-bytes", "truncated", "bad-descr", "code", "cut-header"],
)
def test_malformed_npy_files(router: Router, tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "v.npy"
    path.write_bytes(content)
    with pytest.raises(JeirtError, match=message):
        score_file(router, vectors_path=path, output=tmp_path / "s.csv")
    assert not (tmp_path / "s.csv").exists()


# -- typed outputs: one schema whatever the chunks -----------------------------------------------------------


def test_parquet_ids_that_stop_looking_numeric_after_the_first_chunk(router: Router, tmp_path: Path) -> None:
    ids: list[Any] = list(range(5000)) + ["q-5000", "q-5001"]
    bank = tmp_path / "bank.jsonl"
    bank.write_text("".join(json.dumps({"id": i, "text": f"what is the price {n % 7}"}) + "\n" for n, i in enumerate(ids)))
    written = {}
    for chunk_size in (4096, 10_000):
        output = tmp_path / f"s{chunk_size}.parquet"
        score_file(router, input_path=bank, output=output, options=ScoreOptions(chunk_size=chunk_size))
        written[chunk_size] = pq.read_table(output)
    assert written[4096].schema == written[10_000].schema and str(written[4096].schema.field("id").type) == "string"
    assert written[4096].column("id").to_pylist() == [str(i) for i in ids] == written[10_000].column("id").to_pylist()
    assert written[4096].column("llm_1").to_pylist() == written[10_000].column("llm_1").to_pylist()
    assert not list(tmp_path.glob(".*partial*"))
    score_file(router, input_path=bank, output=tmp_path / "s.csv")  # the same bank, every format
    assert (tmp_path / "s.csv").read_text().splitlines()[-1].startswith("q-5001,")


# -- partial files of killed runs ----------------------------------------------------------------------------


def _wait_for(condition: Callable[[], bool], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.05)


def test_the_partial_file_of_a_killed_run_is_removed_by_the_next_run(tiny_router_path: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "feed.csv"
    os.mkfifo(fifo)
    output = tmp_path / "scores.csv"
    killed = subprocess.Popen(
        [sys.executable, "-m", "jeirt_lite", "score", str(fifo), "-o", str(output), "--router",
         str(tiny_router_path), "--chunk-size", "5"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env(),
    )
    try:
        with open(fifo, "w", encoding="utf-8") as feed:
            feed.write("text\n" + "what is the price of a market\n" * 12)
            feed.flush()
            left = tmp_path / f".scores.csv.partial-{killed.pid}@{writer_token().split('@')[1]}"
            _wait_for(lambda: left.exists() and len(left.read_text().splitlines()) == 11)
            killed.send_signal(signal.SIGKILL)  # no handler runs: the partial file stays
            killed.wait(timeout=60)
    finally:
        if killed.poll() is None:
            killed.kill()
    assert left.exists()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        someone_elses = tmp_path / f".scores.csv.partial-{alive.pid}@{writer_token().split('@')[1]}"
        someone_elses.write_text("a run still going")
        bank = tmp_path / "bank.csv"
        bank.write_text("text\nwhat is the price\n")
        done = subprocess.run(
            [sys.executable, "-m", "jeirt_lite", "score", str(bank), "-o", str(output), "--router", str(tiny_router_path)],
            capture_output=True, text=True, env=_env(), timeout=120, check=False,
        )
        assert done.returncode == 0, done.stderr
        assert not left.exists() and someone_elses.exists()  # a live process's file is left alone
    finally:
        alive.kill()
        alive.wait()
    assert len(output.read_text().splitlines()) == 2
    assert remove_stale_partials(output) == [someone_elses] and f".partial-{os.getpid()}@" in partial_path(output).name


def test_the_folder_of_a_killed_save_is_removed_by_the_next_save(tiny_router_path: Path, tmp_path: Path) -> None:
    target = tmp_path / "router"
    killed_midway = (  # the process dies, as under SIGKILL or the out-of-memory killer, while writing the LLM table
        "import os, signal, sys\n"
        "import jeirt_lite.artifact as artifact\n"
        "from jeirt_lite import Router\n"
        "artifact.write_tensors = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)\n"
        "Router.load(sys.argv[1], threads=1).save(sys.argv[2])\n"
    )
    killed = subprocess.Popen([sys.executable, "-c", killed_midway, str(tiny_router_path), str(target)],
                              env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert killed.wait(timeout=120) == -signal.SIGKILL
    (left,) = tmp_path.glob(".router.tmp-*")
    assert left.name.startswith(f".router.tmp-{killed.pid}@") and (left / "encoder.onnx").is_file()
    assert not target.exists()
    Router.load(tiny_router_path, threads=1).save(target)
    assert [path.name for path in tmp_path.iterdir()] == ["router"]
    assert Router.load(target, threads=1).llms == Router.load(tiny_router_path, threads=1).llms


def test_training_reads_tables_through_the_same_strict_reader(tmp_path: Path) -> None:
    pytest.importorskip("pandas")
    from jeirt_lite_training.data import DataError, load_dataset_with_report

    table = tmp_path / "long.csv"
    table.write_text("question_id,text,llm,correct\nq1,law,a,1\nq2,acid, base,b,0\nq3,price,a,0\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"long\.csv: data row 2 .*has 5 fields, the header has 4"):
        load_dataset_with_report(table)
    data, report = load_dataset_with_report(table, skip_bad=True)
    assert data.question_ids == ["q1", "q3"] and report.skipped == {"unreadable row": 1}


def test_a_column_named_twice_is_refused(router: Router, tmp_path: Path) -> None:
    bank = tmp_path / "bank.csv"
    bank.write_text("id,text,text\na,law,acid base\n", encoding="utf-8")
    with pytest.raises(JeirtError, match="names the column 'text' twice"):
        score_file(router, input_path=bank, output=tmp_path / "s.csv")


def test_ids_print_the_same_in_every_output(router: Router, tmp_path: Path) -> None:
    bank = tmp_path / "bank.jsonl"
    bank.write_text('{"id": 7, "text": "law"}\n{"id": "b", "text": "acid base"}\n{"id": -3, "text": "price"}\n')
    score_file(router, input_path=bank, output=tmp_path / "s.csv")
    score_file(router, input_path=bank, output=tmp_path / "s.parquet")
    in_csv = [line.split(",")[0] for line in (tmp_path / "s.csv").read_text().splitlines()[1:]]
    assert in_csv == ["7", "b", "-3"]
    assert pq.read_table(tmp_path / "s.parquet").column("id").to_pylist() == ["7", "b", "-3"]


@pytest.mark.parametrize(
    ("ident", "problem"),
    [("true", "id 'True' is a bool"), ("1.5", "id '1.5' is a float"), ("null", "has no id (missing or null)"),
     ("[1]", "id '[1]' is a list"), ('{"a": 1}', "id \"{'a': 1}\" is a dict"), ('"a\\u0000b"', "id holds a NUL character"),
     ('""', "id is empty"), ('" \\t"', "id is empty")],
)
def test_an_id_that_is_not_a_string_or_an_integer_is_a_bad_row(
    router: Router, tmp_path: Path, ident: str, problem: str
) -> None:
    bank = tmp_path / "bank.jsonl"
    bank.write_text(f'{{"id": "a", "text": "law"}}\n\n{{"id": {ident}, "text": "acid base"}}\n', encoding="utf-8")
    with pytest.raises(JeirtError, match=r"data row 2 \(1-based, blank lines not counted, line 3\): " + re.escape(problem)):
        score_file(router, input_path=bank, output=tmp_path / "s.csv")
    assert not (tmp_path / "s.csv").exists()
    summary = score_file(router, input_path=bank, output=tmp_path / "s.csv", options=ScoreOptions(skip_bad=True))
    assert summary.skipped == 1 and summary.rows == 1


def test_a_named_id_column_missing_from_jsonl_is_refused_as_in_csv(router: Router, tmp_path: Path) -> None:
    bank = _jsonl_bank(tmp_path / "bank.jsonl", 3)
    with pytest.raises(JeirtError, match=r"no id column 'qid' \(columns: id, text\)"):
        score_file(router, input_path=bank, output=tmp_path / "s.csv", id_column="qid")


def test_a_jsonl_id_the_first_row_did_not_have_is_a_bad_row_never_dropped(router: Router, tmp_path: Path) -> None:
    """The first object stands for the header: a later row's id, when it had none, would be replaced by a row
    number without a word; and a field given twice would keep its last value, where a CSV header is refused."""
    bank = tmp_path / "bank.jsonl"
    rows = ['{"text": "law"}', '{"text": "tax"}', '{"id": "x3", "text": "acid base"}', '{"text": "war", "id": null}']
    bank.write_text("\n".join(rows) + "\n", encoding="utf-8")
    with pytest.raises(JeirtError, match=r"data row 3 \(1-based, blank lines not counted, line 3\): has an id field "
                       r"'id' where the first good row has none \(ids are then row numbers\)"):
        score_file(router, input_path=bank, output=tmp_path / "s.csv", options=ScoreOptions(chunk_size=2))
    summary = score_file(router, input_path=bank, output=tmp_path / "s.csv",
                         options=ScoreOptions(chunk_size=2, skip_bad=True))
    assert summary.skipped == 1 and summary.rows == 3
    assert [line.split(",")[0] for line in (tmp_path / "s.csv").read_text().splitlines()[1:]] == ["1", "2", "4"]
    # A bad first row decides nothing: the first good row does, so --skip-bad loses that row alone.
    bank.write_text('{"text": ""}\n{"id": "a", "text": "law"}\n{"id": "b", "text": "tax"}\n', encoding="utf-8")
    summary = score_file(router, input_path=bank, output=tmp_path / "s.csv",
                         options=ScoreOptions(chunk_size=1, skip_bad=True))
    assert (summary.rows, summary.skipped) == (2, 1)
    assert [line.split(",")[0] for line in (tmp_path / "s.csv").read_text().splitlines()[1:]] == ["a", "b"]
    bank.write_text('{"id": 10, "text": "ok"}\n{"id": 11, "text": "law", "id": 12}\n', encoding="utf-8")
    with pytest.raises(JeirtError, match=r"data row 2 \(1-based, blank lines not counted, line 2\): line names the "
                       r"field 'id' twice"):
        score_file(router, input_path=bank, output=tmp_path / "t.csv")


def test_jsonl_rows_are_numbered_across_chunks(router: Router, tmp_path: Path) -> None:
    """Row numbers (the default ids, and the row a bad row's error names) run on from chunk to chunk, blank lines
    not counted: a reader that restarted or slipped a row at a chunk boundary would give other ids."""
    lines = [json.dumps({"text": f"what is the price of market {i}"}) for i in range(1, 12)]
    lines.insert(4, "")  # a blank line in the first chunk, another in the third
    lines.insert(9, "   ")
    bank = tmp_path / "bank.jsonl"
    bank.write_text("\n".join(lines) + "\n", encoding="utf-8")
    output = tmp_path / "s.csv"
    score_file(router, input_path=bank, output=output, options=ScoreOptions(chunk_size=3))
    ids = [line.split(",")[0] for line in output.read_text().splitlines()[1:]]
    assert ids == [str(row) for row in range(1, 12)]
    lines[11] = '{"text": ""}'  # data row 10 (line 12), in the fourth chunk of three rows
    bank.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(JeirtError, match=r"data row 10 \(1-based, blank lines not counted, line 12\): text is empty"):
        score_file(router, input_path=bank, output=tmp_path / "t.csv", options=ScoreOptions(chunk_size=3))


def test_an_empty_jsonl_is_refused_like_an_empty_csv(router: Router, tmp_path: Path) -> None:
    for name, data in (("bank.csv", ""), ("bank.jsonl", ""), ("blank.jsonl", "\n \n")):
        (tmp_path / name).write_text(data)
        with pytest.raises(JeirtError, match=f"{name}: empty file"):
            score_file(router, input_path=tmp_path / name, output=tmp_path / "s.csv")
        assert not (tmp_path / "s.csv").exists()


def test_a_blank_csv_id_is_a_bad_row_as_a_blank_text_is(router: Router, tmp_path: Path) -> None:
    bank = tmp_path / "bank.csv"
    bank.write_text("id,text\nq1,law\n,tax\n  ,war\nq4,acid base\n", encoding="utf-8")
    with pytest.raises(JeirtError, match=r"data row 2 \(1-based, header not counted, ending on line 3\): id is empty"):
        score_file(router, input_path=bank, output=tmp_path / "s.csv")
    summary = score_file(router, input_path=bank, output=tmp_path / "s.csv", options=ScoreOptions(skip_bad=True))
    assert summary.skipped == 2
    assert [line.split(",")[0] for line in (tmp_path / "s.csv").read_text().splitlines()[1:]] == ["q1", "q4"]


def test_a_column_that_differs_in_case_or_spaces_and_a_compressed_bank_are_named(
    router: Router, tmp_path: Path
) -> None:
    bank = tmp_path / "bank.csv"
    bank.write_text("id, text\nq1,law\n", encoding="utf-8")  # a space after the comma: the column ' text'
    with pytest.raises(JeirtError, match=r"no text column \(looked for 'text', 'question', 'prompt'; columns: id,  text; "
                       r"did you mean ' text'\?\)"):
        score_file(router, input_path=bank, output=tmp_path / "s.csv")
    bank.write_text("ID,Text\nq1,law\n", encoding="utf-8")
    with pytest.raises(JeirtError, match=r"columns: ID, Text; did you mean 'Text'\?\)"):
        score_file(router, input_path=bank, output=tmp_path / "s.csv")
    packed = tmp_path / "bank.csv.gz"
    packed.write_bytes(b"\x1f\x8b")
    with pytest.raises(JeirtError, match=r"bank.csv.gz: a compressed input \(.gz\) is not read; decompress it first"):
        score_file(router, input_path=packed, output=tmp_path / "s.csv")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bank.csv", "bank.csv.gz"]


def test_a_tsv_value_opening_a_quote_it_never_closes_names_the_rule(router: Router, tmp_path: Path) -> None:
    bank = tmp_path / "bank.tsv"
    bank.write_text('id\ttext\n1\tWho wrote "Hamlet"?\n2\t"Hamlet" was written by whom?\n', encoding="utf-8")
    with pytest.raises(JeirtError, match=r"data row 2 .* is not valid TSV \(quoted as CSV is: a value that starts with "
                       r"a quote must end with one\) \('<tab>' expected after '\"'; the row starts on line 3\)"):
        score_file(router, input_path=bank, output=tmp_path / "s.csv", options=ScoreOptions(skip_bad=True))


def test_scores_are_never_written_into_the_router_folder(tiny_router_path: Path, tmp_path: Path) -> None:
    from tiny_router import copy_router

    folder = copy_router(tiny_router_path, tmp_path / "router")
    router = Router.load(folder, threads=1)
    before = sorted(p.name for p in folder.iterdir())
    bank = tmp_path / "bank.csv"
    bank.write_text("id,text\nq1,law\n", encoding="utf-8")
    with pytest.raises(JeirtError, match="scores.csv: is inside the router folder .*router, which it would change"):
        score_file(router, input_path=bank, output=folder / "scores.csv")
    assert sorted(p.name for p in folder.iterdir()) == before
