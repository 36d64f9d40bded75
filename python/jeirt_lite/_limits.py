"""The documented bounds on every numeric input, in one place, and the checks that enforce them.

A value outside its bound is refused with a `JeirtError` naming the option, before any work starts: a bound
exists so that a typo (``threads=10**6``, ``k=-1``, a ``1e300`` cost weight) ends in a clear message instead of a
hang, an out-of-memory kill or a silently meaningless answer.

| what | bound |
|---|---|
| threads (ONNX Runtime and the Rust pool) | 1..MAX_THREADS |
| chunk sizes, batch sizes | 1..MAX_CHUNK_ROWS |
| text length | cut to MAX_CHARS_PER_TOKEN x the encoder's max_seq_length characters before tokenising |
| a line of stdin (`route`), of a JSONL table or an ids file; a CSV/TSV record | at most MAX_LINE_BYTES bytes |
| thresholds, probabilities | finite, in [0, 1] |
| cost weights | finite, >= 0 |
| router dimension d / LLMs / reference rows | 1..MAX_DIM / 1..MAX_LLMS / 1..MAX_REFERENCE |
| encoder max_seq_length | 1..MAX_SEQ_LENGTH |
| random seeds (training) | 0..MAX_SEED |
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from ._errors import JeirtError

# Far above any machine these run on; beyond it thread creation alone exhausts memory (10**6 was OOM-killed).
MAX_THREADS = 256
# Rows held in memory at once by one chunk of a streaming run.
MAX_CHUNK_ROWS = 1 << 20
# A word-piece or BPE token covers a few characters of natural text; 32 per token leaves room for long words
# and runs of spaces, so the cut only bites on texts far longer than the encoder reads anyway.
MAX_CHARS_PER_TOKEN = 32
MAX_SEQ_LENGTH = 1 << 15
# The longest text any router reads: the cut above, at the longest max_seq_length.
MAX_TEXT_CHARS = MAX_CHARS_PER_TOKEN * MAX_SEQ_LENGTH
# A line of `route`'s stdin: room for MAX_TEXT_CHARS characters of UTF-8's widest (4 bytes), so no text a router
# could read is refused; a longer line (`route < /dev/zero`) is refused before it is read whole. The table readers
# hold a row of a file to the same bound: a row holds at most one text.
MAX_LINE_BYTES = 4 * MAX_TEXT_CHARS
MAX_DIM = 1 << 16
MAX_LLMS = 1 << 16
MAX_REFERENCE = 1 << 22
MAX_NAME_CHARS = 1000
# NumPy's generators take only non-negative seeds, torch's at most 2**64 - 1: both take 0..2**63 - 1 (an int64).
MAX_SEED = (1 << 63) - 1


def bounded_int(value: Any, name: str, low: int, high: int) -> int:
    """`value` as an int in low..high, or a JeirtError naming `name` and the bounds."""
    if isinstance(value, np.integer):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise JeirtError(f"{name} must be an integer in {low}..{high}, got {value!r}")
    if not low <= value <= high:
        raise JeirtError(f"{name} must be in {low}..{high}, got {value}")
    return value


def finite_float(value: Any, name: str, low: float = -math.inf, high: float = math.inf) -> float:
    """`value` as a finite float in [low, high], or a JeirtError naming `name`."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise JeirtError(f"{name} must be a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise JeirtError(f"{name} must be finite, got {value!r}")
    if not low <= number <= high:
        raise JeirtError(f"{name} must be in [{low:g}, {high:g}], got {value!r}")
    return number


# What a bounded reader asks `readline` for: the longest line and its \r\n.
LINE_READ_LIMIT = MAX_LINE_BYTES + 2


def line_too_long(line: Any) -> bool:
    """Whether a line read by `readline(LINE_READ_LIMIT)` (bytes, or text) is longer than MAX_LINE_BYTES bytes without
    its line end (the rest of such a line is left unread)."""
    if len(line) <= (MAX_LINE_BYTES if isinstance(line, bytes) else MAX_LINE_BYTES // 4):  # every line but a huge one
        return False
    # One line end only: more carriage returns at the end of a read cut at the bound are the line's own bytes.
    end = b"\r\n" if isinstance(line, bytes) else "\r\n"
    content = line[:-2] if line.endswith(end) else line[:-1] if line[-1:] in (end[:1], end[1:]) else line
    if isinstance(content, bytes) or len(content) > MAX_LINE_BYTES:
        return len(content) > MAX_LINE_BYTES
    # A character is 1 to 4 bytes in UTF-8: only a text this long can pass the bound in bytes.
    return len(content) > MAX_LINE_BYTES // 4 and len(content.encode("utf-8", "surrogateescape")) > MAX_LINE_BYTES


def bounded_readline(source: Any) -> Any:
    """The next line of a binary or text stream (empty at its end), or None for a line longer than MAX_LINE_BYTES
    bytes, read no further than the bound (the stream may be endless: a pipe of /dev/zero)."""
    line = source.readline(LINE_READ_LIMIT)
    return None if line_too_long(line) else line


def bounded_lines(source: Any, number: int = 1) -> Iterator[tuple[int, Any]]:
    """Each line of a binary or text stream with its number, from `number`, as `bounded_readline` reads it: a line
    longer than MAX_LINE_BYTES comes as None, and nothing after it is read."""
    while True:
        line = bounded_readline(source)
        if line is not None and not line:  # the end of the stream
            return
        yield number, line
        if line is None:
            return
        number += 1


def check_threads(threads: Any) -> int:
    return bounded_int(threads, "threads", 1, MAX_THREADS)


def check_seed(seed: Any) -> int:
    return bounded_int(seed, "seed", 0, MAX_SEED)


def check_probability(value: Any, name: str) -> float:
    return finite_float(value, name, 0.0, 1.0)


def check_chunk_rows(value: Any, name: str) -> int:
    return bounded_int(value, name, 1, MAX_CHUNK_ROWS)


def check_finite_rows(array: np.ndarray, what: str) -> None:
    """Refuse an (N, d) array holding NaN or inf, naming the first such row ("question vectors row 3 contains NaN
    or inf"): one would poison a mean, a percentile or a clustering without an error."""
    bad = np.flatnonzero(~np.isfinite(array).all(axis=1))
    if bad.size:
        raise JeirtError(f"{what} row {int(bad[0])} contains NaN or inf")
