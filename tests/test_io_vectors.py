"""The readers of question vectors (.npy) and their ids, on their own: header limits and encodings, the shapes and
orders they accept, which row or line an error names across chunks, and files that cannot be opened.
tests/test_io_hostile.py and tests/test_batch.py drive the same readers through `score_file`."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest
from jeirt_lite import JeirtError
from jeirt_lite._io.vectors import (
    NPY_MAX_HEADER,
    IdReader,
    NpyRows,
    VectorReader,
    read_id_lines,
    read_npy_header,
)
from npy_bytes import MAGIC, npy_bytes

DIM = 3


def _header(shape: tuple[int, ...], descr: object = "<f4", fortran: bool = False, pad_to: int = 0) -> str:
    text = f"{{'descr': {descr!r}, 'fortran_order': {fortran}, 'shape': {shape!r}, }}"
    return text + " " * max(0, pad_to - len(text) - 1) + "\n"


def _header_of(path: Path) -> tuple[tuple[int, ...], bool, np.dtype]:
    with open(path, "rb") as handle:
        return read_npy_header(handle, path)


def _vectors(tmp_path: Path, rows: np.ndarray, name: str = "v.npy") -> Path:
    path = tmp_path / name
    np.save(path, rows)
    return path


def _ids_file(tmp_path: Path, content: bytes, name: str = "ids.txt") -> Path:
    path = tmp_path / name
    path.write_bytes(content)
    return path


# -- the header -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2])
def test_a_header_size_cut_short_is_refused(tmp_path: Path, version: int) -> None:
    path = tmp_path / "v.npy"
    path.write_bytes(MAGIC + bytes([version, 0]) + b"\x10")  # one byte of a 2- or 4-byte size
    with pytest.raises(JeirtError, match=r"v\.npy: not a readable \.npy array \(the header is cut short\)"):
        _header_of(path)


def test_a_header_of_the_largest_size_numpy_reads_is_read_and_one_byte_more_is_refused(tmp_path: Path) -> None:
    data = np.arange(2 * DIM, dtype=np.float32).tobytes()
    largest = tmp_path / "largest.npy"
    largest.write_bytes(npy_bytes(_header((2, DIM), pad_to=NPY_MAX_HEADER), version=2, data=data))
    assert _header_of(largest) == ((2, DIM), False, np.dtype("<f4"))
    chunks = list(VectorReader(largest, DIM, chunk_size=8, skip_bad=False))
    np.testing.assert_array_equal(chunks[0].vectors, np.arange(2 * DIM, dtype=np.float32).reshape(2, DIM))
    larger = tmp_path / "larger.npy"
    larger.write_bytes(npy_bytes(_header((2, DIM), pad_to=NPY_MAX_HEADER + 1), version=2, data=data))
    with pytest.raises(JeirtError, match=r"a header of 10,001 bytes; at most 10,000 are read"):
        _header_of(larger)


def test_format_3_headers_are_utf8_and_older_ones_latin1(tmp_path: Path) -> None:
    # A structured dtype's field name is the one place a header holds text beyond ASCII.
    descr = [("é", "<f4")]
    utf8 = tmp_path / "v3.npy"
    utf8.write_bytes(npy_bytes(_header((1,), descr=descr), version=3, data=bytes(4), encoding="utf-8"))
    assert _header_of(utf8)[2].names == ("é",)
    latin1 = tmp_path / "v2.npy"
    latin1.write_bytes(npy_bytes(_header((1,), descr=descr), version=2, data=bytes(4), encoding="latin1"))
    assert _header_of(latin1)[2].names == ("é",)
    mislabelled = tmp_path / "v1.npy"  # UTF-8 bytes under a 1.0 header read as latin1: another name, not an error
    mislabelled.write_bytes(npy_bytes(_header((1,), descr=descr), version=1, data=bytes(4), encoding="utf-8"))
    assert _header_of(mislabelled)[2].names == ("Ã©",)


@pytest.mark.parametrize("descr", [",<f4", "<f4,,", "(,)f4", "(3,f4"])
def test_a_descr_numpy_cannot_parse_is_named_not_a_crash(tmp_path: Path, descr: str) -> None:
    # NumPy parses these with ast.literal_eval and raises SyntaxError (found by tests/test_io_fuzz.py).
    path = tmp_path / "v.npy"
    path.write_bytes(npy_bytes(_header((1, DIM), descr=descr), data=bytes(4 * DIM)))
    with pytest.raises(JeirtError, match=rf"v\.npy: not a readable \.npy array \(descr {re.escape(repr(descr))}: "):
        NpyRows(path)


def test_an_empty_array_of_vectors_reads_as_no_chunks(tmp_path: Path) -> None:
    path = _vectors(tmp_path, np.zeros((0, DIM), dtype=np.float32))
    with VectorReader(path, DIM, chunk_size=4, skip_bad=False) as reader:
        assert list(reader) == [] and reader.rows_read == 0 and reader.total_rows == 0


def test_a_scalar_array_has_no_rows(tmp_path: Path) -> None:
    path = _vectors(tmp_path, np.float32(3.0))
    rows = NpyRows(path)
    assert rows.shape == () and rows.rows_left == 0 and rows.row_items == 1
    rows.close()


# -- orders, shapes and sizes -----------------------------------------------------------------------------------


def test_fortran_order_is_refused_only_where_it_changes_the_bytes(tmp_path: Path) -> None:
    ids = tmp_path / "ids.npy"  # a 1-D array is the same in either order
    ids.write_bytes(npy_bytes(_header((3,), descr="<i8", fortran=True), data=np.arange(3, dtype="<i8").tobytes()))
    reader = IdReader(ids, 3)
    assert reader.take(3) == [0, 1, 2]
    reader.close()
    scalar = tmp_path / "scalar.npy"
    scalar.write_bytes(npy_bytes(_header((), fortran=True), data=bytes(4)))
    NpyRows(scalar).close()
    square = tmp_path / "square.npy"
    square.write_bytes(npy_bytes(_header((2, 2), fortran=True), data=bytes(16)))
    with pytest.raises(JeirtError, match="Fortran order"):
        NpyRows(square)


def test_extra_bytes_are_counted_in_the_message(tmp_path: Path) -> None:
    path = tmp_path / "v.npy"
    path.write_bytes(npy_bytes(_header((2, DIM)), data=bytes(2 * DIM * 4 + 30)))
    with pytest.raises(JeirtError, match=r"v\.npy: has 30 bytes after the array its header declares"):
        NpyRows(path)


@pytest.mark.parametrize("shape", [(4, DIM, 1), (4,), (4, DIM + 1), (4, DIM - 1)])
def test_vectors_of_another_shape_are_refused(tmp_path: Path, shape: tuple[int, ...]) -> None:
    path = _vectors(tmp_path, np.ones(shape, dtype=np.float32))
    with pytest.raises(JeirtError, match=rf"vectors must have shape \(N, {DIM}\) for this router, got"):
        VectorReader(path, DIM, chunk_size=4, skip_bad=False)


def test_a_chunk_of_one_row_is_accepted_and_of_none_refused(tmp_path: Path) -> None:
    rows = np.arange(3 * DIM, dtype=np.float64).reshape(3, DIM)
    path = _vectors(tmp_path, rows)
    with VectorReader(path, DIM, chunk_size=1, skip_bad=False) as reader:
        chunks = list(reader)
    assert [chunk.ids for chunk in chunks] == [[0], [1], [2]]
    assert all(chunk.vectors.dtype == np.float32 and chunk.vectors.flags.c_contiguous for chunk in chunks)
    with pytest.raises(JeirtError, match="chunk size must be at least 1, got 0"):
        VectorReader(path, DIM, chunk_size=0, skip_bad=False)


def test_a_bad_row_is_named_by_its_row_in_the_array_whatever_the_chunk(tmp_path: Path) -> None:
    rows = np.ones((9, DIM), dtype=np.float32)
    rows[4, 1] = np.inf  # in the second chunk of three, its second row: 3 + 1
    path = _vectors(tmp_path, rows)
    with pytest.raises(JeirtError, match=r"vector row 4 \(0-based, as in the array\) contains NaN or inf"):
        list(VectorReader(path, DIM, chunk_size=3, skip_bad=False))
    with VectorReader(path, DIM, chunk_size=3, skip_bad=True) as reader:
        ids = [ident for chunk in reader for ident in chunk.ids]
        assert ids == [0, 1, 2, 3, 5, 6, 7, 8] and reader.skipped == 1 and reader.rows_read == 9


def test_a_refused_ids_file_closes_the_vectors_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    closed: list[Path] = []
    close = NpyRows.close

    def spy(self: NpyRows) -> None:
        closed.append(self.path)
        close(self)

    monkeypatch.setattr(NpyRows, "close", spy)
    path = _vectors(tmp_path, np.ones((2, DIM), dtype=np.float32))
    with pytest.raises(JeirtError, match="no such file"):
        VectorReader(path, DIM, chunk_size=4, skip_bad=False, ids_path=tmp_path / "absent.txt")
    assert closed == [path]


# -- ids --------------------------------------------------------------------------------------------------------


def test_ids_in_a_text_file_of_any_suffix_but_npy_are_lines(tmp_path: Path) -> None:
    for name in ("ids.csv", "ids.txt", "ids"):
        reader = IdReader(_ids_file(tmp_path, b"a\r\nb\nc\n", name), 3)
        assert reader.take(2) == ["a", "b"] and reader.take(1) == ["c"]
        reader.finish()
        reader.close()


@pytest.mark.parametrize("shape", [(300, 1), (299,), (301,), ()])
def test_ids_npy_must_be_one_entry_per_row(tmp_path: Path, shape: tuple[int, ...]) -> None:
    path = tmp_path / "ids.npy"
    np.save(path, np.zeros(shape, dtype=np.int64))
    with pytest.raises(JeirtError, match=rf"ids must be a 1-D array of 300 entries, got {re.escape(str(shape))}"):
        IdReader(path, 300)


def test_ids_npy_of_many_rows_is_read(tmp_path: Path) -> None:
    path = tmp_path / "ids.npy"  # past the small integers CPython keeps as one object each
    np.save(path, np.arange(1000, 1300))
    reader = IdReader(path, 300)
    assert reader.take(300) == list(range(1000, 1300))
    reader.close()


@pytest.mark.parametrize(
    ("text", "expected", "message"),
    [
        (b"a\nb\nc\nd\n", 6, r"ids\.txt: has 4 ids but the vectors have 6 rows"),
        (b"a\nb\nc\nd\n\n \r\n", 6, r"ids\.txt: has 4 ids but the vectors have 6 rows"),  # blank lines at the end
        (b"a\nb\nc\n", 2, r"ids\.txt: has more ids than the 2 vector rows"),
        (b"a\rb\r\nc", 2, r"ids\.txt: has more ids than the 2 vector rows"),  # every line ending take reads
        (b"", 1, r"ids\.txt: has 0 ids but the vectors have 1 row"),
    ],
)
def test_too_few_or_too_many_ids_are_refused_when_the_file_is_opened(
    tmp_path: Path, text: bytes, expected: int, message: str
) -> None:
    # Before any row is scored: the count is made when the reader opens the file, not when a run reaches its end.
    with pytest.raises(JeirtError, match=message):
        IdReader(_ids_file(tmp_path, text), expected)


def test_ids_that_fit_the_rows_pass_the_count_with_blank_lines_inside_and_at_the_end(tmp_path: Path) -> None:
    reader = IdReader(_ids_file(tmp_path, b"\xef\xbb\xbfa\r\nb\rc\n\n \t\n"), 3)  # a BOM, each line ending
    assert reader.take(3) == ["a", "b", "c"]
    reader.finish()
    reader.close()
    reader = IdReader(_ids_file(tmp_path, b"a\n\nc\n"), 3)  # a blank id inside is an id, refused by its number
    with pytest.raises(JeirtError, match=r"id 2 \(1-based\): id is empty"):
        reader.take(3)
    reader.close()


def test_a_file_that_grows_after_it_is_opened_is_still_refused_at_the_end(tmp_path: Path) -> None:
    path = _ids_file(tmp_path, b"a\nb\n")
    reader = IdReader(path, 2)
    assert reader.take(2) == ["a", "b"]
    with path.open("ab") as handle:
        handle.write(b"c\n")
    with pytest.raises(JeirtError, match=r"ids\.txt: has more ids than the 2 vector rows"):
        reader.finish()
    reader.close()


def test_a_line_that_is_not_utf8_is_named_by_its_line_in_the_file(tmp_path: Path) -> None:
    path = _ids_file(tmp_path, b"a\nb\nc\nd\ne\nf\xff\ng\n")
    reader = IdReader(path, 7)
    with pytest.raises(JeirtError, match=r"ids\.txt: line 6 \(byte 11\) is not valid UTF-8"):
        reader.take(3)
        reader.take(3)
    reader.close()


def test_a_bad_id_is_numbered_across_chunks(tmp_path: Path) -> None:
    path = _ids_file(tmp_path, b"a\nb\nc\nd\x00\ne\nf\n")  # the fourth id, first of the second chunk, holds a NUL
    reader = IdReader(path, 6)
    assert reader.take(3) == ["a", "b", "c"]
    with pytest.raises(JeirtError, match=r"ids\.txt: id 4 \(1-based\): id holds a NUL character"):
        reader.take(3)
    reader.close()


# -- files that cannot be read ----------------------------------------------------------------------------------


def test_a_folder_given_as_a_file_is_named_not_a_crash(tmp_path: Path) -> None:
    folder = tmp_path / "folder.npy"
    folder.mkdir()
    with pytest.raises(JeirtError, match=r"folder\.npy: cannot read it \(Is a directory\)"):
        NpyRows(folder)
    text = tmp_path / "ids"
    text.mkdir()
    with pytest.raises(JeirtError, match=r"ids: cannot read ids \(Is a directory\)"):
        IdReader(text, 3)
    with pytest.raises(JeirtError, match=r"ids: cannot read it \(Is a directory\)"):
        read_id_lines(text)


def test_question_id_lines_name_the_line_for_every_line_ending(tmp_path: Path) -> None:
    for ending in (b"\n", b"\r\n", b"\r"):
        path = _ids_file(tmp_path, ending.join([b"q1", b"q2", b"q\xff3"]), "ids.txt")
        with pytest.raises(JeirtError, match=r"line 3 \(byte \d+\) is not valid UTF-8"):
            read_id_lines(path)
    path = _ids_file(tmp_path, b"\xef\xbb\xbfq1\n\n  q2  \r\nq3")
    assert read_id_lines(path) == ["q1", "q2", "q3"]


def test_an_ids_byte_that_is_not_utf8_is_named_from_what_was_read_without_reading_again(
    tmp_path: Path,
) -> None:
    # `take` read the whole file again to name the line: a read without bound, and one a pipe (`--ids <(...)`)
    # cannot give (it waited for a writer long gone). The file opened is the one named, here replaced since.
    path = _ids_file(tmp_path, b"\xef\xbb\xbfok\r\nok\rok\n\xc3\n")
    reader = IdReader(path, 4)
    path.unlink()
    path.write_bytes(b"\xff\n")
    with pytest.raises(JeirtError, match=r"ids\.txt: line 4 \(byte 13\) is not valid UTF-8"):
        reader.take(4)
    reader.close()


def test_a_question_ids_byte_that_is_not_utf8_is_counted_in_the_file_s_bytes(tmp_path: Path) -> None:
    path = _ids_file(tmp_path, b"\xef\xbb\xbfok\r\nok\rok\n\xc3")
    with pytest.raises(JeirtError, match=r"line 4 \(byte 13\) is not valid UTF-8"):
        read_id_lines(path)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
def test_ids_from_a_pipe_are_read_once_as_the_rows_go(tmp_path: Path) -> None:
    # `--ids <(cut -f1 ids.tsv)` or /dev/stdin: the count made when the file was opened read the pipe to its end, and
    # the run then said 'has 0 ids but the vectors have 3 rows'.
    import threading

    fifo = tmp_path / "ids.fifo"
    os.mkfifo(fifo)

    def write(text: bytes) -> threading.Thread:
        def run() -> None:
            with open(fifo, "wb") as handle:
                handle.write(text)

        thread = threading.Thread(target=run)
        thread.start()
        return thread

    writer = write(b"a\nb\nc\n")
    reader = IdReader(fifo, 3)
    assert reader.take(3) == ["a", "b", "c"]
    reader.finish()
    reader.close()
    writer.join()
    writer = write(b"a\nb\n")  # too few: refused when the rows reach the end of the pipe
    reader = IdReader(fifo, 3)
    with pytest.raises(JeirtError, match=r"ids\.fifo: has 2 ids but the vectors have 3 rows"):
        reader.take(3)
    reader.close()
    writer.join()
