"""Precomputed question vectors from `.npy` files, a block of rows at a time, and the ids that go with them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Optional

import numpy as np

from .._errors import SKIP_BAD, JeirtError, hinted_error


class NpyRows:
    """Reads a C-ordered .npy array a block of rows at a time with plain file reads.

    Not memory-mapped on purpose: mapped pages that were read count toward the process's resident memory until
    the kernel evicts them, so a mapped 1M-row file makes peak RSS grow with the file; reads keep it flat.
    """

    def __init__(self, path: Path):
        from numpy.lib import format as npy

        self.path = path
        try:
            self.handle: IO[bytes] = open(path, "rb")  # noqa: SIM115 - closed by close()
        except FileNotFoundError:
            raise JeirtError(f"{path}: no such file") from None
        try:
            version = npy.read_magic(self.handle)
            if version == (1, 0):
                shape, fortran_order, dtype = npy.read_array_header_1_0(self.handle)
            elif version == (2, 0):
                shape, fortran_order, dtype = npy.read_array_header_2_0(self.handle)
            else:  # format 3.0 (UTF-8 field names) has no public header reader
                shape, fortran_order, dtype = npy._read_array_header(self.handle, version)  # type: ignore[attr-defined]
        except (ValueError, OSError, SyntaxError) as err:
            self.handle.close()
            raise JeirtError(f"{path}: not a readable .npy array ({err})") from err
        if dtype.hasobject:
            self.handle.close()
            raise JeirtError(f"{path}: holds Python objects; only numeric arrays are read (no pickle)")
        if fortran_order and len(shape) > 1:
            self.handle.close()
            raise JeirtError(
                f"{path}: is stored in Fortran order; save it with np.save(path, np.ascontiguousarray(a))"
            )
        self.shape: tuple[int, ...] = tuple(shape)
        self.dtype = dtype
        self.row_items = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        self.rows_left = int(shape[0]) if shape else 0

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
        if path.suffix.lower() != ".npy":
            raise JeirtError(f"{path}: question vectors must be a .npy file holding an (N, d) array")
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
    """Ids for vector rows: a 1-D .npy array or a text file with one id per line, read as the rows go."""

    def __init__(self, path: Path, expected: int):
        self.path = path
        self.expected = expected
        self.taken = 0
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
            try:
                self.handle = open(path, encoding="utf-8", newline="")  # noqa: SIM115 - closed by close()
            except FileNotFoundError:
                raise JeirtError(f"{path}: no such file") from None
            except OSError as err:
                raise JeirtError(f"{path}: cannot read ids ({err.strerror or err})") from err

    def take(self, n: int) -> list[Any]:
        if self.array is not None:
            out: list[Any] = self.array.read(n).tolist()
        else:
            assert self.handle is not None
            out = []
            try:
                for _ in range(n):
                    line = self.handle.readline()
                    if not line:
                        raise JeirtError(
                            f"{self.path}: has {self.taken + len(out)} ids "
                            f"but the vectors have {self.expected} rows"
                        )
                    out.append(line.rstrip("\r\n"))
            except UnicodeDecodeError as err:
                raise JeirtError(
                    f"{self.path}: id line {self.taken + len(out) + 1} is not valid UTF-8"
                ) from err
        self.taken += n
        return out

    def finish(self) -> None:
        if self.handle is not None and self.handle.readline():
            raise JeirtError(f"{self.path}: has more ids than the {self.expected} vector rows")

    def close(self) -> None:
        if self.array is not None:
            self.array.close()
        if self.handle is not None:
            self.handle.close()
