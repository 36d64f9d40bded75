"""`jeirt-lite route` in process, on the shipped router: how stdin is read and batched, the bound on a stdin line,
what --json writes, the bound on --k, --no-neighbours, and when the note on LLMs without a cost is printed."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from jeirt_lite import JeirtError, Router
from jeirt_lite._limits import MAX_LINE_BYTES
from jeirt_lite.cli import main, route
from jeirt_lite.cli.route import _stdin_batches

QUESTIONS = ["What is the derivative of x**3 at x = 2?", "Which court hears a contract dispute?", "Who wrote Hamlet?"]
COST_NOTE = "left out (no known cost)"


@pytest.fixture(scope="module")
def router() -> Router:
    return Router.load(threads=1)


class Terminal(io.TextIOWrapper):
    def isatty(self) -> bool:
        return True


def _stdin(data: bytes, terminal: bool = False) -> io.TextIOWrapper:
    return (Terminal if terminal else io.TextIOWrapper)(io.BytesIO(data), encoding="utf-8")


def test_stdin_is_read_in_batches_from_a_pipe_and_line_by_line_at_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(route, "STDIN_BATCH", 2)
    data = b"a\nb\n\n  \nc\nd\ne\n"
    assert list(_stdin_batches(_stdin(data))) == [["a", "b"], ["c", "d"], ["e"]]
    assert list(_stdin_batches(_stdin(data, terminal=True))) == [["a"], ["b"], ["c"], ["d"], ["e"]]
    assert list(_stdin_batches(_stdin(b"a\nb\n"))) == [["a", "b"]]


class _Endless(io.RawIOBase):
    """An input that never ends (`< /dev/zero`), failing the test once far more than a line's bound was read."""

    def __init__(self) -> None:
        super().__init__()
        self.served = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        assert self.served < 4 * MAX_LINE_BYTES, "read on past the bound of a line"
        buffer[:] = b"a" * len(buffer)
        self.served += len(buffer)
        return len(buffer)


def test_an_endless_line_is_refused_by_its_number_and_the_bound_without_being_read_whole() -> None:
    endless = _Endless()
    stdin = io.TextIOWrapper(io.BufferedReader(endless), encoding="utf-8")
    with pytest.raises(JeirtError, match=f"stdin line 1 is longer than {MAX_LINE_BYTES:,} bytes"):
        list(_stdin_batches(stdin))
    assert endless.served <= 2 * MAX_LINE_BYTES


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b""])
def test_a_line_as_long_as_the_bound_is_read_and_one_byte_more_is_refused(end: bytes) -> None:
    longest = b"a" * MAX_LINE_BYTES
    assert [len(text) for batch in _stdin_batches(_stdin(b"q\n" + longest + end)) for text in batch] == [
        1, MAX_LINE_BYTES]
    with pytest.raises(JeirtError, match="stdin line 2 is longer than"):
        list(_stdin_batches(_stdin(b"q\n" + longest + b"a" + end)))


def test_a_byte_order_mark_is_dropped_from_the_first_stdin_line_only(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bom = "\ufeff".encode()
    monkeypatch.setattr(sys, "stdin", _stdin(bom + "Qu'est-ce qu'une école ?\n".encode() + bom + b"Who wrote Hamlet?\n"))
    assert main(["route", "--json", "--threads", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(line)["text"] for line in lines] == ["Qu'est-ce qu'une école ?", "\ufeffWho wrote Hamlet?"]
    assert "école" in lines[0]  # written as UTF-8, not as \u escapes


def test_json_numbers_have_six_decimals_and_equal_the_router_s(
    router: Router, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["route", "--json", "--k", "3", "--threads", "1", *QUESTIONS]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    expected = router.route(QUESTIONS, 3)
    difficulty = router.difficulty(QUESTIONS)
    for record, names, ps, d in zip(records, expected.names, expected.probabilities, difficulty):
        got = [step["p"] for step in record["route"]]
        assert [step["llm"] for step in record["route"]] == names
        assert np.allclose(got, ps, rtol=0, atol=5e-7) and abs(record["difficulty"] - d) <= 5e-7
        assert all(round(value, 6) == value for value in [*got, record["difficulty"]])


def test_k_may_be_every_llm_and_no_more(router: Router, capsys: pytest.CaptureFixture[str]) -> None:
    n = len(router.llms)
    assert main(["route", "--json", "--k", str(n), "--threads", "1", QUESTIONS[0]]) == 0
    assert len(json.loads(capsys.readouterr().out)["route"]) == n
    assert main(["route", "--k", str(n + 1), "--threads", "1", QUESTIONS[0]]) == 2
    assert f"k must be between 1 and the {n} LLMs routed among (the router's LLMs), got {n + 1}" in capsys.readouterr().err


def test_an_empty_question_argument_is_named_by_its_position(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["route", "--threads", "1", QUESTIONS[0], QUESTIONS[1], " ", QUESTIONS[2]]) == 1
    assert "question argument 3: " in capsys.readouterr().err


def test_no_neighbours_routes_without_the_votes(router: Router, capsys: pytest.CaptureFixture[str]) -> None:
    assert router.neighbours is not None
    for flags, scorer in (([], router), (["--no-neighbours"], router.with_neighbours(None))):
        assert main(["route", "--json", "--k", "2", "--threads", "1", *flags, *QUESTIONS]) == 0
        got = [[step["p"] for step in json.loads(line)["route"]] for line in capsys.readouterr().out.splitlines()]
        assert np.allclose(got, scorer.route(QUESTIONS, 2).probabilities, rtol=0, atol=5e-7)
    without = router.with_neighbours(None).route(QUESTIONS, 2).probabilities
    assert not np.allclose(without, router.route(QUESTIONS, 2).probabilities, rtol=0, atol=1e-3)


@pytest.mark.parametrize(
    ("flags", "noted"),
    [([], False), (["--cost-weight", "0.001"], True), (["--min-probability", "0.5"], True),
     (["--cost-weight", "0.001", "--llms", "Yi-6B,gemma-7b"], False)],
)
def test_the_llms_without_a_cost_are_named_only_when_costs_decide_among_all(
    flags: list[str], noted: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["route", "--threads", "1", *flags, QUESTIONS[0]]) == 0
    assert (COST_NOTE in capsys.readouterr().err) is noted


def test_a_router_without_costs_refuses_cost_aware_routing_without_the_note(
    tiny_router_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["route", "--router", str(tiny_router_path), "--cost-weight", "0.1", "--threads", "1", "a b"]) == 1
    err = capsys.readouterr().err
    assert "this router stores none (train --costs or router.with_costs(" in err and COST_NOTE not in err, err


def test_only_a_person_at_a_terminal_is_told_that_stdin_is_read(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for terminal in (False, True):
        monkeypatch.setattr(sys, "stdin", _stdin(b"Who wrote Hamlet?\n", terminal=terminal))
        assert main(["route", "--threads", "1"]) == 0
        captured = capsys.readouterr()
        assert ("reading questions from stdin, one per line" in captured.err) is terminal
        assert captured.out.startswith("Who wrote Hamlet?\n  1. ")


@pytest.mark.parametrize(("k", "note"), [("1", "the most likely one is shown"), ("3", "the 3 most likely are shown")])
def test_the_listing_says_where_no_llm_clears_the_threshold(
    router: Router, capsys: pytest.CaptureFixture[str], k: str, note: str
) -> None:
    assert main(["route", "--threads", "1", "--k", k, "--min-probability", "0.999", QUESTIONS[0]]) == 0
    out = capsys.readouterr().out
    expected = router.route([QUESTIONS[0]], int(k), min_probability=0.999)
    assert expected.fallback is not None and expected.fallback.tolist() == [True]
    assert f"  (no LLM clears --min-probability: {note})\n" in out
    assert [line.split()[1] for line in out.splitlines()[1:1 + int(k)]] == expected.names[0]
    assert main(["route", "--threads", "1", "--k", k, "--min-probability", "0.01", QUESTIONS[0]]) == 0
    assert "no LLM clears" not in capsys.readouterr().out
