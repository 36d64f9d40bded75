"""`--costs FILE` on route, score and serve: the costs of a table instead of those the router stores, for this run;
every cost rule then reads them, an LLM the table leaves out has no cost, and a table naming an LLM the router
does not hold is refused before a question is read. `score --engine ray` with it: tests/test_ray.py."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from bank_files import read_csv_rows, write_csv_bank
from jeirt_lite import Router
from jeirt_lite.cli import main
from service_process import running_service

QUESTIONS = ["What is the derivative of x**3 at x = 2?", "Which court hears a contract dispute?", "Who wrote Hamlet?",
             "Which enzyme unwinds DNA during replication?"]
# API prices, where the shipped router stores parameter counts (and none for the API models).
PRICES = {"gpt-4o-2024-05-13": 5.0, "gemini-3.1-pro": 2.0, "Yi-34B": 0.5, "gemma-7b": 0.1}


@pytest.fixture(scope="module")
def router() -> Router:
    return Router.load(threads=1)


@pytest.fixture
def prices(tmp_path: Path) -> Path:
    path = tmp_path / "prices.csv"
    path.write_text("model,cost\n" + "".join(f"{name},{cost}\n" for name, cost in PRICES.items()))
    return path


def test_route_ranks_by_the_given_costs(
    router: Router, prices: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["route", *QUESTIONS, "--costs", str(prices), "--cost-weight", "0.05", "--k", "2", "--json",
                 "--threads", "1"]) == 0
    captured = capsys.readouterr()
    answers = [json.loads(line) for line in captured.out.splitlines()]
    expected = router.route(QUESTIONS, 2, costs=PRICES, cost_weight=0.05)
    assert [[step["llm"] for step in answer["route"]] for answer in answers] == expected.names
    assert {name for names in expected.names for name in names} <= set(PRICES)
    assert expected.names != router.route(QUESTIONS, 2, cost_weight=0.05).names  # the stored costs route elsewhere
    assert "cost-aware routing among the 4 LLMs with a cost" in captured.err
    # 28 left out: the first ten named, then how many more (a line of every name grew to 1,500 characters); those
    # the table omits, which `jeirt-lite info` (the router's own costs) would not show.
    unpriced = [name for name in router.llms if name not in PRICES]
    assert f"left out (not in {prices}): {', '.join(unpriced[:10])} and 18 more\n" in captured.err


def test_score_ranks_by_the_given_costs(router: Router, prices: Path, tmp_path: Path) -> None:
    out = tmp_path / "scores.csv"
    bank = write_csv_bank(tmp_path / "bank.csv", QUESTIONS)
    assert main(["score", str(bank), "-o", str(out), "--costs", str(prices), "--min-probability", "0.8",
                 "--threads", "1", "-q"]) == 0
    rows = read_csv_rows(out)
    expected = router.route(QUESTIONS, 1, costs=PRICES, min_probability=0.8)
    assert [row["llm_1"] for row in rows] == [names[0] for names in expected.names]
    assert np.allclose([float(row["p_1"]) for row in rows], expected.probabilities[:, 0], rtol=0, atol=1e-6)


@pytest.mark.parametrize("command", [["route", "What is 7 * 8?"], ["score", "BANK", "-o", "OUT"]])
def test_a_table_naming_an_llm_the_router_does_not_hold_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    costs = tmp_path / "costs.csv"
    costs.write_text("llm,cost\nYi-34B,1\nYi-43B,2\n")
    bank = write_csv_bank(tmp_path / "bank.csv", QUESTIONS)
    words = [str(bank) if w == "BANK" else str(tmp_path / "out.csv") if w == "OUT" else w for w in command]
    assert main([*words, "--costs", str(costs), "--threads", "1"]) == 1
    assert f"{costs}: costs names unknown LLM 'Yi-43B'" in capsys.readouterr().err
    assert not (tmp_path / "out.csv").exists()


def test_score_refuses_to_write_its_scores_over_the_table_of_costs(
    prices: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The table is an input, as the bank is: `-o prices.csv --costs prices.csv` replaced the prices with the scores.
    bank = write_csv_bank(tmp_path / "bank.csv", QUESTIONS)
    before = prices.read_bytes()
    assert main(["score", str(bank), "-o", str(prices), "--costs", str(prices), "--threads", "1", "-q"]) == 1
    assert f"{prices}: is also the input {prices}; write the output to another path" in capsys.readouterr().err
    assert prices.read_bytes() == before


def test_score_on_ray_refuses_to_write_over_the_table_before_ray_is_imported(
    prices: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Ray takes the option too (tests/test_ray.py): the table is an input there as well.
    import sys

    monkeypatch.setitem(sys.modules, "jeirt_lite.ray_engine", None)  # importing it would fail
    bank = tmp_path / "bank.parquet"
    before = prices.read_bytes()
    assert main(["score", str(bank), "-o", str(prices), "--engine", "ray", "--costs", str(prices)]) == 1
    assert f"{prices}: is also the input {prices}; write the output to another path" in capsys.readouterr().err
    assert prices.read_bytes() == before


def test_serve_answers_with_the_given_costs(router: Router, prices: Path) -> None:
    pytest.importorskip("aiohttp")
    with running_service("--threads", "1", "--costs", str(prices)) as service:
        with urllib.request.urlopen(service.url + "/v1/info", timeout=30) as response:
            assert json.loads(response.read())["costs"] == PRICES
        body = json.dumps({"texts": QUESTIONS, "k": 2, "cost_weight": 0.05}).encode()
        request = urllib.request.Request(service.url + "/v1/route", data=body, method="POST")
        with urllib.request.urlopen(request, timeout=60) as response:
            answer = json.loads(response.read())
    expected = router.route(QUESTIONS, 2, costs=PRICES, cost_weight=0.05)
    assert [[step["llm"] for step in result["route"]] for result in answer["results"]] == expected.names


@pytest.mark.parametrize("command", ["route", "score"])
def test_the_help_of_the_cost_rule_names_the_option_that_replaces_the_stored_costs(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # It said the rule weighs 'the costs stored in the router', which --costs replaces for the run.
    assert main([command, "--help"]) == 0
    assert "costs stored in the router (or those of --costs FILE)" in " ".join(capsys.readouterr().out.split())
