"""Making a router folder whole or not at all: every step that writes or checks it works on a staging folder beside
the destination, which takes the destination's name only when all of them have passed."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ._runtime import (
    HIDDEN_WRITE_KINDS,
    hidden_prefix,
    move_into_place,
    refuse_existing,
    remove_stale_folders,
)

# The hidden folders a write of a router NAME makes beside it, `.NAME.KIND-PID@HOST-<random>`, and removes when it
# ends: this module's staging folder, and the router writer's own (jeirt_lite._io.outputs.HIDDEN_WRITE_KINDS).
STAGING_KIND = "staging"
WRITE_KINDS = (STAGING_KIND, *HIDDEN_WRITE_KINDS)


def check_writable(out_dir: Path) -> None:
    """Raise DataError when the staging folder cannot be made beside `out_dir` (a read-only folder, one of another
    user): said before the training, rather than as a bare OSError once all of it is done."""
    from .data_rows import DataError

    out_dir = Path(out_dir)
    try:
        os.rmdir(tempfile.mkdtemp(dir=out_dir.parent, prefix=hidden_prefix(out_dir, STAGING_KIND)))
    except OSError as error:
        raise DataError(f"{out_dir}: cannot write the output ({error.strerror or error})") from None


@contextmanager
def staged_router(out_dir: Path, *, overwrite: bool = False) -> Iterator[Path]:
    """A path to make the router in, in a staging folder beside `out_dir`; when the block ends without an error the
    router there (saved and checked by each step) is renamed to `out_dir`, replacing an existing one only with
    `overwrite`. The staging folder goes either way, so a failure or an interrupt at any step after the first file
    (the static fast path's check, the calibration, the votes) leaves no router that is only part of what its
    steps make, and keeps the one it was to replace."""
    out_dir = Path(out_dir)
    refuse_existing(out_dir, overwrite)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_folders(out_dir, WRITE_KINDS)  # those of runs killed outright, which had no chance to
    with tempfile.TemporaryDirectory(dir=out_dir.parent, prefix=hidden_prefix(out_dir, STAGING_KIND)) as staging:
        staged = Path(staging) / "router"
        yield staged
        refuse_existing(out_dir, overwrite)  # made while the router was being made
        move_into_place(staged, out_dir)

