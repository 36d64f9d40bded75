"""Making a router folder whole or not at all: every step that writes or checks it works on a staging folder beside
the destination, which takes the destination's name only when all of them have passed."""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ._runtime import HIDDEN_WRITE_KINDS, move_into_place, refuse_existing

logger = logging.getLogger(__name__)
# The hidden folders a write of a router NAME makes beside it, `.NAME.KIND-<random>`, and removes when it ends:
# this module's staging folder, and the router writer's own (jeirt_lite._io.outputs.HIDDEN_WRITE_KINDS).
STAGING_KIND = "staging"


def leftover_folders(out_dir: Path) -> list[Path]:
    """The folders beside `out_dir` that earlier writes of it made and never removed (a run killed outright, by
    SIGKILL or the out-of-memory killer, has no chance to), or that a write running now is making."""
    kinds = (STAGING_KIND, *HIDDEN_WRITE_KINDS)
    found = (path for kind in kinds for path in out_dir.parent.glob(f".{out_dir.name}.{kind}-*"))
    return sorted(path for path in found if path.is_dir())


def _megabytes(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 1e6


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
    leftovers = leftover_folders(out_dir)
    if leftovers:  # hidden, and as large as a router each: say so, but remove nothing another run may be writing
        logger.warning("%d folder(s) beside %s from a write of it that never ended (%.1f MB): %s; remove them "
                       "unless another run is writing %s now", len(leftovers), out_dir,
                       sum(_megabytes(folder) for folder in leftovers), ", ".join(p.name for p in leftovers),
                       out_dir.name)
    with tempfile.TemporaryDirectory(dir=out_dir.parent, prefix=f".{out_dir.name}.{STAGING_KIND}-") as staging:
        staged = Path(staging) / "router"
        yield staged
        refuse_existing(out_dir, overwrite)  # made while the router was being made
        move_into_place(staged, out_dir)

