"""Per-LLM costs read from a table (`train`, `route`, `score` and `serve --costs`): an LLM column and a cost column,
in every table format, and each bad row refused by its number."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jeirt_lite._errors import JeirtError
from jeirt_lite._io.costs import read_costs


def test_a_table_of_costs_is_read_from_each_format(tmp_path: Path) -> None:
    csv_file = tmp_path / "costs.csv"
    csv_file.write_text("model,cost,note\nYi-34B,34,open\n gemma-7b , 7.5,\nPhi-3-mini-4k-instruct,0,\n")
    expected = {"Yi-34B": 34.0, "gemma-7b": 7.5, "Phi-3-mini-4k-instruct": 0.0}
    assert read_costs(csv_file) == expected
    jsonl = tmp_path / "costs.jsonl"
    jsonl.write_text("".join(json.dumps({"llm": name, "cost": cost}) + "\n" for name, cost in expected.items()))
    assert read_costs(jsonl) == expected
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    parquet = tmp_path / "costs.parquet"
    pq.write_table(pa.table({"llm_name": list(expected), "cost": list(expected.values())}), parquet)
    assert read_costs(parquet) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name,cost\nYi-34B,34\n", "a table of costs needs an LLM column (one of llm, model, model_name, llm_name) "
                                   "and a 'cost' column (columns: name, cost)"),
        ("llm,price\nYi-34B,34\n", "and a 'cost' column (columns: llm, price)"),
        # The space after a comma, or a capital, made a column the list of columns did not tell apart.
        ("llm, cost\nYi-34B,34\n", "(columns: llm,  cost; ' cost' differs from those names only in case or spaces)"),
        ("Model,Cost\nYi-34B,34\n", "(columns: Model, Cost; 'Model', 'Cost' differ from those names only in case "),
        ("llm,cost\nYi-34B,-1\n", "data row 1: the cost of 'Yi-34B' must be a finite number >= 0, got '-1'"),
        ("llm,cost\nYi-34B,34\ngemma-7b,nan\n", "data row 2: the cost of 'gemma-7b' must be a finite number >= 0"),
        ("llm,cost\nYi-34B,cheap\n", "got 'cheap'"),
        ("llm,cost\nYi-34B,\n", "data row 1: the cost of 'Yi-34B' must be a finite number >= 0, got ''"),
        ("llm,cost\n,3\n", "data row 1 has no LLM name in column 'llm'"),
        ("llm,cost\nYi-34B,3\ngemma-7b,7\nYi-34B,4\n", "data row 3: 'Yi-34B' has a cost already (data row 1)"),
        ("llm,cost\n", "holds no costs"),
    ],
)
def test_a_bad_table_of_costs_is_refused_naming_its_row(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "costs.csv"
    path.write_text(text)
    with pytest.raises(JeirtError, match="costs.csv: ") as error:
        read_costs(path)
    assert message in str(error.value)


@pytest.mark.parametrize("value", [True, [3], {"a": 1}, float("inf")])
def test_a_cost_of_another_type_is_refused(tmp_path: Path, value: object) -> None:
    path = tmp_path / "costs.jsonl"
    path.write_text(json.dumps({"llm": "Yi-34B", "cost": value}) + "\n")
    with pytest.raises(JeirtError, match="the cost of 'Yi-34B' must be a finite number >= 0"):
        read_costs(path)


def test_a_jsonl_integer_beyond_a_float_s_range_is_a_bad_cost_not_a_crash(tmp_path: Path) -> None:
    # json reads 1 followed by 400 zeros as a Python int, which float() refuses with an OverflowError (a traceback).
    path = tmp_path / "costs.jsonl"
    path.write_text('{"llm": "Yi-34B", "cost": 1' + "0" * 400 + "}\n")
    with pytest.raises(JeirtError, match="data row 1: the cost of 'Yi-34B' must be a finite number >= 0, got 1000"):
        read_costs(path)


def test_a_cost_of_minus_zero_is_read_as_zero(tmp_path: Path) -> None:
    import math

    path = tmp_path / "costs.csv"
    path.write_text("llm,cost\nYi-34B,-0\ngemma-7b,-0.0\n")
    costs = read_costs(path)
    assert costs == {"Yi-34B": 0.0, "gemma-7b": 0.0}
    assert all(math.copysign(1.0, cost) == 1.0 for cost in costs.values())  # not -0.0, which info shows as 'cost -0'


def test_a_parquet_decimal_cost_column_is_read(tmp_path: Path) -> None:
    # Prices exported from a database often come as DECIMAL: they were refused as 'must be a finite number >= 0,
    # got Decimal('3.50')'.
    from decimal import Decimal

    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path = tmp_path / "costs.parquet"
    prices = [Decimal("3.50"), Decimal("0.25")]
    pq.write_table(pa.table({"llm": ["Yi-34B", "gemma-7b"], "cost": pa.array(prices, pa.decimal128(10, 2))}), path)
    assert read_costs(path) == {"Yi-34B": 3.5, "gemma-7b": 0.25}
    pq.write_table(pa.table({"llm": ["Yi-34B"], "cost": pa.array([Decimal("-1.00")], pa.decimal128(10, 2))}), path)
    with pytest.raises(JeirtError, match="the cost of 'Yi-34B' must be a finite number >= 0, got Decimal"):
        read_costs(path)


def test_a_long_bad_value_is_shown_cut(tmp_path: Path) -> None:
    # A cell of 100,000 characters was repeated whole in the error line.
    path = tmp_path / "costs.csv"
    path.write_text("llm,cost\nYi-34B," + "9" * 50 + "x" * 100_000 + "\n")
    with pytest.raises(JeirtError) as error:
        read_costs(path)
    message = str(error.value)
    assert len(message) < len(str(path)) + 200
    assert message.endswith(f"got '{'9' * 39}... (100052 characters)")
