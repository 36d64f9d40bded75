"""The CSV parser's record bound (`_core.CsvParser(delimiter, max_record_bytes)`) against the csv module's records:
whatever the bound and the block size, the records before the first one longer than the bound are those of a parser
without it, and that one is the error that ends the file. A record's length runs from its first byte to its last
before the line end that ends it, the line ends inside its quoted values counted."""

from __future__ import annotations

import csv
import re

from hypothesis import given, settings
from hypothesis import strategies as st
from jeirt_lite import _core

UNBOUNDED = 2**64 - 1
BLOCKS = [*range(1, 18), 1 << 18]  # every small block size: a record's start and end fall at every offset of one
# The bytes that decide where a record starts and ends, and ordinary ones around them.
PIECES = [b"a", b"bc", b",", b"\t", b'"', b'""', b"\r", b"\n", b"\r\n", b" ", "é".encode(), b"\xff"]
_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def _items(content: bytes, delimiter: str, bound: int, block: int) -> list[object]:
    """Each record's fields (a blank line's none) and then the error that ends the file, if any."""
    parser = _core.CsvParser(delimiter, bound)
    for start in range(0, len(content), block):
        parser.feed(content[start : start + block])
    parser.finish()
    items: list[object] = []
    while True:
        fields, error = parser.header()  # the next item, whatever its position
        if error is not None:
            return [*items, error]
        if fields is None:
            return items
        items.append(list(fields))


def _spans(content: bytes, delimiter: str) -> list[tuple[int, bool]]:
    """(bytes spanned, whether it is the malformed record ending the file) of each record the csv module reads in
    strict mode, a run of blank lines one span of 0; a malformed record spans up to the end of the file."""
    text = content.decode("latin-1")  # one character a byte: offsets in the text are offsets in the file
    lines = _LINES.findall(text)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    reader = csv.reader(iter(lines), delimiter=delimiter, strict=True)
    spans, first = [], 0  # first: the index of the line the next record starts on
    try:
        for fields in reader:
            last = reader.line_num - 1
            end = starts[last] + len(lines[last].rstrip("\r\n"))
            if fields or not spans or spans[-1] != (0, False):  # a run of blank lines is one item of the parser's
                spans.append((end - starts[first] if fields else 0, False))
            first = last + 1
    except csv.Error:
        spans.append((len(text) - starts[first], True))
    return spans


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(st.sampled_from(PIECES), max_size=30), bound=st.integers(0, 24), tsv=st.booleans())
def test_the_first_record_longer_than_the_bound_ends_the_file_at_every_block_size(
    pieces: list[bytes], bound: int, tsv: bool
) -> None:
    content, delimiter = b"".join(pieces), "\t" if tsv else ","
    unbounded = _items(content, delimiter, UNBOUNDED, 1 << 18)
    spans = _spans(content, delimiter)
    assert len(spans) == len(unbounded)
    longer = next((i for i, (span, _) in enumerate(spans) if span > bound), None)
    too_long = f"record longer than {bound} bytes"
    for block in BLOCKS:
        items = _items(content, delimiter, bound, block)
        if longer is None:
            assert items == unbounded, block
            continue
        assert items[:longer] == unbounded[:longer] and len(items) == longer + 1, block
        # A malformed record may be found malformed before the bound is passed, where the block ends.
        malformed = spans[longer][1]
        assert items[longer] == too_long or (malformed and items[longer] == unbounded[longer]), block
