"""Where outputs go: never onto an input, and only complete (written under a temporary name, then renamed).

Every command that writes checks its output with `refuse_inputs` before reading anything, and writes files
through `atomic_output`. A run killed outright (SIGKILL, power loss) cannot delete its temporary file; the next
run to the same output removes the ones whose process is gone.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Optional

from .._errors import JeirtError
from .formats import format_of


def refuse_inputs(output: Path, inputs: Sequence[Optional[Path]], *, replaces_folder: bool = False) -> None:
    """Refuse an output that is an input, under another name, a symbolic link or a hard link (same inode).

    With `replaces_folder` (a folder output, replaced whole when it exists), also refuse one that holds an
    input: replacing it would delete that input.
    """
    for source in inputs:
        if source is None:
            continue
        if _same_file(output, source):
            raise JeirtError(f"{output}: is also the input {source}; write the output to another path")
        if replaces_folder and _inside(source, output):
            raise JeirtError(f"{output}: holds the input {source}, which writing it would delete; choose another")


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return False


def _inside(path: Path, folder: Path) -> bool:
    try:
        Path(path).resolve().relative_to(Path(folder).resolve())
    except ValueError:
        return False
    return True


def check_output_path(output: Path, inputs: Sequence[Path]) -> str:
    """The output's format; refuses an output that would replace an input or has nowhere to go."""
    fmt = format_of(output, "output")
    if output.is_dir():
        raise JeirtError(f"{output}: is a folder; give a file name such as {output / 'scores.parquet'}")
    check_output_folder(output)
    refuse_inputs(output, inputs)
    return fmt


def check_output_folder(output: Path) -> None:
    if not output.parent.is_dir():
        raise JeirtError(f"{output.parent}: no such folder for the output")


# The hidden folders a write of a router folder NAME makes beside it, `.NAME.KIND-<random>`, and removes when it
# ends: the folder being written ("tmp") and the router it replaces, moved aside ("old"). Training names those that
# a run killed outright left behind (jeirt_lite_training.staging).
HIDDEN_WRITE_KINDS = ("tmp", "old")


def hidden_beside(target: Path, kind: str) -> Path:
    """A new hidden path `.NAME.KIND-<random>` beside `target`, KIND one of HIDDEN_WRITE_KINDS."""
    return target.parent / f".{target.name}.{kind}-{uuid.uuid4().hex}"


def partial_path(output: Path) -> Path:
    """The temporary file a run of this process writes before renaming it to `output`."""
    return output.parent / f"{_partial_prefix(output)}{os.getpid()}"


def _partial_prefix(output: Path) -> str:
    return f".{output.name}.partial-"


def remove_stale_partials(output: Path) -> list[Path]:
    """Delete temporary files of earlier runs to `output` whose process no longer exists; returns them."""
    prefix = _partial_prefix(output)
    removed: list[Path] = []
    try:
        entries = list(os.scandir(output.parent))
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith(prefix):
            continue
        pid = entry.name[len(prefix) :].split(".", 1)[0]  # "1234" or "1234.text-ids"
        if not pid.isdigit() or _process_exists(int(pid)):
            continue
        with contextlib.suppress(FileNotFoundError):
            os.unlink(entry.path)
            removed.append(Path(entry.path))
    return removed


def _process_exists(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except OSError:  # it exists but belongs to someone else (EPERM), or cannot be told: keep its file
        return True
    return True


@contextlib.contextmanager
def atomic_output(output: Path) -> Iterator[Path]:
    """Yield a temporary path next to `output`; rename it into place on success, delete it on any failure.

    Readers of `output` therefore see either nothing (or the previous file) or the complete new file, never
    half of one, even when the run is interrupted.
    """
    remove_stale_partials(output)
    temporary = partial_path(output)
    try:
        yield temporary
        os.replace(temporary, output)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        raise
