"""The `jeirt-lite` command line: in-process through cli.main for speed, and as `python -m jeirt_lite`
subprocesses where the process itself matters (stdin, exit codes, signals)."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import jeirt_lite
import numpy as np
import pyarrow.parquet as pq
import pytest
from child_env import cli_env
from jeirt_lite import Router
from jeirt_lite.cli import build_parser, main
from jeirt_lite.cli.route import STDIN_BATCH

QUESTIONS = [
    "What is the derivative of a function",
    "Which court decides a contract law case",
    "acid base reaction",
]


@pytest.fixture(scope="module")
def router(tiny_router_path: Path) -> Router:
    return Router.load(tiny_router_path, threads=1)


def run_cli(*args: str, stdin: str = "", timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """`python -m jeirt_lite ARGS` with this checkout's package importable."""
    return subprocess.run(
        [sys.executable, "-m", "jeirt_lite", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=cli_env(),
        check=False,
    )


def parse_forecast(stdout: str) -> dict[str, float]:
    lines = stdout.strip().splitlines()
    assert lines[0].startswith("expected accuracy on")
    return {name: float(value) for name, value in (line.split() for line in lines[1:])}


# -- route ---------------------------------------------------------------------------------------------------


def test_route_arguments_human_output(
    router: Router, tiny_router_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["route", "--router", str(tiny_router_path), "--k", "2", "--threads", "1", *QUESTIONS]) == 0
    out = capsys.readouterr().out.splitlines()
    expected = router.route(QUESTIONS, k=2)
    assert len(out) == 4 * len(QUESTIONS)
    for i, question in enumerate(QUESTIONS):
        block = out[4 * i : 4 * i + 4]
        assert block[0] == question
        for rank, (name, p) in enumerate(expected[i], 1):
            assert block[rank].split() == [f"{rank}.", name, "P(correct)", f"{p:.3f}"]
        assert block[3].split()[0] == "difficulty"


def test_route_json_lines(router: Router, tiny_router_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["route", "--router", str(tiny_router_path), "--json", "--k", "3", *QUESTIONS]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    expected = router.route(QUESTIONS, k=3)
    assert [r["text"] for r in records] == QUESTIONS
    for i, record in enumerate(records):
        assert [item["llm"] for item in record["route"]] == expected.names[i]
        np.testing.assert_allclose(
            [item["p"] for item in record["route"]], expected.probabilities[i], atol=1e-6
        )
    np.testing.assert_allclose([r["difficulty"] for r in records], router.difficulty(QUESTIONS), atol=1e-6)


def test_route_with_costs_threshold_and_a_subset_matches_the_api(
    tiny_router_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    priced = Router.load(tiny_router_path, threads=1).with_costs({f"llm-{i}": float(i + 1) for i in range(5)})
    folder = priced.save(tmp_path / "priced")
    cases: list[tuple[list[str], dict[str, Any]]] = [
        (["--k", "2", "--cost-weight", "0.05"], {"k": 2, "cost_weight": 0.05}),
        (["--min-probability", "0.4"], {"min_probability": 0.4}),
        (["--k", "2", "--llms", "llm-3, llm-1"], {"k": 2, "llms": ["llm-3", "llm-1"]}),
    ]
    for flags, kwargs in cases:
        assert main(["route", "--router", str(folder), "--json", *flags, *QUESTIONS]) == 0
        records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        expected = priced.route(QUESTIONS, **kwargs)
        assert [[item["llm"] for item in r["route"]] for r in records] == expected.names
        if expected.fallback is not None:
            assert [r["fallback"] for r in records] == expected.fallback.tolist()
    assert main(["route", "--router", str(folder), "--llms", "gpt-9", *QUESTIONS]) == 2  # an option's value
    assert "unknown LLM 'gpt-9'" in capsys.readouterr().err


def test_route_reads_stdin_one_question_per_line(router: Router, tiny_router_path: Path) -> None:
    stdin = "\n".join([QUESTIONS[0], "", "   ", QUESTIONS[1], QUESTIONS[2]]) + "\n"  # blank lines are skipped
    done = run_cli("route", "--router", str(tiny_router_path), "--json", stdin=stdin)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["text"] for r in records] == QUESTIONS
    assert [r["route"][0]["llm"] for r in records] == router.route(QUESTIONS).best


def test_route_stdin_that_is_not_utf8_is_named(tiny_router_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "jeirt_lite", "route", "--router", str(tiny_router_path)],
        input=b"what is the price\ncaf\xe9\n",
        capture_output=True,
        env=cli_env(),
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert b"stdin line 2 is not valid UTF-8" in done.stderr and b"Traceback" not in done.stderr


def test_route_stdin_saved_as_utf16_is_named_as_such(tiny_router_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "jeirt_lite", "route", "--router", str(tiny_router_path)],
        input="what is the price\n".encode("utf-16"),  # with its byte-order mark, as Windows tools save it
        capture_output=True,
        env=cli_env(),
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert b"stdin line 1 is not valid UTF-8: stdin is UTF-16 (byte-order mark FF FE at byte 0)" in done.stderr


@pytest.mark.skipif(os.name == "nt", reason="a POSIX shell starts it with stdin closed")
def test_route_without_questions_and_with_stdin_closed_says_so(tiny_router_path: Path) -> None:
    # Started with stdin closed (`<&-`, as some service managers do), Python's sys.stdin is None: that ended in
    # AttributeError: 'NoneType' object has no attribute 'isatty', with a traceback.
    done = subprocess.run(
        ["sh", "-c", 'exec "$0" -m jeirt_lite route --router "$1" <&-', sys.executable, str(tiny_router_path)],
        capture_output=True, text=True, env=cli_env(), timeout=60, check=False,
    )
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == ("jeirt-lite: error: no question given, and stdin is closed: give the questions as "
                           "arguments, or one per line on stdin\n")


def test_route_errors_exit_with_the_message(
    tiny_router_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["route", "--router", str(tiny_router_path), "--k", "6", "x"]) == 2
    assert "k must be between 1 and the 5 LLMs routed among (the router's LLMs), got 6" in capsys.readouterr().err
    assert main(["route", "--router", str(tiny_router_path), "fine", " "]) == 1
    assert "question argument 2: text is empty" in capsys.readouterr().err
    assert main(["route", "--router", str(tmp_path / "nowhere"), "x"]) == 1
    assert "no router folder here" in capsys.readouterr().err


# -- info ----------------------------------------------------------------------------------------------------


def test_info(tiny_router_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", str(tiny_router_path)]) == 0
    out = capsys.readouterr().out
    assert "tiny test router built in code" in out
    assert "d = 4" in out and "tiny-word-mean (max 16 tokens; pooling: mean)" in out
    assert "LLMs (5):" in out and "  llm-4\n" in out
    assert "calibration: none (P = sigmoid(logit))\n" in out  # said, not left out
    assert main(["info", "--router", str(tiny_router_path), "--json"]) == 0  # the documented form
    manifest = json.loads(capsys.readouterr().out)
    assert manifest["llms"] == [f"llm-{i}" for i in range(5)] and manifest["dim"] == 4
    assert main(["info", str(tiny_router_path), "--router", str(tiny_router_path.parent)]) == 1
    assert "two routers given" in capsys.readouterr().err


def test_info_shows_stored_costs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info"]) == 0  # the shipped router
    out = capsys.readouterr().out
    assert "LLMs (32; cost stored for 27):" in out
    assert "calibration: global (one scale and bias for every LLM; P = sigmoid(scale * logit + bias))\n" in out
    assert "  Llama-2-70b-hf" in out and "cost 70\n" in out and "  gemini-3.1-pro\n" in out
    votes = Router.load().neighbours
    assert votes is not None and votes.short_space
    assert (
        f"neighbours votes of the {votes.keys.shape[0]} training questions' answers (k {votes.k}, weight "
        f"{votes.weight:.3g}, {votes.keys.shape[1]} principal directions; docs/research/neighbours.md)\n"
    ) in out


def test_info_shows_the_calibration_the_llms_add_llm_added_and_counts_as_counts(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    answers = tmp_path / "answers.csv"
    answers.write_text("text,correct\nWhat is 7 * 8?,1\nWho wrote Hamlet?,1\nWhat is the capital of Australia?,0\n")
    assert main(["add-llm", "--name", "my-llm", "--answers", str(answers), "-o", str(tmp_path / "plus")]) == 0
    capsys.readouterr()
    assert main(["info", "--router", str(tmp_path / "plus")]) == 0
    out = capsys.readouterr().out
    # The new LLM has a pair of its own, so the shipped router's "global" (one pair for all) is no longer true.
    assert "calibration: per_llm (a scale and bias per LLM; P = sigmoid(scale * logit + bias))\n" in out
    assert json.loads((tmp_path / "plus" / "router.json").read_text())["calibration"]["kind"] == "per_llm"
    assert "added by add-llm: my-llm (from 3 answers)\n    0 of its 3 answers are on questions the router" in out
    n = Router.load(tmp_path / "plus").manifest["metrics"]["heldout"]["n"]
    assert f"  heldout.n: {int(n)}\n" in out  # stored as 34365.0, a count


def test_info_tells_an_updated_llm_from_an_added_one(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    texts = [f"Compute {a} * {b} and give the remainder modulo {b + 3}." for a in range(3, 11) for b in range(2, 9)]
    updated = Router.load().update_llm("Yi-34B", texts, [int(i % 4 == 0) for i in range(len(texts))])
    updated.save(tmp_path / "adapted")
    assert main(["info", "--router", str(tmp_path / "adapted")]) == 0
    out = capsys.readouterr().out
    assert f"updated by add-llm --update: Yi-34B (from {len(texts)} answers)\n" in out and "added by" not in out


def test_info_shows_training_and_metrics(
    tiny_router_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from jeirt_lite.artifact import load_artifact, save_artifact

    artifact = load_artifact(tiny_router_path)

    def info(name: str, **blocks: Any) -> str:
        """What `info` prints for the tiny router saved again with these training and metrics blocks."""
        folder = save_artifact(
            tmp_path / name,
            llm_names=artifact.llm_names,
            llm_vectors=artifact.llm_vectors,
            tokenizer_json=artifact.tokenizer_path,
            encoder_onnx=artifact.encoder_path,
            encoder=artifact.encoder,
            **blocks,
        )
        assert main(["info", str(folder)]) == 0
        return capsys.readouterr().out

    out = info("r", training={"data": "mmlu_pro", "questions": 12032, "split": {"test": 0.1}},
               metrics={"test": {"auc": 0.751}})
    assert "  data: mmlu_pro\n" in out and "  split.test: 0.1\n" in out and "  test.auc: 0.751\n" in out
    # A section not recorded is said so, and the sections after it still shown; a long value is cut to 160.
    out = info("r2", metrics={"test": {"note": "x" * 300}, "sources": ["théorème", "école"]})
    assert "training: none recorded\nmetrics:\n" in out and f"  test.note: {'x' * 159}…\n" in out
    assert '  sources: ["théorème", "école"]\n' in out  # read as written, not as \u escapes


def test_help_explains_each_command_with_examples(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    for command in ("route", "score", "info"):
        with pytest.raises(SystemExit) as exit_info:
            parser.parse_args([command, "--help"])
        assert exit_info.value.code == 0
        text = capsys.readouterr().out
        assert "examples:" in text and f"jeirt-lite {command}" in text and "--threads" in text
    with pytest.raises(SystemExit):
        parser.parse_args(["score", "--help"])
    text = capsys.readouterr().out
    for option in (
        "--k",
        "--all",
        "--forecast",
        "--text-column",
        "--id-column",
        "--vectors",
        "--ids",
        "--chunk-size",
        "--skip-bad",
        "--quiet",
        "--router",
        "-o OUTPUT",
    ):
        assert option in text


def test_no_command_or_an_unknown_one_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "the following arguments are required: COMMAND" in capsys.readouterr().err
    assert main(["zebra"]) == 2  # a word after "train" in sort order is no more the training command than any other
    assert "invalid choice: 'zebra'" in capsys.readouterr().err


def test_the_sigterm_handler_is_put_back_and_a_worker_thread_may_run_the_command_line(
    tiny_router_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import threading

    before = signal.getsignal(signal.SIGTERM)
    assert main(["info", "--router", str(tiny_router_path)]) == 0
    assert signal.getsignal(signal.SIGTERM) is before
    codes: list[int] = []  # off the main thread no handler can be set: the command runs without one
    worker = threading.Thread(target=lambda: codes.append(main(["info", "--router", str(tiny_router_path)])))
    worker.start()
    worker.join(timeout=60)
    assert codes == [0] and signal.getsignal(signal.SIGTERM) is before
    assert capsys.readouterr().out.count("LLMs") >= 2


# -- score ---------------------------------------------------------------------------------------------------


def _bank(tmp_path: Path, texts: list[str], name: str = "bank.csv") -> Path:
    import csv

    path = tmp_path / name
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["question_id", "text"])
        writer.writerows([(1000 + i, text) for i, text in enumerate(texts)])
    return path


def test_score_forecast_equals_router_forecast(
    router: Router,
    tiny_router_path: Path,
    real_texts: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    bank = _bank(tmp_path, real_texts)
    output = tmp_path / "scores.parquet"
    code = main(
        [
            "score",
            str(bank),
            "-o",
            str(output),
            "--router",
            str(tiny_router_path),
            "--k",
            "2",
            "--all",
            "--forecast",
            "--chunk-size",
            "33",
            "--threads",
            "1",
        ]
    )
    assert code == 0
    captured = capsys.readouterr()
    forecast = parse_forecast(captured.out)
    expected = router.forecast(real_texts)
    assert set(forecast) == set(expected)
    for name, value in expected.items():
        assert forecast[name] == pytest.approx(value, abs=1e-5)
    assert f"scored {len(real_texts)} questions to {output}" in captured.err
    table = pq.read_table(output)
    assert table.column("id").to_pylist() == [str(1000 + i) for i in range(len(real_texts))]
    assert table.column_names[-5:] == [f"p[llm-{i}]" for i in range(5)]


def test_score_quiet_prints_nothing_on_stderr(
    tiny_router_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bank = _bank(tmp_path, QUESTIONS)
    assert (
        main(["score", str(bank), "-o", str(tmp_path / "s.jsonl"), "--router", str(tiny_router_path), "-q"])
        == 0
    )
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""
    assert len((tmp_path / "s.jsonl").read_text().splitlines()) == 3


def test_score_vectors_mode(
    router: Router, tiny_router_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    vectors = router.encode(QUESTIONS, features=False).vectors
    np.save(tmp_path / "q.npy", vectors)
    (tmp_path / "ids.txt").write_text("a\nb\nc\n")
    code = main(
        [
            "score",
            "--vectors",
            str(tmp_path / "q.npy"),
            "--ids",
            str(tmp_path / "ids.txt"),
            "-o",
            str(tmp_path / "s.csv"),
            "--router",
            str(tiny_router_path),
            "--k",
            "2",
        ]
    )
    assert code == 0
    lines = (tmp_path / "s.csv").read_text().splitlines()
    assert lines[0] == "id,llm_1,p_1,llm_2,p_2,difficulty"
    assert [line.split(",")[0] for line in lines[1:]] == ["a", "b", "c"]
    assert [line.split(",")[1] for line in lines[1:]] == router.route(QUESTIONS).best


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        # options that cannot run together, or out of the router's bound: a usage error, as argparse's (exit 2)
        (["score", "-o", "x.csv"], 2, "give an input file of question texts, or a .npy of question vectors"),
        (["score", "BANK", "--vectors", "q.npy", "-o", "x.csv"], 2, "exactly one of them"),
        (["score", "BANK"], 2, "nothing to do: give an output file (-o OUTPUT)"),
        (["score", "BANK", "--ids", "ids.txt", "-o", "x.csv"], 2, "ids (--ids) go with question vectors"),
        (["score", "BANK", "-o", "x.csv", "--k", "9"], 2, "k must be between 1 and the router's 5 LLMs"),
        (["score", "BANK", "-o", "x.csv", "--address", "auto"], 2, "--address goes with --engine ray"),
        # what the input holds: exit 1
        (["score", "BANK", "-o", "x.csv", "--text-column", "question"], 1, "no text column 'question'"),
    ],
)
def test_score_usage_errors_exit_2_and_input_errors_1(
    tiny_router_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], code: int,
    message: str
) -> None:
    bank = _bank(tmp_path, QUESTIONS)
    argv = [
        str(bank) if a == "BANK" else str(tmp_path / a) if a.endswith((".csv", ".npy", ".txt")) else a
        for a in args
    ]
    assert main([*argv, "--router", str(tiny_router_path)]) == code
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == (1 if code == 2 else 2)  # exit 1: and how far it got
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bank.csv"]


def test_bad_row_exits_1_without_traceback_and_skip_bad_counts(
    tiny_router_path: Path, tmp_path: Path
) -> None:
    bank = tmp_path / "bank.csv"
    bank.write_text('text\nwhat is the price\n""\nacid base\n""\n')
    done = run_cli("score", str(bank), "-o", str(tmp_path / "s.csv"), "--router", str(tiny_router_path))
    assert done.returncode == 1
    assert "data row 2 (1-based, header not counted, ending on line 3): text is empty" in done.stderr
    assert "fix the row or pass --skip-bad to skip such rows" in done.stderr  # the library's hint, as a flag
    assert "Traceback" not in done.stderr
    assert "stopped before any row was scored; no output was written" in done.stderr  # not "0 rows (of 0 read)"
    assert not (tmp_path / "s.csv").exists()
    done = run_cli(
        "score", str(bank), "-o", str(tmp_path / "s.csv"), "--router", str(tiny_router_path), "--skip-bad"
    )
    assert done.returncode == 0, done.stderr
    assert "skipped 2 bad rows" in done.stderr
    assert len((tmp_path / "s.csv").read_text().splitlines()) == 3


def test_one_question_and_one_skipped_row_are_counted_in_the_singular(
    tiny_router_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bank = tmp_path / "bank.csv"
    bank.write_text('text\nwhat is the price\n""\n')
    code = main(["score", str(bank), "-o", str(tmp_path / "s.csv"), "--forecast", "--skip-bad",
                 "--router", str(tiny_router_path)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.out.startswith("expected accuracy on 1 question (mean P(correct)):")
    assert f"scored 1 question to {tmp_path / 's.csv'} in " in captured.err
    assert "skipped 1 bad row (--skip-bad)" in captured.err


def test_argparse_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["score", "bank.csv", "--k", "0"]) == 2  # returned, as every other exit code of main
    assert main(["route", "--help"]) == 0
    assert "must be at least 1" in capsys.readouterr().err


# -- interrupted runs ----------------------------------------------------------------------------------------


def _wait_for(condition: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the subprocess")
        time.sleep(0.02)


def test_a_reader_that_goes_away_ends_the_run_quietly_with_status_0(tiny_router_path: Path) -> None:
    # As `jeirt-lite route < questions.txt | head -1` does once head has its line: the questions come on stdin, so
    # the pipe's reading end is closed before the command writes anything.
    process = subprocess.Popen(
        [sys.executable, "-m", "jeirt_lite", "route", "--router", str(tiny_router_path), "--k", "2"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=cli_env(),
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdout.close()
    _, stderr = process.communicate("\n".join(QUESTIONS * 50).encode(), timeout=60)
    assert (process.returncode, stderr.decode()) == (0, "")


@pytest.mark.skipif(os.name == "nt", reason="select on a pipe")
def test_ctrl_c_stops_route_while_it_waits_for_the_next_stdin_line(tiny_router_path: Path) -> None:
    # The pipe stays open and silent: the run waits in a read that only a stop signal can end (_io.pipes).
    ignored = signal.signal(signal.SIGINT, signal.default_int_handler)  # as a terminal starts it (see below)
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "jeirt_lite", "route", "--router", str(tiny_router_path), "--json"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(),
        )
    finally:
        signal.signal(signal.SIGINT, ignored)
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write((QUESTIONS[0] + "\n") * STDIN_BATCH)  # a pipe's lines are routed a batch at a time
        process.stdin.flush()
        assert select.select([process.stdout], [], [], 60)[0], "no answer to the first batch"
        assert json.loads(process.stdout.readline())["text"] == QUESTIONS[0]  # answered: now waiting for more
        time.sleep(0.3)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert (process.returncode, stderr) == (130, "jeirt-lite: interrupted\n")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a named pipe")
@pytest.mark.parametrize(
    ("sent", "times", "code", "word"),
    [(signal.SIGINT, 1, 130, "interrupted"), (signal.SIGTERM, 1, 143, "terminated"),
     # `timeout -s INT` signals the child and then its own process group; a user may press Ctrl-C twice
     (signal.SIGINT, 2, 130, "interrupted")],
)
def test_a_signal_mid_run_leaves_no_output_and_says_how_far_it_got(
    tiny_router_path: Path, tmp_path: Path, sent: int, times: int, code: int, word: str
) -> None:
    # The bank is a named pipe fed by the test, so the run is stopped at a known point: after 2 chunks of 10
    # rows were written, while it waits for more input.
    bank = tmp_path / "bank.csv"
    os.mkfifo(bank)
    output = tmp_path / "scores.csv"
    # A shell starts background jobs with SIGINT ignored, and an ignored signal stays ignored across exec: give
    # the child the default disposition (a handler in the parent becomes SIG_DFL in the child), as a terminal would.
    ignored = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        process = _start_score(bank, output, tiny_router_path, cli_env())
    finally:
        signal.signal(signal.SIGINT, ignored)
    try:
        with open(bank, "w", encoding="utf-8") as feed:
            feed.write("text\n" + "what is the price of a market\n" * 25)
            feed.flush()

            def partials() -> list[Path]:
                return list(tmp_path.glob(".scores.csv.partial-*"))

            _wait_for(lambda: bool(partials()) and len(partials()[0].read_text().splitlines()) == 21)
            for sent_before in range(times):
                if sent_before:  # apart, so that the two are not merged into one pending signal
                    time.sleep(0.01)
                process.send_signal(sent)
            _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == code, stderr
    assert (
        f"{word} after scoring 20 rows (of 25 read)" in stderr
        or f"{word} after scoring 20 rows (of 20 read)" in stderr
    )
    assert "Traceback" not in stderr
    assert stderr.startswith(f"jeirt-lite: {word}")  # stderr is no terminal: no blank line before the message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bank.csv"]


def _start_score(bank: Path, output: Path, router: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jeirt_lite",
            "score",
            str(bank),
            "-o",
            str(output),
            "--router",
            str(router),
            "--chunk-size",
            "10",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_cost_aware_route_with_a_costs_table_names_the_llms_it_omits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The note sent the user to `jeirt-lite info`, which shows the router's costs, not those of the --costs table
    # that replaced them (and said "among the 1 LLMs").
    prices = tmp_path / "prices.csv"
    prices.write_text("model,cost\nYi-34B,0.9\n")
    assert main(["route", "--costs", str(prices), "--cost-weight", "0.01", "--threads", "1", "What is 7 * 8?"]) == 0
    err = capsys.readouterr().err
    assert err.startswith(f"cost-aware routing among the 1 LLM with a cost; left out (not in {prices}): ")
    assert "jeirt-lite info" not in err and " and 21 more\n" in err


def test_module_entry_point_and_version() -> None:
    done = run_cli("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"jeirt-lite {jeirt_lite.__version__}"


def test_cost_aware_route_says_which_llms_have_no_cost(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["route", "--cost-weight", "0.001", "--threads", "1", "What is 7 * 8?"]) == 0  # shipped router
    captured = capsys.readouterr()
    assert "cost-aware routing among the 27 LLMs with a cost; left out (no known cost): " in captured.err
    assert "gemini-3.1-pro" in captured.err and "gemini-3.1-pro" not in captured.out
