"""The converters every command's options go through (`jeirt_lite.cli._options`): their bounds at both ends, open
and closed, the lists, and how much of a bad value a message repeats."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest
from jeirt_lite.cli import _options as opt


def _refusal(parse: object, text: str) -> str:
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        parse(text)  # type: ignore[operator]
    return str(refused.value)


@pytest.mark.parametrize(
    ("low_open", "high_open", "accepted", "refused"),
    [
        (False, False, ["0", "0.5", "1", " 1 "], ["-0.001", "1.001"]),
        (True, False, ["0.001", "1"], ["0", "-1"]),
        (False, True, ["0", "0.999"], ["1", "2"]),
        (True, True, ["0.5"], ["0", "1"]),
    ],
)
def test_number_in_takes_each_end_open_or_closed(
    low_open: bool, high_open: bool, accepted: list[str], refused: list[str]
) -> None:
    parse = opt.number_in(0.0, 1.0, low_open=low_open, high_open=high_open)
    interval = f"{'(' if low_open else '['}0, 1{')' if high_open else ']'}"
    assert [parse(text) for text in accepted] == [float(text) for text in accepted]
    for text in refused:
        assert _refusal(parse, text) == f"must be a finite number in {interval}, got {text}"


@pytest.mark.parametrize("text", ["abc", "", "nan", "-inf", "1e999"])
def test_number_in_refuses_what_is_not_a_finite_number_in_its_own_words(text: str) -> None:
    assert _refusal(opt.number_in(0.0, 1.0), text) == f"must be a finite number in [0, 1], got {text}"


def test_a_bad_value_is_repeated_up_to_40_characters() -> None:
    long = "x" * 39 + "yz" + "w" * 60  # the 40th character is y, the 41st z
    assert _refusal(opt.positive_int, long) == f"{long[:40]!r} is not a whole number"
    assert _refusal(opt.number_in(0.0, 1.0), long) == f"must be a finite number in [0, 1], got {long[:40]}"
    assert _refusal(opt.list_of(opt.int_in(1, 9)), "3," + long) == f"{long[:40]!r}: {long[:40]!r} is not a whole number"
    huge = "9" * 400 + "e9"  # overflows to inf: refused as not finite, itself cut
    assert _refusal(opt.non_negative, huge) == f"must be a finite number in [0, inf), got {'9' * 40}"


def test_lists_take_commas_and_spaces_and_are_empty_only_when_allowed() -> None:
    assert opt.list_of(opt.int_in(1, 9))(" 3, 5,,9 ") == [3, 5, 9]
    assert opt.list_of(opt.fraction)("0.3,0.7") == [0.3, 0.7]
    assert _refusal(opt.list_of(opt.int_in(1, 9)), " , ") == "needs at least one value"
    assert opt.list_of(opt.fraction, allow_empty=True)(" , ") == []
    assert _refusal(opt.list_of(opt.int_in(1, 9)), "3,10") == "'10': must be at most 9, got 10"


@pytest.mark.parametrize(
    ("parse", "low", "high"),
    [(opt.threads, 1, 256), (opt.epochs, 1, 100_000), (opt.count, 0, 100_000), (opt.dimension, 1, 1 << 16),
     (opt.tokens, 8, 512), (opt.positive_int, 1, 1 << 20), (opt.seed, 0, (1 << 63) - 1)],
)
def test_whole_number_options_take_both_bounds_and_nothing_past_them(parse: object, low: int, high: int) -> None:
    assert (parse(str(low)), parse(str(high))) == (low, high)  # type: ignore[operator]
    assert _refusal(parse, str(low - 1)) == f"must be at least {low:,}, got {low - 1:,}"
    assert _refusal(parse, str(high + 1)) == f"must be at most {high:,}, got {high + 1:,}"


def test_a_number_outside_its_interval_is_repeated_up_to_40_characters() -> None:
    long = "1" + "0" * 38 + "12" + "0" * 20  # a finite number: refused for its size, its 40 first characters shown
    assert _refusal(opt.number_in(0.0, 1.0), long) == f"must be a finite number in [0, 1], got {long[:40]}"


def test_serve_s_defaults_are_the_guide_s_and_its_bounds_hold(capsys: pytest.CaptureFixture[str]) -> None:
    from jeirt_lite.cli import build_parser

    parser = build_parser()
    args = parser.parse_args(["serve"])
    guide = (Path(__file__).parents[1] / "docs" / "guide" / "serve.md").read_text(encoding="utf-8")
    table = dict(re.findall(r"^\| `(--[a-z-]+)` \| ([^|]+?) \|", guide, re.M))
    assert table["--max-body-bytes"] == f"{args.max_body_bytes:,}" == "1,048,576"
    assert table["--max-texts"] == str(args.max_texts) and table["--max-batch"] == str(args.max_batch) == "256"
    assert table["--batch-wait-ms"] == f"{args.batch_wait_ms:g}" == "2"
    assert (args.host, args.port) == ("127.0.0.1", 8000)
    for flag, low, high in [("--port", 0, 65535), ("--max-body-bytes", 1, 1 << 30), ("--max-texts", 1, 1 << 20),
                            ("--max-batch", 1, 1 << 20), ("--batch-wait-ms", 0, 1000)]:
        dest = flag[2:].replace("-", "_")
        assert [getattr(parser.parse_args(["serve", flag, str(v)]), dest) for v in (low, high)] == [low, high]
        step = 0.5 if flag == "--batch-wait-ms" else 1  # the wait is a real number, the others whole
        for beyond in (low - step, high + step):
            with pytest.raises(SystemExit):
                parser.parse_args(["serve", flag, str(beyond)])
            assert f"argument {flag}: must be" in capsys.readouterr().err
