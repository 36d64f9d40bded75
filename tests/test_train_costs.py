"""`train --costs FILE`: a table of per-LLM costs read and checked before the training starts (its LLM names
against the data's once the data is read, before any text is embedded), stored in the router it writes."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("pandas")

from jeirt_lite.cli import main  # noqa: E402 - after the skips
from jeirt_lite_training.costs import cost_summary  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / "data" / "mmlu_pro"


def test_the_summary_names_the_llms_without_a_cost() -> None:
    assert cost_summary({"a": 1.0, "b": 2.0}, ["a", "b"]) == "  costs stored for 2 of 2 LLMs"
    assert cost_summary({"a": 1.0}, ["a", "b", "c"]) == (
        "  costs stored for 1 of 3 LLMs; 2 without one, which cost-aware routing leaves out: 'b', 'c'"
    )


def test_a_bad_table_of_costs_is_refused_before_the_data_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    costs = tmp_path / "costs.csv"
    costs.write_text("llm,cost\nYi-34B,-3\n")
    assert main(["train", "--data", str(tmp_path / "nowhere"), "--out", str(tmp_path / "r"), "--costs", str(costs)]) == 1
    assert "the cost of 'Yi-34B' must be a finite number >= 0" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_costs_of_llms_the_data_does_not_hold_are_refused_before_the_texts_are_embedded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from jeirt_lite_training import prepared
    from make_data_slice import write_slice

    def no_embedding(*args: object, **kwargs: object) -> None:
        raise AssertionError("the texts were embedded before the costs were checked")

    monkeypatch.setattr(prepared, "prepare_split", no_embedding)
    data = write_slice(DATA, tmp_path / "slice", 40, seed=2)
    costs = tmp_path / "costs.csv"
    costs.write_text("llm,cost\nYi-34B,34\nYi-43B,43\n")
    code = main(["train", "--data", str(data), "--out", str(tmp_path / "r"), "--costs", str(costs), "--threads", "1"])
    assert code == 1
    err = capsys.readouterr().err
    assert "costs.csv: costs of LLMs the data does not hold: 'Yi-43B' (its LLMs: " in err
    assert not (tmp_path / "r").exists()


def test_the_costs_file_may_not_be_inside_the_router_folder_it_would_replace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "r").mkdir()
    costs = tmp_path / "r" / "costs.csv"
    costs.write_text("llm,cost\nYi-34B,34\n")
    assert main(["train", "--data", str(DATA), "--out", str(tmp_path / "r"), "--costs", str(costs)]) == 1
    assert "costs.csv" in capsys.readouterr().err
