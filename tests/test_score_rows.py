"""`score`'s CSV/TSV rows formatted in Rust (`_core.format_score_rows`, used by `CsvWriter`): byte for byte what
Python's `csv.writer` wrote with every float printed as `f"{x:.7g}"`, the writer before the rows moved to Rust."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pytest
from jeirt_lite import _core
from jeirt_lite._io.writers import CsvWriter, ScoredChunk, TsvWriter

HOSTILE = ["plain", "a,b", 'say "hi"', "two\nlines", "cr\rhere", "tab\there", "", " spaced ", "é中😀", '"', ",", "\r\n"]


def python_rows(ids: list[str], names: list[str], chunk: ScoredChunk, delimiter: str) -> bytes:
    """The oracle: what `CsvWriter.write` did in Python."""
    floats = lambda values: [f"{x:.7g}" for x in values.tolist()]  # noqa: E731
    columns: list[list[Any]] = [ids]
    for rank in range(chunk.indices.shape[1]):
        columns.append([names[i] for i in chunk.indices[:, rank]])
        columns.append(floats(chunk.probabilities[:, rank]))
    columns.append(floats(chunk.difficulty))
    if chunk.all_probabilities is not None:
        columns += [floats(chunk.all_probabilities[:, j]) for j in range(len(names))]
    out = io.StringIO(newline="")
    csv.writer(out, delimiter=delimiter).writerows(zip(*columns))
    return out.getvalue().encode("utf-8")


def rust_rows(ids: list[str], names: list[str], chunk: ScoredChunk, delimiter: str) -> bytes:
    return _core.format_score_rows(ids, names, chunk.indices, chunk.probabilities, chunk.difficulty,
                                   chunk.all_probabilities, delimiter)


def awkward_floats(rng: np.random.Generator, n: int) -> np.ndarray:
    """float32 values of every exponent, both signs, zeros, infinities, NaN, subnormals and decimal ties."""
    bits = rng.integers(0, 1 << 32, size=n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, 0.5, 1e-4, 9.999999e-5, 1e7, 9999999.0,
                        2.0**-11, 2.0**-12, 2.0**-149, 3.4028235e38, 1.0000001, 0.99999994], dtype=np.float32)
    return np.concatenate([special, bits, rng.random(n, dtype=np.float32)]).astype(np.float32)


@pytest.mark.parametrize("delimiter", [",", "\t"])
def test_rows_are_what_python_csv_writer_wrote(delimiter: str) -> None:
    rng = np.random.default_rng(5)
    values = awkward_floats(rng, 20_000)
    n, names = len(values), HOSTILE[:6] + ["llm-" + str(i) for i in range(3)]
    ids = [HOSTILE[i % len(HOSTILE)] + str(i) for i in range(n)]
    chunk = ScoredChunk(
        ids=ids,
        indices=rng.integers(0, len(names), size=(n, 3)).astype(np.uint32),
        probabilities=np.stack([values, rng.permutation(values), values[::-1]], axis=1),
        difficulty=rng.permutation(values),
        all_probabilities=np.ascontiguousarray(np.tile(values[:, None], (1, len(names)))),
    )
    assert rust_rows(ids, names, chunk, delimiter) == python_rows(ids, names, chunk, delimiter)
    plain = ScoredChunk(ids, chunk.indices[:, :1].copy(), chunk.probabilities[:, :1].copy(), chunk.difficulty)
    assert rust_rows(ids, names, plain, delimiter) == python_rows(ids, names, plain, delimiter)


@pytest.mark.parametrize("writer_class", [CsvWriter, TsvWriter])
@pytest.mark.parametrize("all_probabilities", [False, True])
def test_the_writer_writes_the_header_and_rows_csv_module_reads_back(
    writer_class: type[CsvWriter], all_probabilities: bool, tmp_path: Path
) -> None:
    names = ["llm,a", 'llm "b"', "llm-c"]
    rng = np.random.default_rng(1)
    probabilities = rng.random((len(HOSTILE), 3), dtype=np.float32)
    chunk = ScoredChunk(
        ids=[*HOSTILE[:-1], None],
        indices=np.argsort(-probabilities, axis=1).astype(np.uint32)[:, :2],
        probabilities=-np.sort(-probabilities, axis=1)[:, :2],
        difficulty=rng.random(len(HOSTILE), dtype=np.float32),
        all_probabilities=probabilities if all_probabilities else None,
    )
    path = tmp_path / "out.txt"
    writer = writer_class(path, 2, names, all_probabilities)
    writer.write(chunk)
    writer.write(chunk)
    writer.close()
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle, delimiter=writer_class.delimiter))
    assert rows[0][:3] == ["id", "llm_1", "p_1"] and len(rows) == 1 + 2 * len(HOSTILE)
    ids: list[Optional[str]] = [row[0] for row in rows[1 : 1 + len(HOSTILE)]]
    assert ids == [*HOSTILE[:-1], ""]
    assert [row[1] for row in rows[1 : 1 + len(HOSTILE)]] == [names[i] for i in chunk.indices[:, 0]]
    assert [float(row[2]) for row in rows[1 : 1 + len(HOSTILE)]] == pytest.approx(chunk.probabilities[:, 0].tolist(), rel=1e-6)


def test_bad_arguments_are_errors_not_crashes() -> None:
    one = np.zeros((1, 1), dtype=np.float32)
    with pytest.raises(_core.JeirtError, match="outside the 1 LLMs"):
        _core.format_score_rows(["q"], ["a"], np.array([[1]], dtype=np.uint32), one, np.zeros(1, np.float32), None, ",")
    with pytest.raises(_core.JeirtError, match="mismatched lengths"):
        _core.format_score_rows(["q", "r"], ["a"], np.zeros((1, 1), np.uint32), one, np.zeros(1, np.float32), None, ",")
    with pytest.raises(_core.JeirtError, match="C-contiguous"):
        _core.format_score_rows(["q", "r"], ["a"], np.zeros((2, 2), np.uint32)[:, :1], np.zeros((2, 1), np.float32),
                                np.zeros(2, np.float32), None, ",")
    with pytest.raises(_core.JeirtError, match="one ASCII character"):
        _core.format_score_rows(["q"], ["a"], np.zeros((1, 1), np.uint32), one, np.zeros(1, np.float32), None, ";;")
