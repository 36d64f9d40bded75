"""A row longer than MAX_LINE_BYTES (a JSONL line, a CSV/TSV record, a line of an `--ids` file) ends its file in an
error naming the file, the line and the bound, read no further than the bound: an endless row from a pipe is
refused, never held whole, and a row exactly at the bound is read."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import jeirt_lite
import pytest
from jeirt_lite import JeirtError
from jeirt_lite._io.tables import read_table
from jeirt_lite._io.vectors import IdReader, read_id_lines
from jeirt_lite._limits import MAX_LINE_BYTES

BOUND = f"is longer than {MAX_LINE_BYTES:,} bytes"
# Far more than the bound: a reader that held the row whole would read it all before failing otherwise.
_ENDLESS_BYTES = 3 * MAX_LINE_BYTES
needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")


def _feed(fifo: Path, head: bytes, piece: bytes) -> threading.Thread:
    """Write `head`, then `piece` over and over into the pipe until the reader goes away (or _ENDLESS_BYTES)."""

    def run() -> None:
        try:
            with open(fifo, "wb") as pipe:
                pipe.write(head)
                for _ in range(_ENDLESS_BYTES // len(piece)):
                    pipe.write(piece)
        except BrokenPipeError:  # the reader stopped at the bound and closed its end
            pass

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _env() -> dict[str, str]:
    env = dict(os.environ, CI="true")
    env["PYTHONPATH"] = os.pathsep.join([str(Path(jeirt_lite.__file__).resolve().parents[1]), env.get("PYTHONPATH", "")])
    return env


@needs_fifo
@pytest.mark.parametrize(
    ("suffix", "head", "piece", "where"),
    [
        ("jsonl", b'{"text": "one"}\n\n{"text": "two"}\n{"text": "', b"a" * 4096,
         r"data row 3 \(1-based, blank lines not counted, line 4\) "),
        # a quoted value never closed, its lines glued into one record
        ("csv", b'text\none\ntwo\n"', b"a\n" * 2048,
         r"data row 3 \(1-based, header not counted, ending on line \d+\) "),
    ],
)
def test_an_endless_row_from_a_pipe_is_refused_even_when_skipping_and_no_output_is_left(
    tiny_router_path: Path, tmp_path: Path, suffix: str, head: bytes, piece: bytes, where: str
) -> None:
    fifo = tmp_path / f"bank.{suffix}"
    os.mkfifo(fifo)
    writer = _feed(fifo, head, piece)
    output = tmp_path / "scores.csv"
    done = subprocess.run(
        [sys.executable, "-m", "jeirt_lite", "score", str(fifo), "-o", str(output), "--router", str(tiny_router_path),
         "--threads", "1", "--chunk-size", "1", "--skip-bad", "--no-neighbours"],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, env=_env(), timeout=300, check=False,
    )
    writer.join(timeout=60)
    assert done.returncode == 1, done.stderr
    assert re.search(re.escape(str(fifo)) + ": " + where + BOUND, done.stderr), done.stderr
    assert "nothing after it is read" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [fifo.name]  # the two rows before it are in no half file


def _jsonl_line(size: int) -> bytes:
    """A JSONL object of `size` bytes (its line end not counted)."""
    frame = b'{"text": ""}'
    return frame[:-2] + b"a" * (size - len(frame)) + frame[-2:]


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b""])
def test_a_jsonl_line_at_the_bound_is_read_and_one_byte_more_ends_the_file(tmp_path: Path, end: bytes) -> None:
    bank = tmp_path / "bank.jsonl"
    bank.write_bytes(b'{"text": "q"}\n' + _jsonl_line(MAX_LINE_BYTES) + end)
    assert [len(text) for text in read_table(bank).values["text"]] == [1, MAX_LINE_BYTES - 12]
    bank.write_bytes(b'{"text": "q"}\n' + _jsonl_line(MAX_LINE_BYTES + 1) + end + b'{"text": "r"}\n')
    with pytest.raises(JeirtError, match=re.escape(f"data row 2 (1-based, blank lines not counted, line 2) {BOUND}")):
        read_table(bank, skip_bad=True)


@pytest.mark.parametrize("suffix", ["jsonl", "csv"])
def test_a_first_line_at_the_bound_after_a_bom_is_read(tmp_path: Path, suffix: str) -> None:
    # The BOM is no part of the line: JSONL counted it against the bound (CSV dropped it first).
    bank = tmp_path / f"bank.{suffix}"
    first, second = (_jsonl_line(MAX_LINE_BYTES), b'{"text": "q"}') if suffix == "jsonl" else (b"t" * MAX_LINE_BYTES, b"q")
    bank.write_bytes(b"\xef\xbb\xbf" + first + b"\n" + second + b"\n")
    values = read_table(bank).values
    texts = values["text"] if suffix == "jsonl" else values["t" * MAX_LINE_BYTES]
    assert [len(text) for text in texts] == ([MAX_LINE_BYTES - 12, 1] if suffix == "jsonl" else [1])


def test_a_jsonl_line_cut_at_the_bound_after_carriage_returns_is_not_read_as_two_rows(tmp_path: Path) -> None:
    # The read stops at the bound plus a line end's two bytes; two carriage returns there are no line end (a binary
    # line ends at \n), so the line goes on past the bound and what follows them is no row of its own.
    bank = tmp_path / "bank.jsonl"
    bank.write_bytes(b'{"text": "q"}\n' + _jsonl_line(MAX_LINE_BYTES) + b'\r\r{"text": "r"}\n')
    with pytest.raises(JeirtError, match=re.escape(f"data row 2 (1-based, blank lines not counted, line 2) {BOUND}")):
        read_table(bank, skip_bad=True)


@pytest.mark.parametrize("suffix", ["csv", "tsv"])
def test_a_csv_record_at_the_bound_is_read_and_one_byte_more_ends_the_file(tmp_path: Path, suffix: str) -> None:
    bank = tmp_path / f"bank.{suffix}"
    # A quoted value over two lines: the line end inside it counts, the one ending the record does not.
    longest = b'"' + b"a" * (MAX_LINE_BYTES - 4) + b'\nb"'
    assert len(longest) == MAX_LINE_BYTES
    bank.write_bytes(b"text\nq\n" + longest + b"\r\nr\n")
    assert [len(text) for text in read_table(bank).values["text"]] == [1, MAX_LINE_BYTES - 2, 1]
    bank.write_bytes(b"text\nq\n" + longest[:-1] + b'a"\nr\n')
    with pytest.raises(JeirtError, match=re.escape(f"ending on line 4) {BOUND} (the row starting on line 3)")):
        read_table(bank, skip_bad=True)
    bank.write_bytes(b"a" * (MAX_LINE_BYTES + 1) + b"\nq\n")
    with pytest.raises(JeirtError, match=f"{re.escape(str(bank))}: header row {BOUND}"):
        read_table(bank)


def test_an_ids_line_longer_than_the_bound_in_bytes_is_refused_by_its_number(tmp_path: Path) -> None:
    ids = tmp_path / "ids.txt"
    widest = "é" * (MAX_LINE_BYTES // 2)  # two bytes a character: at the bound in bytes, half of it in characters
    ids.write_text(f"a\n{widest}\nc\n", encoding="utf-8")
    reader = IdReader(ids, 3)
    assert reader.take(3) == ["a", widest, "c"]
    reader.close()
    ids.write_text(f"a\n{widest}b\nc\n", encoding="utf-8")
    with pytest.raises(JeirtError, match=re.escape(f"ids.txt: line 2 {BOUND}, the longest line an ids file may hold")):
        IdReader(ids, 3)


@needs_fifo
def test_an_endless_ids_line_from_a_pipe_is_refused_by_its_number(tmp_path: Path) -> None:
    fifo = tmp_path / "ids.fifo"
    os.mkfifo(fifo)
    writer = _feed(fifo, b"a\nb\n", b"c" * 4096)
    reader = IdReader(fifo, 3)
    with pytest.raises(JeirtError, match=re.escape(f"ids.fifo: line 3 {BOUND}")):
        reader.take(3)
    reader.close()
    writer.join(timeout=60)
    assert not writer.is_alive()


@needs_fifo
def test_an_endless_question_ids_line_from_a_pipe_is_refused_by_its_number(tmp_path: Path) -> None:
    # `report --question-ids` read its file whole: an endless line grew memory until the process was killed.
    fifo = tmp_path / "ids.fifo"
    os.mkfifo(fifo)
    writer = _feed(fifo, b"a\nb\n", b"c" * 4096)
    with pytest.raises(JeirtError, match=re.escape(f"ids.fifo: line 3 {BOUND}")):
        read_id_lines(fifo)
    writer.join(timeout=60)
    assert not writer.is_alive()
