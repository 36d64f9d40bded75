"""Making a router folder whole or not at all: every step that writes or checks it works on a staging folder beside
the destination, which takes the destination's name only when all of them have passed."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ._runtime import move_into_place, refuse_existing


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
    with tempfile.TemporaryDirectory(dir=out_dir.parent, prefix=f".{out_dir.name}.staging-") as staging:
        staged = Path(staging) / "router"
        yield staged
        refuse_existing(out_dir, overwrite)  # made while the router was being made
        move_into_place(staged, out_dir)

