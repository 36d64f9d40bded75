"""Where outputs go, on their own (jeirt_lite._io.outputs): which leftover partial files and hidden router folders a
new run removes, an output that is a folder or has no folder, and outputs that are inputs under another name.
tests/test_io_hostile.py kills a real run to leave a partial file, tests/test_training_staging.py real writes of a
router folder; tests/test_batch.py interrupts one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from jeirt_lite import JeirtError
from jeirt_lite._io import outputs
from jeirt_lite._io.outputs import (
    atomic_output,
    check_output_path,
    hidden_beside,
    partial_path,
    refuse_inputs,
    remove_stale_folders,
    remove_stale_partials,
    writer_token,
)
from logged import warnings_of

HOST = writer_token().split("@")[1]


# A live process that any signal but 0 would end: its parent may have set SIGHUP or SIGINT aside (nohup, a shell's
# background job), and a child inherits that.
SLEEPER = ("import signal, time\nfor s in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM, signal.SIGUSR1):\n"
           "    signal.signal(s, signal.SIG_DFL)\ntime.sleep(60)\n")


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_only_the_partial_files_of_dead_runs_to_the_same_output_are_removed(tmp_path: Path) -> None:
    output = tmp_path / "scores.parquet"
    dead = _dead_pid()
    dead_main = tmp_path / f".scores.parquet.partial-{dead}@{HOST}"
    dead_widened = tmp_path / f".scores.parquet.partial-{dead}@{HOST}.text-ids"  # the Parquet writer's side file
    dead_unhosted = tmp_path / f".scores.parquet.partial-{dead}"  # named before the host was
    mine = partial_path(output)
    assert mine.name == f".scores.parquet.partial-{os.getpid()}@{HOST}"
    kept = [
        mine,  # this process's own run
        Path(f"{mine}.text-ids"),
        tmp_path / f".scores.parquet.partial-{dead}@00000000",  # other machines', whose processes are not seen
        tmp_path / f".scores.parquet.partial-{dead}@ffffffff",
        tmp_path / ".scores.parquet.partial-notapid",
        tmp_path / f".other.parquet.partial-{dead}",  # another output's
        tmp_path / f"scores.parquet.partial-{dead}",  # not hidden: not ours
    ]
    for path in [dead_main, dead_widened, dead_unhosted, *kept]:
        path.write_text("x")
    assert sorted(remove_stale_partials(output)) == sorted([dead_main, dead_widened, dead_unhosted])
    assert all(path.exists() for path in kept) and not any(p.exists() for p in (dead_main, dead_widened, dead_unhosted))


def test_an_output_named_like_a_glob_removes_only_its_own_partial_files(tmp_path: Path) -> None:
    dead = _dead_pid()
    own = tmp_path / f".s[1]*.csv.partial-{dead}@{HOST}"
    like = [tmp_path / f".s1x.csv.partial-{dead}@{HOST}", tmp_path / f".s[1]*.csv.part-{dead}@{HOST}"]
    for path in [own, *like]:
        path.write_text("x")
    assert remove_stale_partials(tmp_path / "s[1]*.csv") == [own]
    assert all(path.exists() for path in like)


def test_a_live_run_keeps_its_file_and_is_only_asked_whether_it_exists(tmp_path: Path) -> None:
    output = tmp_path / "scores.csv"
    alive = subprocess.Popen([sys.executable, "-c", SLEEPER])
    try:
        theirs = tmp_path / f".scores.csv.partial-{alive.pid}"
        theirs.write_text("a run still going")
        assert remove_stale_partials(output) == [] and theirs.exists()
        with pytest.raises(subprocess.TimeoutExpired):  # signal 0 delivers nothing: any other would end it
            alive.wait(timeout=0.5)
    finally:
        alive.kill()
        alive.wait()


def test_a_process_that_cannot_be_asked_about_keeps_its_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(pid: int, signal: int) -> None:
        raise PermissionError(1, "Operation not permitted")  # a live process of another user

    output = tmp_path / "scores.csv"
    theirs = tmp_path / f".scores.csv.partial-{_dead_pid()}"
    theirs.write_text("x")
    monkeypatch.setattr(outputs.os, "kill", refused)
    assert remove_stale_partials(output) == [] and theirs.exists()


def test_on_windows_no_process_is_asked_about_and_every_file_is_kept(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    def ends_it(pid: int, signal: int) -> None:
        raise AssertionError(f"os.kill({pid}, {signal}) would end that process on Windows")

    output = tmp_path / "scores.csv"
    theirs = tmp_path / f".scores.csv.partial-{_dead_pid()}@{HOST}"
    theirs.write_text("x")
    monkeypatch.setattr(outputs.os, "kill", ends_it)
    monkeypatch.setattr(outputs.os, "name", "nt")
    assert remove_stale_partials(output) == [] and theirs.exists()


def test_a_missing_output_folder_has_no_partials_and_is_refused(tmp_path: Path) -> None:
    output = tmp_path / "nowhere" / "scores.csv"
    assert remove_stale_partials(output) == []
    with pytest.raises(JeirtError, match=r"nowhere: no such folder for the output"):
        check_output_path(output, [])


def test_an_output_under_a_file_names_the_file_as_no_folder(tmp_path: Path) -> None:
    (tmp_path / "bank.csv").write_text("id,text\n")
    with pytest.raises(JeirtError, match=r"bank\.csv: is a file, not a folder for the output 'scores\.csv'"):
        check_output_path(tmp_path / "bank.csv" / "scores.csv", [])


def test_an_output_that_is_a_folder_is_told_a_file_name(tmp_path: Path) -> None:
    folder = tmp_path / "out.csv"
    folder.mkdir()
    with pytest.raises(JeirtError, match=r"out\.csv: is a folder; give a file name such as .*out\.csv/scores\.parquet"):
        check_output_path(folder, [])


def test_an_output_that_is_an_input_under_another_name_is_refused(tmp_path: Path) -> None:
    bank = tmp_path / "bank.csv"
    bank.write_text("text\nWhat is 7 * 8?\n")
    (tmp_path / "hard.csv").hardlink_to(bank)
    (tmp_path / "soft.csv").symlink_to(bank)
    (tmp_path / "sub").mkdir()
    for output in (bank, tmp_path / "hard.csv", tmp_path / "soft.csv", tmp_path / "sub" / ".." / "bank.csv"):
        with pytest.raises(JeirtError, match=r"is also the input .*bank\.csv; write the output to another path"):
            check_output_path(output, [bank])
    assert check_output_path(tmp_path / "scores.csv", [bank]) == "csv"
    refuse_inputs(tmp_path, [None, bank])  # a folder written beside its input, not over it
    with pytest.raises(JeirtError, match=r"holds the input .*bank\.csv, which writing it would delete"):
        refuse_inputs(tmp_path, [None, bank], replaces_folder=True)


def test_a_failed_write_leaves_the_previous_output_and_no_partial(tmp_path: Path) -> None:
    output = tmp_path / "scores.csv"
    output.write_text("the previous run's\n")
    with pytest.raises(RuntimeError, match="midway"), atomic_output(output) as temporary:
        temporary.write_text("half")
        raise RuntimeError("midway")
    assert output.read_text() == "the previous run's\n" and not temporary.exists()
    with atomic_output(output) as temporary:
        temporary.write_text("new\n")
    assert output.read_text() == "new\n" and not temporary.exists() and os.listdir(tmp_path) == ["scores.csv"]


def test_a_host_is_its_name_machine_id_and_process_namespace(monkeypatch: pytest.MonkeyPatch) -> None:
    def namespace(name: str) -> object:
        def readlink(path: str) -> str:
            assert path == "/proc/self/ns/pid"
            return name
        return readlink

    def no_proc(path: str) -> str:
        raise FileNotFoundError(path)

    monkeypatch.setattr(outputs.socket, "gethostname", lambda: "build-box")
    digests = []
    for readlink in (namespace("pid:[4026531836]"), namespace("pid:[4026532999]"), no_proc):
        monkeypatch.setattr(outputs.os, "readlink", readlink)
        digests.append(outputs._host_digest())
    monkeypatch.setattr(outputs, "_machine_id", lambda: "0f3a9c")  # a clone of the same name, another install
    digests.append(outputs._host_digest())
    monkeypatch.setattr(outputs.socket, "gethostname", lambda: "other-box")
    digests.append(outputs._host_digest())
    assert len(set(digests)) == 5 and all(len(d) == 8 and int(d, 16) >= 0 for d in digests)


def _router_like(folder: Path, size: int = 0) -> Path:
    folder.mkdir()
    (folder / "llms.safetensors").write_bytes(b"\0" * size)
    return folder


def test_only_the_hidden_folders_of_dead_writers_of_the_same_router_are_removed(tmp_path: Path) -> None:
    target = _router_like(tmp_path / "router")
    dead = _dead_pid()
    removed = [_router_like(tmp_path / f".router.{kind}-{dead}@{HOST}-a1b2") for kind in ("tmp", "old")]
    alive = subprocess.Popen([sys.executable, "-c", SLEEPER])
    try:
        kept = [
            _router_like(hidden_beside(target, "tmp"), 400_000),  # this process's own write
            _router_like(tmp_path / f".router.tmp-{alive.pid}@{HOST}-c3"),  # a live writer's
            _router_like(tmp_path / f".router.tmp-{dead}@00000000-d4"),  # other machines'
            _router_like(tmp_path / f".router.tmp-{dead}@ffffffff-d5"),
            _router_like(tmp_path / ".router.old-5f0e9c2a77d14b1c"),  # named before writers were
        ]
        ignored = [
            _router_like(tmp_path / f".router.staging-{dead}@{HOST}-e5"),  # a kind it was not asked about
            _router_like(tmp_path / f".other.tmp-{dead}@{HOST}-f6"),  # another router's
            # the folders of routers whose names start with this one's and a kind: "router.old-2024-05", ...
            _router_like(tmp_path / f".router.old-2024-05.tmp-{dead}@{HOST}-g7"),
            _router_like(tmp_path / f".router.old-{dead}-05.old-{dead}@{HOST}-h8"),
            _router_like(tmp_path / f".router.tmp-v2.tmp-{dead}@{HOST}-i9"),
            _router_like(tmp_path / f".router.tmp-{dead}@{HOST}.tmp-{dead}@{HOST}-j0"),
            _router_like(tmp_path / f".router.tmp-{dead}-k1"),  # no host: only ever written by another program
            _router_like(tmp_path / f".router.tmp-\u00b2@{HOST}-l2"),  # "²" is a digit to str.isdigit, not to int
        ]
        (tmp_path / f".router.tmp-{dead}@{HOST}-file").write_text("not a folder")
        pointed = _router_like(tmp_path / "elsewhere")
        (tmp_path / f".router.tmp-{dead}@{HOST}-link").symlink_to(pointed)  # a link is never followed
        with warnings_of(outputs.logger) as records:
            assert remove_stale_folders(target, ("tmp", "old")) == sorted(removed)
            assert remove_stale_folders(target, ("tmp", "old")) == []
        assert alive.poll() is None  # only asked whether it exists
    finally:
        alive.kill()
        alive.wait()
    assert not any(folder.exists() for folder in removed)
    assert all(folder.is_dir() for folder in kept + ignored) and target.is_dir()
    assert (tmp_path / f".router.tmp-{dead}@{HOST}-file").is_file()
    assert (tmp_path / f".router.tmp-{dead}@{HOST}-link").is_symlink() and (pointed / "llms.safetensors").is_file()
    names = ", ".join(sorted(folder.name for folder in kept))
    assert [record.getMessage() for record in records] == [
        f"5 folder(s) beside {target} from a write of it that has not ended (0.4 MB): {names}; remove them unless "
        "another process, here or on another machine, is writing router now"] * 2


def test_the_router_a_dead_write_was_replacing_is_kept_while_its_name_is_missing(tmp_path: Path) -> None:
    target = tmp_path / "router"
    retired = _router_like(tmp_path / f".router.old-{_dead_pid()}@{HOST}-a1")
    with warnings_of(outputs.logger) as records:
        assert remove_stale_folders(target, ("tmp", "old")) == []
    assert retired.is_dir()
    assert [record.getMessage() for record in records] == [
        f"{target}: a write that replaced it stopped before it ended; the copy it replaced is in {retired}: rename "
        "that to router to keep it (the first write that finds router in place removes it)"]
    _router_like(target)
    with warnings_of(outputs.logger) as records:
        assert remove_stale_folders(target, ("tmp", "old")) == [retired]
    assert records == [] and not retired.exists()


def test_a_folder_that_cannot_be_removed_is_named_not_counted_and_stops_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(path: str, ignore_errors: bool = False) -> None:  # as rmtree where a file is not the user's
        if not ignore_errors:
            raise PermissionError(13, "Permission denied", path)

    target = _router_like(tmp_path / "router")
    stuck = _router_like(tmp_path / f".router.tmp-{_dead_pid()}@{HOST}-a1")
    monkeypatch.setattr(outputs.shutil, "rmtree", refused)
    with warnings_of(outputs.logger) as records:
        assert remove_stale_folders(target, ("tmp", "old")) == []
    assert stuck.is_dir()
    assert [record.getMessage() for record in records] == [
        f"1 folder(s) beside {target} from a write of it that has not ended (0.0 MB): {stuck.name}; remove them "
        "unless another process, here or on another machine, is writing router now"]


def test_a_process_id_beyond_any_the_system_gives_is_kept(tmp_path: Path) -> None:
    output = tmp_path / "scores.csv"
    odd = [tmp_path / f".scores.csv.partial-9999999999@{HOST}", tmp_path / f".scores.csv.partial-\u00b2@{HOST}",
           tmp_path / f".scores.csv.partial-99999999999@{HOST}"]
    for path in odd:
        path.write_text("x")
    (tmp_path / f".scores.csv.partial-{_dead_pid()}@{HOST}.text-ids").mkdir()  # not a file: left, not fatal
    assert remove_stale_partials(output) == []
    assert all(path.exists() for path in odd)


def test_a_missing_folder_has_no_hidden_folders(tmp_path: Path) -> None:
    assert remove_stale_folders(tmp_path / "nowhere" / "router", ("tmp", "old")) == []


def test_the_error_that_stopped_a_write_is_kept_when_its_temporary_file_cannot_be_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A read-only folder: the temporary file is never made, and removing it fails with EROFS rather than ENOENT.
    def read_only(path: Path, missing_ok: bool = False) -> None:
        raise OSError(30, "Read-only file system", str(path))

    monkeypatch.setattr(Path, "unlink", read_only)
    with pytest.raises(JeirtError, match="the first error"), atomic_output(tmp_path / "scores.csv"):
        raise JeirtError("the first error")
