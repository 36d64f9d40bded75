"""`jeirt-lite score` with route's rules (--llms, --cost-weight, --min-probability): its llm_k columns are those
`Router.route` chooses under the same rule, on both of score's paths (one thread: encoded in turn; two: the
background pipeline), the forecast and the p[<llm>] columns stay every LLM's, and a bad rule is refused before
the bank is read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from bank_files import ROUTED_QUESTIONS as QUESTIONS
from bank_files import read_csv_rows, write_csv_bank
from jeirt_lite import Router
from jeirt_lite._errors import JeirtError
from jeirt_lite._manifest import freeze, thaw
from jeirt_lite.batch import ScoreOptions, score_file
from jeirt_lite.cli import main

TWO = ["Yi-34B", "gemma-7b"]


@pytest.fixture(scope="module")
def router() -> Router:
    return Router.load(threads=1)


@pytest.fixture
def bank(tmp_path: Path) -> Path:
    return write_csv_bank(tmp_path / "bank.csv", QUESTIONS)


def _choices(rows: list[dict[str, str]], k: int) -> tuple[list[list[str]], np.ndarray]:
    names = [[row[f"llm_{rank}"] for rank in range(1, k + 1)] for row in rows]
    probabilities = np.array([[float(row[f"p_{rank}"]) for rank in range(1, k + 1)] for row in rows])
    return names, probabilities


RULES = [
    (["--llms", ",".join(TWO)], {"llms": TWO}),
    (["--llms", TWO[0], "--llms", TWO[1]], {"llms": TWO}),
    (["--cost-weight", "0.0005"], {"cost_weight": 0.0005}),
    (["--min-probability", "0.7"], {"min_probability": 0.7}),
    (["--min-probability", "0.7", "--llms", "Yi-34B,gemma-7b,Yi-6B"], {"min_probability": 0.7,
                                                                        "llms": ["Yi-34B", "gemma-7b", "Yi-6B"]}),
]


@pytest.mark.parametrize("threads", ["1", "2"])
@pytest.mark.parametrize(("flags", "rule"), RULES)
def test_the_llm_columns_are_route_s_choices_under_the_same_rule(
    router: Router, bank: Path, tmp_path: Path, threads: str, flags: list[str], rule: dict[str, Any]
) -> None:
    out = tmp_path / "scores.csv"
    assert main(["score", str(bank), "-o", str(out), "--k", "2", "--threads", threads, "-q", *flags]) == 0
    names, probabilities = _choices(read_csv_rows(out), 2)
    expected = router.route(QUESTIONS, 2, **rule)
    assert names == expected.names
    assert np.allclose(probabilities, expected.probabilities, rtol=0, atol=1e-6)
    if "llms" in rule:
        assert {name for pair in names for name in pair} <= set(rule["llms"])
    plain = router.route(QUESTIONS, 2)
    assert names != plain.names  # each rule changes some choice on these questions, so the test can fail


def test_a_fallback_is_marked_and_has_a_first_probability_below_the_threshold(
    router: Router, bank: Path, tmp_path: Path
) -> None:
    # tests/test_score_fallback.py has the column in every format, and a p_1 that prints as the threshold.
    out = tmp_path / "scores.csv"
    assert main(["score", str(bank), "-o", str(out), "--min-probability", "0.8", "--threads", "1", "-q"]) == 0
    rows = read_csv_rows(out)
    p_1 = np.array([float(row["p_1"]) for row in rows])
    fallback = router.route(QUESTIONS, 1, min_probability=0.8).fallback
    assert fallback is not None and fallback.any() and not fallback.all()
    assert [row["fallback"] for row in rows] == ["true" if fell else "false" for fell in fallback.tolist()]
    assert ((p_1 < 0.8) == fallback).all()


@pytest.mark.parametrize("forecast", [["--forecast"], ["--forecast-by", "id"]], ids=["whole", "by-group"])
def test_the_forecast_and_every_llm_s_column_stay_every_llm_s(
    router: Router, bank: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], forecast: list[str]
) -> None:
    outputs: dict[str, Path] = {}
    forecasts: dict[str, str] = {}
    for label, flags in (("plain", []), ("two", ["--llms", ",".join(TWO)])):
        outputs[label] = tmp_path / f"{label}.csv"
        assert main(["score", str(bank), "-o", str(outputs[label]), "--all", *forecast, "--threads", "1",
                     *flags]) == 0
        forecasts[label] = capsys.readouterr().out
    plain, two = read_csv_rows(outputs["plain"]), read_csv_rows(outputs["two"])
    every = [f"p[{name}]" for name in router.llms]
    assert list(two[0]) == ["id", "llm_1", "p_1", "difficulty", *every]
    assert [[row[c] for c in every] for row in two] == [[row[c] for c in every] for row in plain]
    assert forecasts["plain"] == forecasts["two"]
    assert all(name in forecasts["two"] for name in router.llms)


def test_cost_aware_scoring_names_the_llms_it_leaves_out(
    router: Router, bank: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "scores.csv"
    assert main(["score", str(bank), "-o", str(out), "--cost-weight", "0.0002", "--threads", "1", "-q"]) == 0
    unpriced = [name for name in router.llms if name not in router.costs]
    assert unpriced
    err = capsys.readouterr().err
    assert f"cost-aware routing among the {len(router.llms) - len(unpriced)} LLMs with a cost" in err
    assert all(name in err for name in unpriced)
    assert not {row["llm_1"] for row in read_csv_rows(out)} & set(unpriced)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--llms", "no-such-llm"], "unknown LLM 'no-such-llm'"),
        (["--llms", "Yi-34B,Yi-34B"], "llms names an LLM twice"),
        (["--llms", "Yi-34B", "--k", "2"], "k must be between 1 and the 1 LLM routed among (the given LLMs), got 2"),
        (["--cost-weight", "0.1", "--k", "30"], "k must be between 1 and the 27 LLMs routed among (the priced LLMs)"),
        (["--cost-weight", "0.1", "--min-probability", "0.5"], "use either cost_weight"),
        (["--cost-weight", "0.1", "--llms", "gpt-4o-2024-05-13"], "missing: gpt-4o-2024-05-13"),
        # Refused by the first chunk's scoring before: after a row was read (on Ray, once the workers ran).
        (["--cost-weight", "1e308"], "cost_weight 1e+308 times the costs overflows"),
    ],
)
def test_a_bad_rule_is_refused_before_the_bank_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    bank = tmp_path / "bank.csv"
    bank.write_text("id,text\nq1,\n")  # its one row is bad: reading it would be the error instead
    out = tmp_path / "scores.csv"
    assert main(["score", str(bank), "-o", str(out), "--threads", "1", *flags]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_score_file_takes_the_rules_in_its_options_and_checks_them_first(router: Router, bank: Path, tmp_path: Path) -> None:
    out = tmp_path / "scores.csv"
    score_file(router, input_path=bank, output=out, options=ScoreOptions(k=2, llms=tuple(TWO)))
    assert _choices(read_csv_rows(out), 2)[0] == router.route(QUESTIONS, 2, llms=TWO).names
    with pytest.raises(JeirtError, match="llms must be a list of LLM names, not one string"):
        score_file(router, input_path=bank, output=tmp_path / "other.csv", options=ScoreOptions(llms="Yi-34B"))  # type: ignore[arg-type]
    assert not (tmp_path / "other.csv").exists()


def test_the_ray_engine_is_handed_the_rules_and_a_bad_one_is_refused_before_it_is_called(
    bank: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("ray")
    from jeirt_lite import ray_engine
    from jeirt_lite.batch import ScoreSummary

    calls: list[ScoreOptions] = []

    def fake(input_path: Path, **kwargs: object) -> ScoreSummary:
        options = kwargs["options"]
        assert isinstance(options, ScoreOptions)
        calls.append(options)
        return ScoreSummary(rows=0, skipped=0, seconds=0.0, output=None)

    monkeypatch.setattr(ray_engine, "score_file_on_ray", fake)
    out = tmp_path / "s.parquet"
    assert main(["score", str(bank), "-o", str(out), "--engine", "ray", "-q", "--llms", "Yi-34B", "--llms", "gemma-7b",
                 "--min-probability", "0.6"]) == 0
    assert (calls[0].llms, calls[0].cost_weight, calls[0].min_probability) == (("Yi-34B", "gemma-7b"), 0.0, 0.6)
    assert main(["score", str(bank), "-o", str(out), "--engine", "ray", "--llms", "nope"]) == 2
    assert "unknown LLM 'nope'" in capsys.readouterr().err
    assert len(calls) == 1


def _with_a_gap(router: Router, folder: Path) -> Path:
    """The router saved with a record that Yi-34B, renamed yi, never answered gsm and math in training."""
    training = {**thaw(router.manifest.training), "unanswered_benchmarks": {"Yi-34B": ["gsm", "math"]}}
    recorded = router._with_llms(router.llms, router.llm_vectors, training=freeze(training))
    return recorded.rename_llms({"Yi-34B": "yi"}).save(folder)


NOTE = ("note: 1 LLM routed among never answered a benchmark in training, where their P(correct) is extrapolated "
        "and can be far off: yi (gsm, math)")


def test_route_and_score_note_an_llm_routed_among_that_never_answered_a_benchmark(
    router: Router, bank: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # On block-missing data such an LLM drew 90 of 721 MATH questions it never answered (docs/guide/training-data.md).
    folder = _with_a_gap(router, tmp_path / "router")
    assert main(["route", "What is 2 + 2?", "--router", str(folder), "--threads", "1"]) == 0
    assert capsys.readouterr().err.splitlines() == [NOTE]
    assert main(["route", "What is 2 + 2?", "--router", str(folder), "--threads", "1", "--llms", "gemma-7b"]) == 0
    assert capsys.readouterr().err == ""  # not routed among: nothing to note
    assert main(["score", str(bank), "-o", str(tmp_path / "s.csv"), "--router", str(folder), "-q"]) == 0
    assert capsys.readouterr().err.splitlines() == [NOTE]
    assert main(["score", str(bank), "--router", str(folder), "--forecast", "-q"]) == 0
    assert capsys.readouterr().err == ""  # no routes written: the forecast marks it instead
    plain = router.save(tmp_path / "plain")
    assert main(["route", "What is 2 + 2?", "--router", str(plain), "--threads", "1"]) == 0
    assert capsys.readouterr().err == ""  # a router without the record


def test_the_forecast_marks_an_llm_that_never_answered_a_benchmark_in_training(
    router: Router, bank: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A router trained on block-missing data records such LLMs (train: training.unanswered_benchmarks); its forecast
    # for them is partly an extrapolation (zeroeval: a GSM8K-only LLM forecast 0.85 on MATH level 5, really 0.51).
    # Renamed, the record follows the LLM.
    folder = _with_a_gap(router, tmp_path / "router")
    assert main(["score", str(bank), "--router", str(folder), "--forecast", "--threads", "1", "-q"]) == 0
    lines = capsys.readouterr().out.splitlines()
    marked = [line for line in lines if "extrapolated" in line]
    assert len(marked) == 1 and marked[0].split()[0] == "yi" and "gsm, math" in marked[0]
    assert len(lines) == 1 + len(router.llms)
    assert main(["info", "--router", str(folder)]) == 0  # info names it in its list of LLMs, beside its cost
    listed = capsys.readouterr().out
    assert f"LLMs ({len(router.llms)}; cost stored for 27; 1 without training answers on some benchmark):" in listed
    assert f"\n  {'yi':<{max(map(len, router.llms))}}  cost 34  no training answers on gsm, math\n" in listed
