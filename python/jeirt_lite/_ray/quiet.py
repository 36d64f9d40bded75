"""Ray's own lines on the driver's stderr, held back for `jeirt-lite score --engine ray -q`: the driver's "ray"
logger, which `ray.init` sets up, and the console of Ray Data's "ray.data" logger. Only what this process prints
changes: a cluster's own processes log as they are configured, and Ray's session log files keep every line."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

# Warnings too: Ray's are advice to whoever develops on Ray (token authentication turned on for a new local runtime),
# not news about the run; its errors still show.
QUIET_LEVEL = logging.ERROR
# Ray Data's errors too: a failed Dataset's are a worker's error, which the run raises (the command prints it in
# its own words), with advice for Ray Data's API (DataContext.max_errored_blocks) that a command's user cannot take.
QUIET_DATA_LEVEL = logging.CRITICAL


def init_logging_level(quiet: bool) -> int:
    """The level `ray.init` gives the driver's "ray" logger: Ray's default (INFO), or errors only when quiet."""
    return QUIET_LEVEL if quiet else logging.INFO


@contextmanager
def ray_data_console(quiet: bool) -> Iterator[None]:
    """When quiet, Ray Data's console lines on the driver (each Dataset's start, plan and end, 'progress bars
    disabled', a failure's) are held back while the block runs; its file handlers keep them. The levels are
    restored after, so a caller's own Datasets print as before."""
    if not quiet:
        yield
        return
    # Ray Data's console handler is a StreamHandler on stderr; its session log files are plain Handlers.
    consoles = [handler for handler in logging.getLogger("ray.data").handlers
                if isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler)]
    levels = [handler.level for handler in consoles]
    for handler in consoles:
        handler.setLevel(QUIET_DATA_LEVEL)
    try:
        yield
    finally:
        for handler, level in zip(consoles, levels):
            handler.setLevel(level)
