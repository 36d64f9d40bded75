"""The checks behind every numeric bound (`jeirt_lite._limits`): inclusive at both ends, refusing booleans,
strings, NaN and infinities by name. A mutation round found their edges untested (docs/research/mutation.md)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from jeirt_lite import JeirtError
from jeirt_lite._limits import (
    MAX_CHUNK_ROWS,
    bounded_int,
    check_chunk_rows,
    check_probability,
    check_threads,
    finite_float,
)


def test_a_number_anywhere_on_the_line_is_finite_by_default() -> None:
    for value in (-1e300, -5, 0, 2.5, np.float32(7.0), np.int64(-3), 1e300):
        assert finite_float(value, "x") == float(value)


@pytest.mark.parametrize(
    ("value", "message"),
    [("1", "x must be a number, got '1'"), (True, "x must be a number, got True"), (None, "x must be a number"),
     (math.nan, "x must be finite, got nan"), (-math.inf, "x must be finite, got -inf")],
)
def test_what_is_no_finite_number_is_refused_naming_it(value: Any, message: str) -> None:
    with pytest.raises(JeirtError, match=message):
        finite_float(value, "x")


def test_probabilities_are_bounded_by_0_and_1_inclusive() -> None:
    assert check_probability(0, "p") == 0.0 and check_probability(1.0, "p") == 1.0
    for value in (-0.5, -1e-9, 1.0 + 1e-9, 1.5, 2.0):
        with pytest.raises(JeirtError, match=r"p must be in \[0, 1\]"):
            check_probability(value, "p")


def test_integer_bounds_are_inclusive_and_refuse_booleans_and_floats() -> None:
    assert bounded_int(np.int32(3), "n", 3, 5) == 3 and bounded_int(5, "n", 3, 5) == 5
    for value in (2, 6):
        with pytest.raises(JeirtError, match=rf"n must be in 3..5, got {value}"):
            bounded_int(value, "n", 3, 5)
    for value in (True, 4.0, "4"):
        with pytest.raises(JeirtError, match="n must be an integer in 3..5"):
            bounded_int(value, "n", 3, 5)
    assert check_chunk_rows(1, "rows") == 1 and check_chunk_rows(MAX_CHUNK_ROWS, "rows") == MAX_CHUNK_ROWS
    for value in (0, MAX_CHUNK_ROWS + 1):
        with pytest.raises(JeirtError, match=f"rows must be in 1..{MAX_CHUNK_ROWS}"):
            check_chunk_rows(value, "rows")


def test_threads_and_chunks_are_bounded_as_the_guide_says() -> None:
    """docs/guide/guarantees.md: `--threads` 1..256, chunk sizes 1..1,048,576."""
    assert check_threads(1) == 1 and check_threads(256) == 256
    for value in (0, 257):
        with pytest.raises(JeirtError, match=rf"threads must be in 1..256, got {value}"):
            check_threads(value)
    assert check_chunk_rows(1_048_576, "rows") == 1_048_576
    with pytest.raises(JeirtError, match=r"rows must be in 1..1048576, got 1048577"):
        check_chunk_rows(1_048_577, "rows")
