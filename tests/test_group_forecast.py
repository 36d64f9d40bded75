"""Expected accuracy per group of a bank's questions (`score --forecast-by`, `ScoreOptions.forecast_by`,
`Router.forecast_by`) against an oracle: the mean of `--all`'s per-row P(correct) over each group's rows."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from jeirt_lite import JeirtError, Router
from jeirt_lite._group_forecast import GroupSums
from jeirt_lite._io.vocabulary import probability_column
from jeirt_lite.batch import ScoreOptions, score_file
from jeirt_lite.cli import main
from test_batch import read_scores, write_bank

SUBJECTS = ["law", "chemistry", "computer science", "history"]


@pytest.fixture(scope="module")
def router(tiny_router_path: Path) -> Router:
    return Router.load(tiny_router_path, threads=1)


@pytest.fixture(scope="module")
def rows(real_texts: list[str]) -> list[dict[str, Any]]:
    """90 real texts, their subjects unevenly spread (law gets the most rows, history the fewest)."""
    subjects = [SUBJECTS[min(i % 7, 3)] for i in range(90)]
    return [{"id": f"q{i:03d}", "text": text, "subject": subject}
            for i, (text, subject) in enumerate(zip(real_texts[:90], subjects))]


def oracle(scores: list[dict[str, Any]], rows: list[dict[str, Any]], llms: tuple[str, ...]) -> dict[str, Any]:
    """{group: ({llm: mean p}, count)} from a scores file of every probability, joined to the bank by id."""
    subject = {row["id"]: row["subject"] for row in rows}
    members: defaultdict[str, list[dict[str, Any]]] = defaultdict(list)
    for scored in scores:
        members[subject[scored["id"]]].append(scored)
    return {group: ({name: float(np.mean([float(s[probability_column(name)]) for s in kept])) for name in llms},
                    len(kept)) for group, kept in members.items()}


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_each_group_s_forecast_is_the_mean_of_its_rows_probabilities_whatever_the_chunks(
    router: Router, rows: list[dict[str, Any]], tmp_path: Path, fmt: str
) -> None:
    bank = write_bank(tmp_path / f"bank.{fmt}", rows)
    every = tmp_path / "every.csv"
    score_file(router, input_path=bank, output=every, options=ScoreOptions(all_probabilities=True))
    expected = oracle(read_scores(every), rows, router.llms)
    results = []
    for chunk_size in (7, 32, 4096):  # chunk boundaries inside groups, and the whole bank in one chunk
        summary = score_file(router, input_path=bank, options=ScoreOptions(forecast_by="subject", chunk_size=chunk_size))
        grouped = summary.group_forecast
        assert grouped is not None and grouped.column == "subject"
        results.append(grouped)
        assert list(grouped.groups) == sorted(SUBJECTS) == list(grouped.counts)  # the documented order
        assert grouped.counts == {group: count for group, (_, count) in expected.items()}
        for group, (means, _) in expected.items():
            assert grouped.groups[group] == pytest.approx(means, rel=0, abs=1e-6), (chunk_size, group)
        assert summary.forecast == grouped.overall == pytest.approx(router.forecast([r["text"] for r in rows]), abs=1e-6)
        assert summary.rows == grouped.rows == len(rows)
    assert results[0] == results[1] == results[2]  # each row added in turn: where chunks break changes no digit


def test_router_forecast_by_groups_in_memory_questions(router: Router, rows: list[dict[str, Any]]) -> None:
    texts, subjects = [row["text"] for row in rows], [row["subject"] for row in rows]
    probabilities = router.predict_proba(texts)
    got = router.forecast_by(texts, subjects)
    assert list(got) == sorted(SUBJECTS)
    for group in SUBJECTS:
        mine = probabilities[[s == group for s in subjects]].astype(np.float64).mean(axis=0)
        assert list(got[group].values()) == pytest.approx(mine.tolist(), abs=1e-7)
    with pytest.raises(JeirtError, match="groups holds 2 values for 3 questions: give one group per question"):
        router.forecast_by(texts[:3], subjects[:2])


def test_group_values_are_read_as_text_so_a_number_and_its_digits_are_one_group(
    router: Router, rows: list[dict[str, Any]], tmp_path: Path
) -> None:
    mixed = [{**row, "subject": 3 if i % 2 else "3"} for i, row in enumerate(rows[:10])]
    summary = score_file(router, input_path=write_bank(tmp_path / "bank.jsonl", mixed),
                         options=ScoreOptions(forecast_by="subject"))
    assert summary.group_forecast is not None and summary.group_forecast.counts == {"3": 10}


def table_of(out: str) -> tuple[str, list[list[str]]]:
    """The title and the cells of `score --forecast-by`'s table, split as its doc says a program should."""
    title, *lines = out.splitlines()
    return title, [re.split(r"\s{2,}", line.strip()) for line in lines]


def test_the_command_prints_llms_best_first_with_a_column_per_group_and_its_count(
    router: Router, rows: list[dict[str, Any]], tmp_path: Path, tiny_router_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    bank = write_bank(tmp_path / "bank.csv", rows)
    args = ["score", str(bank), "--router", str(tiny_router_path), "--threads", "1", "-q", "--chunk-size", "16"]
    assert main([*args, "--forecast-by", "subject"]) == 0
    title, table = table_of(capsys.readouterr().out)
    assert title == "expected accuracy by subject on 90 questions (mean P(correct)):"
    assert table[0] == ["llm", "all", *sorted(SUBJECTS)]
    summary = score_file(router, input_path=bank, options=ScoreOptions(forecast_by="subject"))
    grouped = summary.group_forecast
    assert grouped is not None
    assert table[1] == ["n", "90", *(str(grouped.counts[g]) for g in sorted(SUBJECTS))]
    printed = {line[0]: [float(cell) for cell in line[1:]] for line in table[2:]}
    assert [line[0] for line in table[2:]] == sorted(router.llms, key=lambda name: -grouped.overall[name])
    for name, values in printed.items():
        wanted = [grouped.overall[name], *(grouped.groups[g][name] for g in sorted(SUBJECTS))]
        assert values == pytest.approx(wanted, abs=5.1e-5)  # printed to 4 decimals


def run_cli(capsys: pytest.CaptureFixture[str], *args: Any) -> tuple[int, str, str]:
    code = main(["score", *map(str, args)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_a_missing_column_names_it_and_the_columns_present_and_writes_nothing(
    rows: list[dict[str, Any]], tmp_path: Path, tiny_router_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    bank = write_bank(tmp_path / f"bank.{fmt}", rows[:5])
    output = tmp_path / "scores.csv"
    code, out, err = run_cli(capsys, bank, "--router", tiny_router_path, "-q", "-o", output, "--forecast-by", "topic")
    assert (code, out) == (1, "")
    assert f"{bank}: no group column 'topic' (columns: id, text, subject); see --forecast-by" in err
    assert sorted(path.name for path in tmp_path.iterdir()) == [bank.name]


@pytest.mark.parametrize("empty", ["", "   ", None])
def test_a_row_without_a_group_value_stops_the_run_naming_it_or_is_skipped_and_counted(
    rows: list[dict[str, Any]], tmp_path: Path, tiny_router_path: Path, capsys: pytest.CaptureFixture[str],
    empty: Any,
) -> None:
    bad = [dict(row) for row in rows[:12]]
    bad[4]["subject"] = empty
    bank = write_bank(tmp_path / "bank.jsonl", bad)
    output = tmp_path / "scores.csv"
    common = [bank, "--router", tiny_router_path, "-q", "-o", output, "--forecast-by", "subject"]
    code, out, err = run_cli(capsys, *common)
    why = "has no group value (missing or null)" if empty is None else "group value is empty"
    assert (code, out) == (1, "") and re.search(rf"bank.jsonl: data row 5 \([^)]*\): {re.escape(why)};", err)
    assert "--skip-bad" in err
    assert sorted(path.name for path in tmp_path.iterdir()) == [bank.name]
    code, out, err = run_cli(capsys, *common, "--skip-bad")
    assert code == 0 and "on 11 questions" in out and "skipped 1 bad row" in err and output.exists()


def test_a_column_of_more_than_100_values_is_refused_with_the_bound_and_writes_nothing(
    router: Router, tmp_path: Path, tiny_router_path: Path, capsys: pytest.CaptureFixture[str],
    real_texts: list[str],
) -> None:
    # The guide's number (docs/guide/scoring.md: at most 100 groups), not the module's constant, which would
    # move with a bound changed by mistake.
    many = [{"id": f"q{i}", "text": text} for i, text in enumerate(real_texts[:101])]
    bank = write_bank(tmp_path / "bank.csv", many)
    output = tmp_path / "scores.csv"
    code, out, err = run_cli(capsys, bank, "--router", tiny_router_path, "-q", "-o", output, "--forecast-by", "id")
    assert (code, out) == (1, "")
    assert "column 'id' has more than 100 distinct values" in err
    assert sorted(path.name for path in tmp_path.iterdir()) == [bank.name]
    hundred = write_bank(tmp_path / "hundred.csv", many[:100])  # the bound itself is a table
    summary = score_file(router, input_path=hundred, options=ScoreOptions(forecast_by="id"))
    assert summary.group_forecast is not None and len(summary.group_forecast.groups) == 100


def test_where_there_is_no_column_to_group_by_the_option_is_refused(
    tmp_path: Path, tiny_router_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "--vectors", "v.npy", "--router", tiny_router_path, "--forecast-by", "subject")
    assert (code, out) == (2, "") and "not question vectors" in err and len(err.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_the_library_refuses_a_grouped_forecast_of_vectors_before_reading_them(router: Router, tmp_path: Path) -> None:
    with pytest.raises(JeirtError, match="forecast by a column"):
        score_file(router, vectors_path=tmp_path / "v.npy", options=ScoreOptions(forecast_by="subject"))


def test_groups_travel_with_their_rows_through_the_background_encoding(
    rows: list[dict[str, Any]], tmp_path: Path
) -> None:
    """With more than one thread a static router's chunks are encoded in the background, in flight several at a
    time (`_pipeline`): each chunk's group values must stay with its rows."""
    pipelined = Router.load(threads=2)  # the shipped static router: the Rust fast path
    bank = write_bank(tmp_path / "bank.csv", rows)
    summary = score_file(pipelined, input_path=bank, options=ScoreOptions(forecast_by="subject", chunk_size=8))
    assert summary.group_forecast is not None
    expected = Router.load(threads=1).forecast_by([row["text"] for row in rows], [row["subject"] for row in rows])
    assert summary.group_forecast.groups.keys() == expected.keys()
    for group, means in expected.items():
        assert summary.group_forecast.groups[group] == pytest.approx(means, abs=1e-6)


@pytest.mark.parametrize(("groups", "problem"), [
    ("ab", "groups must be a list of one group per question, not a str"),  # not one group per character
    (["law", None], r"groups\[1\]: has no group value"),
    (["law", " "], r"groups\[1\]: group value is empty"),
    (["law", 1.5], r"groups\[1\]: group value '1.5' is a float"),
])
def test_router_forecast_by_refuses_groups_a_bank_s_column_would_refuse(
    router: Router, groups: object, problem: str
) -> None:
    with pytest.raises(JeirtError, match=problem):
        router.forecast_by(["What is 2 + 2?", "Who wrote Hamlet?"], groups)  # type: ignore[arg-type]


def test_router_forecast_by_takes_the_groups_as_a_column_of_numpy_pandas_or_arrow_as_the_texts(
    router: Router,
) -> None:
    pandas = pytest.importorskip("pandas")
    pyarrow = pytest.importorskip("pyarrow")
    texts = ["What is 2 + 2?", "Who wrote Hamlet?", "What is 3 * 7?"]
    wanted = router.forecast_by(texts, ["3", "law", "3"])
    for groups in (np.array(["3", "law", "3"]), pandas.Series([3, "law", 3]), pyarrow.array(["3", "law", "3"]),
                   [np.int64(3), "law", 3]):
        assert router.forecast_by(pandas.Series(texts), groups) == wanted, type(groups).__name__
    with pytest.raises(JeirtError, match=r"not a DataFrame \(pass its group column\)"):
        router.forecast_by(texts, pandas.DataFrame({"subject": ["3", "law", "3"]}))


# Row 1 is also the row whose fields name the text column (read ahead): the group field is looked for past it.
@pytest.mark.parametrize("lacking", [{0}, {1, 2, 3, 4, 5}], ids=["first row", "every row but the first"])
def test_a_jsonl_bank_whose_first_rows_leave_the_field_out_has_bad_rows_not_a_missing_column(
    rows: list[dict[str, Any]], tmp_path: Path, tiny_router_path: Path, capsys: pytest.CaptureFixture[str],
    lacking: set[int],
) -> None:
    bank = tmp_path / "bank.jsonl"
    lines = [{key: value for key, value in row.items() if key != "subject" or i not in lacking}
             for i, row in enumerate(rows[:6])]
    bank.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    common = [bank, "--router", tiny_router_path, "-q", "--forecast-by", "subject"]
    code, out, err = run_cli(capsys, *common)
    assert (code, out) == (1, "")
    first_bad = min(lacking) + 1
    assert re.search(rf"bank.jsonl: data row {first_bad} \([^)]*\): has no group value \(missing or null\);", err)
    code, out, err = run_cli(capsys, *common, "--skip-bad")
    assert code == 0 and f"on {6 - len(lacking)} question" in out and f"skipped {len(lacking)} bad row" in err


def test_a_bank_whose_every_row_is_skipped_has_no_forecast_per_group(
    router: Router, rows: list[dict[str, Any]], tmp_path: Path
) -> None:
    bank = write_bank(tmp_path / "bank.jsonl", [{**row, "subject": " "} for row in rows[:3]])
    with pytest.raises(JeirtError, match="no question was scored, so there is no forecast"):
        score_file(router, input_path=bank, options=ScoreOptions(forecast_by="subject", skip_bad=True))


@pytest.mark.parametrize(("groups", "problem"), [
    (["math", None, "law"], "groups holds 3 values for 2 questions"), ([None], "groups holds 1 value for 2 questions"),
])
def test_router_forecast_by_names_a_wrong_number_of_groups_before_any_bad_value(
    router: Router, groups: list[Any], problem: str
) -> None:
    with pytest.raises(JeirtError, match=problem):
        router.forecast_by(["What is 2 + 2?", "Who wrote Hamlet?"], groups)


@pytest.mark.parametrize(("groups", "problem"), [
    ([], "groups holds 0 values for 2 questions: give one group per question"),
    (None, "groups must be a list of one group per question, not None"),
    (["law", "law", "law"], "groups holds 3 values for 2 questions: give one group per question"),
])
def test_router_forecast_by_names_groups_missing_or_of_another_length_before_encoding(
    router: Router, groups: Any, problem: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Texts are counted before the encoding, the costly part, so the groups' fault is named without it."""
    monkeypatch.setattr(router, "encode", lambda *args, **kwargs: pytest.fail("encoded before the groups' check"))
    with pytest.raises(JeirtError) as refused:
        router.forecast_by(iter(["What is 2 + 2?", "Who wrote Hamlet?"]), groups)  # type: ignore[arg-type]
    assert str(refused.value) == problem


def test_router_forecast_by_without_groups_is_python_s_missing_argument(router: Router) -> None:
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'groups'"):
        router.forecast_by(["What is 2 + 2?"])  # type: ignore[call-arg]


@pytest.mark.parametrize("groups", [[], ["law"], None], ids=["no groups", "a group", "None"])
def test_router_forecast_by_refuses_no_questions_as_router_forecast_does(router: Router, groups: Any) -> None:
    with pytest.raises(JeirtError) as whole:
        router.forecast([])
    empty: list[str] = []
    for questions in (empty, iter(empty)):
        with pytest.raises(JeirtError) as grouped:
            router.forecast_by(questions, groups)  # type: ignore[arg-type]
        assert str(grouped.value) == str(whole.value) == "cannot forecast on an empty question bank"


def test_router_forecast_by_reads_texts_given_as_an_iterator(router: Router) -> None:
    texts, groups = ["What is 2 + 2?", "Who wrote Hamlet?", "What is 3 * 7?"], ["math", "literature", "math"]
    assert router.forecast_by(iter(texts), groups) == router.forecast_by(texts, groups)  # type: ignore[arg-type]


def test_router_forecast_by_takes_any_number_of_questions_and_of_groups(router: Router) -> None:
    # Counts past CPython's cached small integers, and more groups than the command's table takes: in memory
    # the caller's groups have no bound (docs/guide/scoring.md).
    many = [f"What is {i} + {i}?" for i in range(300)]
    got = router.forecast_by(many, [f"g{i % 150:03d}" for i in range(300)])
    assert list(got) == [f"g{i:03d}" for i in range(150)]


@pytest.mark.parametrize(("groups", "questions", "problem"), [
    (3, 2, "3 group values for 2 questions"), (2, 1, "2 group values for 1 question"),
    (1, 2, "1 group value for 2 questions"),
])
def test_the_sums_refuse_a_chunk_whose_group_values_and_rows_differ_in_number(
    groups: int, questions: int, problem: str
) -> None:
    """Every caller hands a chunk's groups with its rows; a mismatch is a fault to name, never a sum that
    NumPy broadcasts one row's probabilities into."""
    sums = GroupSums(["a", "b"], "subject")
    with pytest.raises(JeirtError, match=problem):
        sums.add(["law"] * groups, np.full((questions, 2), 0.5))
    sums.add(["law"] * 300, np.full((300, 2), 0.25))  # counts past CPython's cached small integers
    assert sums.result().counts == {"law": 300}
