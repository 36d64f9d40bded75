"""What a module's logger says during a block, read off the logger itself: pytest runs with `-p no:logging` (no
caplog), and another test may have configured logging's own handlers."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def warnings_of(logger: logging.Logger) -> Iterator[list[logging.LogRecord]]:
    """The records of level WARNING and above that `logger` emits inside the block, in order."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = records.append  # type: ignore[method-assign]
    logger.addHandler(handler)
    try:
        yield records
    finally:
        logger.removeHandler(handler)
