"""Where outputs go: never onto an input, and only complete (written under a temporary name, then renamed)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from .._errors import JeirtError
from .formats import format_of


def check_output_path(output: Path, inputs: Sequence[Path]) -> str:
    """The output's format; refuses an output that would replace an input or has nowhere to go."""
    fmt = format_of(output, "output")
    if output.is_dir():
        raise JeirtError(f"{output}: is a folder; give a file name such as {output / 'scores.parquet'}")
    if not output.parent.is_dir():
        raise JeirtError(f"{output.parent}: no such folder for the output")
    for source in inputs:
        if source.exists() and output.exists() and os.path.samefile(source, output):
            raise JeirtError(f"{output}: is also the input; write the scores to another file")
    return fmt


def partial_path(output: Path) -> Path:
    return output.parent / f".{output.name}.partial-{os.getpid()}"


@contextlib.contextmanager
def atomic_output(output: Path) -> Iterator[Path]:
    """Yield a temporary path next to `output`; rename it into place on success, delete it on any failure.

    Readers of `output` therefore see either nothing (or the previous file) or the complete new file, never
    half of one, even when the run is interrupted.
    """
    temporary = partial_path(output)
    try:
        yield temporary
        os.replace(temporary, output)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        raise
