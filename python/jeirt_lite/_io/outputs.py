"""Where outputs go: never onto an input, and only complete (written under a temporary name, then renamed).

Every command that writes checks its output with `refuse_inputs` before reading anything, and writes files
through `atomic_output`. A run killed outright (SIGKILL, power loss) cannot delete its temporary file or folder;
their names carry the writing process (`PID@HOST`), and the next write of the same output removes those whose
process is gone.
"""

from __future__ import annotations

import contextlib
import fnmatch
import glob
import hashlib
import logging
import os
import re
import shutil
import socket
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Optional

from .._errors import JeirtError
from .formats import format_of


def refuse_inputs(
    output: Path, inputs: Sequence[Optional[Path]], *, replaces_folder: bool = False,
    folders: Sequence[Optional[Path]] = (),
) -> None:
    """Refuse an output that is an input, under another name, a symbolic link or a hard link (same inode).

    With `replaces_folder` (a folder output, replaced whole when it exists), also refuse one that holds an
    input: replacing it would delete that input. An output inside one of `folders` (the router folder a command
    reads) is refused too: it would replace one of its files, or add one its record of files does not hold.
    """
    for folder in folders:
        if folder is not None and _inside(output, folder):
            raise JeirtError(f"{output}: is inside the router folder {folder}, which it would change; write the "
                             "output elsewhere")
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


def check_output_path(output: Path, inputs: Sequence[Path], router_folder: Optional[Path] = None) -> str:
    """The output's format; refuses an output that would replace an input, change the router folder read, or
    has nowhere to go."""
    if output.is_dir():  # before its suffix, which a folder seldom has
        raise JeirtError(f"{output}: is a folder; give a file name such as {output / 'scores.parquet'}")
    fmt = format_of(output, "output")
    check_output_folder(output)
    refuse_inputs(output, inputs, folders=[router_folder])
    return fmt


def check_output_folder(output: Path) -> None:
    if not output.parent.is_dir():
        if output.parent.exists():  # `-o bank.csv/scores.csv`: a file where its folder would be
            raise JeirtError(f"{output.parent}: is a file, not a folder for the output {output.name!r}")
        raise JeirtError(f"{output.parent}: no such folder for the output")


logger = logging.getLogger(__name__)
# The hidden folders a write of a router folder NAME makes beside it, `.NAME.KIND-PID@HOST-<random>`, and removes
# when it ends: the folder being written ("tmp") and the router it replaces, moved aside ("old"). Training adds its
# staging folder (jeirt_lite_training.staging).
WRITING_KIND = "tmp"
RETIRED_KIND = "old"
HIDDEN_WRITE_KINDS = (WRITING_KIND, RETIRED_KIND)


def _host_digest() -> str:
    """A short digest of this machine's name and, on Linux, its machine id and process namespace: on a folder shared
    between machines, or containers, a process that does not exist here may be running in another, so only
    leftovers of this one are ever removed."""
    try:
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:  # not Linux, or no /proc
        namespace = ""
    identity = f"{socket.gethostname()}\0{_machine_id()}\0{namespace}"
    return hashlib.sha256(identity.encode("utf-8", "surrogateescape")).hexdigest()[:8]


def _machine_id() -> str:
    """systemd's id of this installation: two machines that cloned one name (`localhost`) still differ by it."""
    try:
        return Path("/etc/machine-id").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return ""


_HOST = _host_digest()


def writer_token() -> str:
    """`PID@HOST`: the process writing a temporary file or folder, as its name records it."""
    return f"{os.getpid()}@{_HOST}"


def hidden_prefix(target: Path, kind: str) -> str:
    """The start of the name of a hidden folder this process writes beside `target`: `.NAME.KIND-PID@HOST-`."""
    return f".{target.name}.{kind}-{writer_token()}-"


def hidden_beside(target: Path, kind: str) -> Path:
    """A new hidden path `.NAME.KIND-PID@HOST-<random>` beside `target`, KIND one of HIDDEN_WRITE_KINDS."""
    return target.parent / f"{hidden_prefix(target, kind)}{uuid.uuid4().hex[:16]}"


def move_into_place(staging: Path, target: Path) -> None:
    """Rename the complete folder `staging` to `target`, replacing a folder there."""
    if not target.exists():
        os.replace(staging, target)
        return
    # A folder cannot be atomically swapped for another; move the old one aside first so that at every moment
    # `target` is either the complete old router or the complete new one (or briefly absent, never half).
    retired = hidden_beside(target, RETIRED_KIND)
    os.replace(target, retired)
    try:
        os.replace(staging, target)
    except BaseException:  # the old router back under its name, rather than left hidden as the only copy
        os.replace(retired, target)
        raise
    shutil.rmtree(retired, ignore_errors=True)


def partial_path(output: Path) -> Path:
    """The temporary file a run of this process writes before renaming it to `output`."""
    return output.parent / f"{_partial_prefix(output)}{writer_token()}"


def _partial_prefix(output: Path) -> str:
    return f".{output.name}.partial-"


def remove_stale_partials(output: Path) -> list[Path]:
    """Delete temporary files of earlier runs to `output` whose process no longer exists; returns them."""
    return remove_stale_partials_like(output.parent, glob.escape(output.name))


def remove_stale_partials_like(folder: Path, names: str) -> list[Path]:
    """Delete the temporary files in `folder` of earlier runs to any output whose name matches the glob `names`
    (outputs named afresh by each run, as the embedding cache's shards) whose process no longer exists."""
    removed: list[Path] = []
    for entry in _entries(folder):
        output, marker, token = entry.name[1:].rpartition(".partial-")
        # The token is "PID@HOST", "PID@HOST.text-ids" or, written before hosts were named, "PID".
        if not entry.name.startswith(".") or not marker or not fnmatch.fnmatchcase(output, names):
            continue
        if _writer_is_gone(token.split(".", 1)[0]):
            with contextlib.suppress(OSError):  # gone already, or not removable (a folder, no permission)
                os.unlink(entry.path)
                removed.append(Path(entry.path))
    return removed


def remove_stale_folders(target: Path, kinds: Sequence[str]) -> list[Path]:
    """Delete the hidden folders `.NAME.KIND-PID@HOST-*` beside `target` whose writer no longer exists; returns them.

    Those it keeps are named in a warning, being as large as a router each: a live writer's (or another machine's,
    one named before writers were, or one it could not remove), and the router a write was replacing ("old") while
    `target` is missing: a writer killed between moving it aside and moving the new one in left it as the only
    complete copy.
    """
    removed: list[Path] = []
    kept: list[Path] = []
    ours, legacy = _hidden_name_patterns(target, kinds)
    for entry in _entries(target.parent):
        match = ours.fullmatch(entry.name)
        if (match is None and legacy.fullmatch(entry.name) is None) or not entry.is_dir(follow_symlinks=False):
            continue  # another router's (its name then holds a "." or "-" where the random part is), or a file
        gone = match is not None and _writer_is_gone(f"{match['pid']}@{match['host']}")
        if gone and match is not None and match["kind"] == RETIRED_KIND and not target.exists():
            logger.warning("%s: a write that replaced it stopped before it ended; the copy it replaced is in %s: "
                           "rename that to %s to keep it (the first write that finds %s in place removes it)",
                           target, entry.path, target.name, target.name)
        elif gone:
            shutil.rmtree(entry.path, ignore_errors=True)  # one that cannot be removed stops no write
            (kept if os.path.lexists(entry.path) else removed).append(Path(entry.path))
        else:
            kept.append(Path(entry.path))
    if kept:
        logger.warning("%d folder(s) beside %s from a write of it that has not ended (%.1f MB): %s; remove them "
                       "unless another process, here or on another machine, is writing %s now", len(kept), target,
                       sum(_megabytes(folder) for folder in kept), ", ".join(sorted(p.name for p in kept)),
                       target.name)
    return sorted(removed)


def _megabytes(folder: Path) -> float:
    total = 0
    with contextlib.suppress(OSError):  # its writer may be removing it now: the size of what was there
        for path in folder.rglob("*"):
            total += path.stat().st_size if path.is_file() else 0
    return total / 1e6


def _hidden_name_patterns(target: Path, kinds: Sequence[str]) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The hidden folders of writes of `target`: those named by their writer, and those named before writers were
    (`.NAME.KIND-<random>`). The random part holds no "." or "-", so a router whose own name starts with NAME and a
    kind (`NAME.old-2024-05`) never has its folders taken for these."""
    head = rf"\.{re.escape(target.name)}\.(?P<kind>{'|'.join(re.escape(kind) for kind in kinds)})-"
    return (re.compile(rf"{head}(?P<pid>[0-9]{{1,10}})@(?P<host>[0-9a-f]{{8}})-[0-9a-z_]+"),
            re.compile(rf"{head}[0-9a-z_]+"))


def _entries(folder: Path) -> list[os.DirEntry[str]]:
    try:
        return list(os.scandir(folder))
    except OSError:  # no such folder (yet), or one that cannot be listed: nothing of ours to remove
        return []


def _writer_is_gone(token: str) -> bool:
    pid, at, host = token.partition("@")
    if at and host != _HOST:  # another machine's process, which this one cannot see
        return False
    return re.fullmatch("[0-9]{1,10}", pid) is not None and not _process_exists(int(pid))


def _process_exists(pid: int) -> bool:
    if pid == os.getpid() or os.name == "nt":  # Windows' os.kill ends the process it is given rather than asking
        return True
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except OverflowError:  # beyond any process id this system gives: not a name this module wrote
        return True
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
        # The error that stopped the run is the one to tell: removing a temporary file that was never made in a
        # read-only folder fails too (EROFS, not ENOENT), and its error replaced the first. A file left by a removal
        # that failed is a dead run's partial file to the next run.
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
