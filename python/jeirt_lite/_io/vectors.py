"""Precomputed question vectors from `.npy` files, a block of rows at a time, and the ids that go with them.
"""

from __future__ import annotations

import ast
import io
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Optional

import numpy as np

from .._errors import SKIP_BAD, JeirtError, hinted_error
from .._limits import MAX_LINE_BYTES, bounded_lines
from .._text import counted
from .pipes import open_stoppable
from .vocabulary import id_problem

# NumPy refuses headers longer than this by default (numpy.lib.format's max_header_size); so does this reader.
NPY_MAX_HEADER = 10_000


def read_npy_header(handle: IO[bytes], path: Path) -> tuple[tuple[int, ...], bool, np.dtype]:
    """Shape, Fortran order and dtype of a .npy file, formats 1.0, 2.0 and 3.0, through NumPy's public API.

    The header is a Python dict literal, read with `ast.literal_eval` (no code runs); format 3.0 differs from
    2.0 only in encoding the header as UTF-8.
    """
    from numpy.lib import format as npy

    def bad(why: str) -> JeirtError:
        return JeirtError(f"{path}: not a readable .npy array ({why})")

    try:
        major, minor = npy.read_magic(handle)
    except ValueError as err:
        raise bad(str(err)) from err
    if (major, minor) not in ((1, 0), (2, 0), (3, 0)):
        raise bad(f"format version {major}.{minor}; versions 1.0, 2.0 and 3.0 are read")
    size_bytes = 2 if major == 1 else 4
    raw_size = handle.read(size_bytes)
    if len(raw_size) != size_bytes:
        raise bad("the header is cut short")
    header_size = int.from_bytes(raw_size, "little")
    if header_size > NPY_MAX_HEADER:
        raise bad(f"a header of {header_size:,} bytes; at most {NPY_MAX_HEADER:,} are read")
    raw = handle.read(header_size)
    if len(raw) != header_size:
        raise bad("the header is cut short")
    try:
        header = ast.literal_eval(raw.decode("utf-8" if major == 3 else "latin1"))
    except (ValueError, SyntaxError, UnicodeDecodeError, MemoryError, RecursionError) as err:
        raise bad(f"the header is not a Python literal: {err}") from err
    if not isinstance(header, dict) or set(header) != {"descr", "fortran_order", "shape"}:
        raise bad("the header is not a dict of descr, fortran_order and shape")
    shape, fortran_order = header["shape"], header["fortran_order"]
    if not isinstance(shape, tuple) or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0
                                               for n in shape):
        raise bad(f"shape {shape!r} is not a tuple of sizes")
    if not isinstance(fortran_order, bool):
        raise bad(f"fortran_order {fortran_order!r} is not a bool")
    try:  # NumPy parses parts of a comma-separated descr with ast.literal_eval, hence SyntaxError
        dtype = npy.descr_to_dtype(header["descr"])
    except (TypeError, ValueError, KeyError, IndexError, SyntaxError, RecursionError) as err:
        raise bad(f"descr {header['descr']!r}: {err}") from err
    return shape, fortran_order, dtype


class NpyRows:
    """Reads a C-ordered .npy array a block of rows at a time with plain file reads.

    Not memory-mapped on purpose: mapped pages that were read count toward the process's resident memory until
    the kernel evicts them, so a mapped 1M-row file makes peak RSS grow with the file; reads keep it flat.
    """

    def __init__(self, path: Path):
        self.path = path
        try:
            self.handle: IO[bytes] = open(path, "rb")  # noqa: SIM115 - closed by close()
        except FileNotFoundError:
            raise JeirtError(f"{path}: no such file") from None
        except OSError as err:
            raise JeirtError(f"{path}: cannot read it ({err.strerror or err})") from err
        try:
            shape, fortran_order, dtype = read_npy_header(self.handle, path)
            self._check(shape, fortran_order, dtype)
        except BaseException:
            self.handle.close()
            raise
        self.shape: tuple[int, ...] = shape
        self.dtype = dtype
        self.row_items = math.prod(shape[1:]) if len(shape) > 1 else 1
        self.rows_left = shape[0] if shape else 0

    def _check(self, shape: tuple[int, ...], fortran_order: bool, dtype: np.dtype) -> None:
        path = self.path
        if dtype.hasobject:
            raise JeirtError(f"{path}: holds Python objects, which are not read (loading them needs pickle); save numbers or strings")
        if fortran_order and len(shape) > 1:
            raise JeirtError(
                f"{path}: is stored in Fortran order; save it with np.save(path, np.ascontiguousarray(a))"
            )
        if path.is_file():  # the declared size against the file's, before anything is read or written
            data_bytes = math.prod(shape) * dtype.itemsize
            held = os.stat(path).st_size - self.handle.tell()
            if held < data_bytes:
                raise JeirtError(
                    f"{path}: file ends early (truncated .npy): shape {shape} of {dtype} needs {data_bytes:,} "
                    f"bytes of data, the file holds {held:,}"
                )
            if held > data_bytes:
                raise JeirtError(
                    f"{path}: has {held - data_bytes:,} bytes after the array its header declares ({shape} of "
                    f"{dtype}): not a .npy file as np.save writes it"
                )

    def read(self, rows: int) -> np.ndarray:
        rows = min(rows, self.rows_left)
        count = rows * self.row_items
        block = np.fromfile(self.handle, dtype=self.dtype, count=count)
        if block.size != count:
            raise JeirtError(f"{self.path}: file ends early (truncated .npy)")
        self.rows_left -= rows
        return block.reshape((rows, *self.shape[1:]))

    def close(self) -> None:
        self.handle.close()


@dataclass
class VectorChunk:
    ids: list[Any]
    vectors: np.ndarray  # (n, d) float32, C-contiguous


class VectorReader:
    """Chunks of an (N, d) .npy file of question vectors; only the current chunk is in memory."""

    def __init__(
        self, path: Path, dim: int, chunk_size: int, skip_bad: bool, ids_path: Optional[Path] = None
    ):
        if chunk_size < 1:
            raise JeirtError(f"chunk size must be at least 1, got {chunk_size}")
        self.rows = NpyRows(path)
        shape, dtype = self.rows.shape, self.rows.dtype
        if len(shape) != 2 or shape[1] != dim:
            self.rows.close()
            raise JeirtError(f"{path}: vectors must have shape (N, {dim}) for this router, got {shape}")
        if not (np.issubdtype(dtype, np.floating) or np.issubdtype(dtype, np.integer)):
            self.rows.close()
            raise JeirtError(f"{path}: vectors must be numeric, got dtype {dtype}")
        self.path = path
        self.chunk_size = chunk_size
        self.skip_bad = skip_bad
        self.total_rows: Optional[int] = int(shape[0])
        self.rows_read = 0
        self.skipped = 0
        try:
            self.ids = IdReader(ids_path, int(shape[0])) if ids_path is not None else None
        except JeirtError:
            self.rows.close()
            raise

    def __iter__(self) -> Iterator[VectorChunk]:
        while self.rows.rows_left:
            start = self.rows_read
            block = np.ascontiguousarray(self.rows.read(self.chunk_size), dtype=np.float32)
            ids = (
                self.ids.take(len(block)) if self.ids is not None else list(range(start, start + len(block)))
            )
            finite = np.asarray(np.isfinite(block).all(axis=1))
            if not finite.all():
                for bad in np.flatnonzero(~finite).tolist():
                    if not self.skip_bad:
                        raise hinted_error(
                            f"{self.path}: vector row {start + bad} (0-based, as in the array) "
                            "contains NaN or inf",
                            SKIP_BAD,
                        )
                    self.skipped += 1
                block = block[finite]
                keep = [bool(flag) for flag in finite]
                ids = [ident for ident, kept in zip(ids, keep) if kept]
            self.rows_read += int(finite.size)
            yield VectorChunk(ids, block)
        if self.ids is not None:
            self.ids.finish()

    def close(self) -> None:
        self.rows.close()
        if self.ids is not None:
            self.ids.close()

    def __enter__(self) -> VectorReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class IdReader:
    """Ids for vector rows: a 1-D .npy array or a text file with one id per line, read as the rows go (a line
    longer than MAX_LINE_BYTES is an error naming it, read no further than the bound)."""

    def __init__(self, path: Path, expected: int):
        self.path = path
        self.expected = expected
        self.taken = 0
        self.bytes_taken = 0  # of the lines taken, in the file's bytes
        self.array: Optional[NpyRows] = None
        self.handle: Optional[IO[str]] = None
        if path.suffix.lower() == ".npy":
            self.array = NpyRows(path)
            if len(self.array.shape) != 1 or self.array.shape[0] != expected:
                self.array.close()
                raise JeirtError(
                    f"{path}: ids must be a 1-D array of {expected} entries, got {self.array.shape}"
                )
        else:
            self.handle = _open_ids(path, "ids")  # closed by close()
            # A pipe (`--ids <(cut -f1 ids.tsv)`, /dev/stdin) can be read once: counting its lines first would leave
            # `take` none. Its count is checked as the rows go (`take`, `finish`).
            if not path.is_file():
                return
            try:
                self._check_count()
            except BaseException:
                self.handle.close()
                raise

    def _check_count(self) -> None:
        """Refuse a file of too few or too many ids before any row is scored, not when the run reaches its end
        (a pass over the lines, as `take` splits them; blank lines at the end are not ids, as in `finish`; bytes
        that are not UTF-8 are left for `take` to name by their line)."""
        lines = held = 0
        with open(self.path, encoding="utf-8-sig", errors="surrogateescape", newline="") as handle:
            for line in _id_lines(handle, self.path):
                lines += 1
                if not line.isspace():
                    held = lines
        if held < self.expected:
            raise JeirtError(f"{self.path}: has {counted(held, 'id')} but the vectors have {counted(self.expected, 'row')}")
        if held > self.expected:
            raise JeirtError(f"{self.path}: has more ids than the {self.expected} vector rows")

    def take(self, n: int) -> list[Any]:
        if self.array is not None:
            out: list[Any] = self.array.read(n).tolist()
        else:
            assert self.handle is not None
            out = []
            lines = _id_lines(self.handle, self.path, self.taken)
            for _ in range(n):
                line = next(lines, "")
                if not line:
                    raise JeirtError(
                        f"{self.path}: has {counted(self.taken + len(out), 'id')} "
                        f"but the vectors have {counted(self.expected, 'row')}"
                    )
                number = self.taken + len(out) + 1
                self.bytes_taken += _utf8_bytes(line, self.path, number, self.bytes_taken)
                out.append(_without_bom(line, number).rstrip("\r\n"))
        for i, ident in enumerate(out):
            problem = id_problem(ident)
            if problem is not None:
                raise JeirtError(f"{self.path}: id {self.taken + i + 1} (1-based): {problem}")
        self.taken += n
        return out

    def finish(self) -> None:
        """Refuse ids left over once every vector row has one; blank lines at the end of the file are not ids. (The
        count made when the file was opened refuses such a file first; this holds for one that grew since.)"""
        if self.handle is not None and any(line.strip() for line in _id_lines(self.handle, self.path, self.taken)):
            raise JeirtError(f"{self.path}: has more ids than the {self.expected} vector rows")

    def close(self) -> None:
        if self.array is not None:
            self.array.close()
        if self.handle is not None:
            self.handle.close()


def _id_lines(handle: IO[str], path: Path, read: int = 0) -> Iterator[str]:
    """The lines of an ids file after the `read` lines already read; one longer than MAX_LINE_BYTES is an error
    naming it."""
    for number, line in bounded_lines(handle, read + 1):
        if line is None:
            raise JeirtError(f"{path}: line {number} is longer than {MAX_LINE_BYTES:,} bytes, the longest line an ids "
                             "file may hold")
        yield line


def read_id_lines(path: Path) -> list[str]:
    """The non-blank lines of a UTF-8 text file of ids, one per line (`report --question-ids`), each read with the
    bound of a line: the file may be a pipe that never ends one."""
    ids: list[str] = []
    offset = 0  # of the line in the file's bytes
    with _open_ids(path, "it") as handle:
        for number, line in enumerate(_id_lines(handle, path), 1):
            offset += _utf8_bytes(line, path, number, offset)
            ids += [part.strip() for part in _without_bom(line, number).splitlines() if part.strip()]
    return ids


def _open_ids(path: Path, reading: str) -> IO[str]:
    """An ids file opened as a pipe is read, so that Ctrl-C stops a wait for its next line (_io.pipes); a byte that
    is not UTF-8 is kept escaped, to be named with its line as it is reached (_utf8_bytes). `reading`: what an error
    says could not be read."""
    try:
        return io.TextIOWrapper(io.BufferedReader(open_stoppable(path)), encoding="utf-8", errors="surrogateescape",
                                newline="")
    except FileNotFoundError:
        raise JeirtError(f"{path}: no such file") from None
    except OSError as err:
        raise JeirtError(f"{path}: cannot read {reading} ({err.strerror or err})") from err


def _utf8_bytes(line: str, path: Path, number: int, offset: int) -> int:
    """How many bytes line `number` of an ids file, read with surrogateescape from byte `offset`, holds; a
    byte of it that is not UTF-8 is an error naming its line and byte, found in what was read (a pipe cannot
    be read again)."""
    if line.isascii():  # most ids: one byte a character, and no escaped byte among them
        return len(line)
    raw = line.encode("utf-8", "surrogateescape")
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise JeirtError(f"{path}: line {number} (byte {offset + err.start}) is not valid UTF-8") from None
    return len(raw)


def _without_bom(line: str, number: int) -> str:
    return line[1:] if number == 1 and line.startswith("\ufeff") else line
