"""`jeirt-lite score --engine ray` against `jeirt-lite score`, differentially: the same bank and options through both
engines, and their Parquet files compared column by column (names, order, types, values, row order), with the
printed forecast and the summary's counts. The shipped router encodes in Rust, row by row, so the values agree bit
for bit whatever the threads and batches (docs/guide/guarantees.md). Each case runs both engines on one bank whose
texts are real questions and Unicode edge cases, with bad rows; the Ray runtime is shared by the module.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_ray import needs_ray, ray_runtime, score  # noqa: F401 - ray_runtime: the module's runtime, as test_ray's
from unicode_texts import EDGE_TEXTS

# LLMs of the shipped router that have a stored cost, for the rules that weigh costs.
PRICED = ["Yi-34B", "Yi-6B", "Meta-Llama-3-70B", "Mistral-7B-v0.1", "Llama-2-13b-hf"]
BAD = {3: None, 11: "   ", 20: "", 30: "a NUL \x00 in a text"}  # row index -> a text `--skip-bad` skips


@pytest.fixture(scope="module")
def texts(real_texts: list[str]) -> list[Any]:
    """Real questions and Unicode edge cases (the one with a NUL among the bad rows), some rows bad."""
    every: list[Any] = [*real_texts[:30], *(text for text in EDGE_TEXTS if "\x00" not in text)]
    for row, text in BAD.items():
        every[row] = text
    return every


def bank_of(path: Path, texts: list[Any], ids: str) -> Path:
    """A Parquet bank of `texts` in row groups of 16 (more than one read block), with ids of the kind `ids`."""
    columns: dict[str, Any] = {"text": pa.array(texts, pa.string())}
    if ids == "strings":
        columns = {"id": [f"q{i:03d}" for i in range(len(texts))], **columns}
    elif ids == "integers":
        columns = {"qid": pa.array([1000 + 7 * i for i in range(len(texts))], pa.int64()), **columns}
    pq.write_table(pa.table(columns), path, row_group_size=16)
    return path


def counts(err: str) -> tuple[str, ...]:
    """The summary's counts: questions scored and bad rows skipped."""
    return tuple(re.findall(r"(?:scored \d+ questions?|skipped \d+ bad rows?)", err))


def forecast_of(out: str) -> tuple[str, dict[str, float]]:
    """The printed forecast: its heading and each LLM's number."""
    heading, *lines = out.splitlines()
    return heading, {name: float(value) for name, value in (line.split() for line in lines)}


def assert_same_scores(local: Path, distributed: Path) -> None:
    expected, got = pq.read_table(local), pq.read_table(distributed)
    assert got.schema == expected.schema  # column names, their order and their types
    for name in expected.column_names:  # values in row order (dictionary or chunk layouts aside)
        assert got.column(name).to_pylist() == expected.column(name).to_pylist(), name


CASES = {
    "k3-all-forecast-llms-min-probability-string-ids": (
        "strings", ["--k", "3", "--all", "--forecast", "--llms", ",".join(PRICED), "--min-probability", "0.6"]),
    "k1-costs-file-cost-weight-forecast-integer-ids": (
        "integers", ["--k", "1", "--forecast", "--costs", "PRICES", "--cost-weight", "0.01"]),
    "k2-cost-weight-row-numbers": ("none", ["--k", "2", "--cost-weight", "0.001"]),
}


@needs_ray
@pytest.mark.usefixtures("ray_runtime")
@pytest.mark.parametrize("case", list(CASES))
def test_both_engines_write_the_same_parquet_print_the_same_forecast_and_skip_the_same_rows(
    capsys: pytest.CaptureFixture[str], texts: list[Any], tmp_path: Path, case: str
) -> None:
    ids, flags = CASES[case]
    prices = tmp_path / "prices.csv"
    prices.write_text("llm,cost\n" + "".join(f"{name},{1 + (3 * i) % 5}\n" for i, name in enumerate(PRICED)))
    flags = [str(prices) if flag == "PRICES" else flag for flag in flags]
    bank = bank_of(tmp_path / "bank.parquet", texts, ids)
    local, distributed = tmp_path / "local.parquet", tmp_path / "ray.parquet"
    code, local_out, local_err = score(capsys, bank, "--skip-bad", *flags, "-o", local)
    assert code == 0, local_err
    code, ray_out, ray_err = score(capsys, bank, "--skip-bad", *flags, "-o", distributed, "--engine", "ray",
                                   "--chunk-size", "8")
    assert code == 0, ray_err
    assert_same_scores(local, distributed)
    assert counts(ray_err) == counts(local_err) == (f"scored {len(texts) - len(BAD)} questions",
                                                    f"skipped {len(BAD)} bad rows")
    kept = [row for row in range(len(texts)) if row not in BAD]
    if ids == "none":  # the data row numbers, 1-based, of the rows kept
        assert pq.read_table(distributed).column("id").to_pylist() == [row + 1 for row in kept]
    if "--forecast" in flags:
        heading, numbers = forecast_of(ray_out)
        local_heading, local_numbers = forecast_of(local_out)
        assert heading == local_heading and set(numbers) == set(local_numbers)  # listed by value: ties may swap
        for name, value in local_numbers.items():  # float64 sums of float32 p against the kernel's means
            assert numbers[name] == pytest.approx(value, abs=1.5e-6), name
    else:
        assert ray_out == local_out == ""


def errors_of_both_engines(capsys: pytest.CaptureFixture[str], tmp_path: Path, bank: Path, *flags: str) -> list[str]:
    """The error line of the local engine's run, then the Ray engine's, each failing (exit 1) with no output."""
    errors = []
    for engine in ("local", "ray"):
        output = tmp_path / f"{engine}.parquet"
        code, out, err = score(capsys, bank, "-q", *flags, "-o", output, "--engine", engine)
        assert (code, out) == (1, "") and not output.exists()
        errors.append(next(line for line in err.splitlines() if line.startswith("jeirt-lite: error:")))
    return errors


@needs_ray
@pytest.mark.usefixtures("ray_runtime")
def test_without_skip_bad_both_engines_stop_at_the_first_bad_row_of_a_bank_without_ids(
    capsys: pytest.CaptureFixture[str], texts: list[Any], tmp_path: Path
) -> None:
    bank = bank_of(tmp_path / "bank.parquet", texts, "none")
    first_bad = min(BAD) + 1
    local_error, ray_error = errors_of_both_engines(capsys, tmp_path, bank)
    assert local_error == f"jeirt-lite: error: {bank}: data row {first_bad} (1-based): has no text (missing or null)" \
        "; fix the row or pass --skip-bad to skip such rows"
    assert ray_error == local_error.replace(f"{bank}: ", "")  # the same row, named by its number


# -- the forecast per group (--forecast-by) -----------------------------------------------------------------------

# row index -> a group value `--skip-bad` skips, on rows whose text is good (the first one before any bad text)
BAD_GROUPS = {1: None, 14: "  ", 25: ""}
SUBJECTS = ["law", "math", "computer science", "biology", "10"]


def grouped_bank(path: Path, texts: list[Any], kind: str) -> Path:
    """`bank_of`'s bank without ids, with a `subject` column: strings (some bad), or integers (some null)."""
    bank_of(path, texts, "none")
    if kind == "strings":
        subjects = pa.array([BAD_GROUPS.get(row, SUBJECTS[row % len(SUBJECTS)]) for row in range(len(texts))])
    else:  # an integer column: its values read as their digits, as one machine reads them
        subjects = pa.array([None if row in BAD_GROUPS else 3 + row % 4 for row in range(len(texts))], pa.int64())
    pq.write_table(pq.read_table(path).append_column("subject", subjects), path, row_group_size=16)
    return path


def table_of(out: str) -> tuple[str, list[list[str]]]:
    """The printed table: its heading, and each line's cells (split on two spaces or more)."""
    heading, *lines = out.splitlines()
    return heading, [re.split(r" {2,}", line.strip()) for line in lines]


@needs_ray
@pytest.mark.usefixtures("ray_runtime")
@pytest.mark.parametrize("kind", ["strings", "integers"])
def test_both_engines_forecast_the_same_groups_with_the_same_counts_and_skip_the_same_bad_group_values(
    capsys: pytest.CaptureFixture[str], texts: list[Any], tmp_path: Path, kind: str
) -> None:
    bank = grouped_bank(tmp_path / "bank.parquet", texts, kind)
    local, distributed = tmp_path / "local.parquet", tmp_path / "ray.parquet"
    flags = ["--skip-bad", "--forecast-by", "subject", "--k", "2"]
    code, local_out, local_err = score(capsys, bank, *flags, "-o", local)
    assert code == 0, local_err
    code, ray_out, ray_err = score(capsys, bank, *flags, "-o", distributed, "--engine", "ray", "--chunk-size", "8")
    assert code == 0, ray_err
    assert_same_scores(local, distributed)  # the group column travels with the rows, never into the output
    bad = len(set(BAD) | set(BAD_GROUPS))
    assert counts(ray_err) == counts(local_err) == (f"scored {len(texts) - bad} questions", f"skipped {bad} bad rows")
    (heading, lines), (local_heading, local_lines) = table_of(ray_out), table_of(local_out)
    scored = len(texts) - bad
    assert heading == local_heading == f"expected accuracy by subject on {scored} questions (mean P(correct)):"
    assert lines[:2] == local_lines[:2]  # the groups in the same order, each with the same count
    if kind == "integers":
        assert lines[0] == ["llm", "all", "3", "4", "5", "6"]
    # LLMs listed by value (ties may swap); each cell printed to 4 decimals from sums that agree to 1.5e-6
    local_cells = {cells[0]: cells[1:] for cells in local_lines[2:]}
    assert {cells[0] for cells in lines[2:]} == set(local_cells)
    for name, *cells in lines[2:]:
        assert [float(cell) for cell in cells] == pytest.approx([float(cell) for cell in local_cells[name]], abs=1e-4)


@needs_ray
@pytest.mark.usefixtures("ray_runtime")
def test_both_engines_return_the_same_forecast_per_group_in_their_summaries(
    texts: list[Any], tmp_path: Path
) -> None:
    from jeirt_lite import Router
    from jeirt_lite.batch import ScoreOptions, score_file
    from jeirt_lite.ray_engine import score_file_on_ray

    bank = grouped_bank(tmp_path / "bank.parquet", texts, "strings")
    options = ScoreOptions(forecast_by="subject", skip_bad=True, chunk_size=8)
    local = score_file(Router.load(), input_path=bank, options=options).group_forecast
    distributed = score_file_on_ray(bank, options=options, quiet=True).group_forecast
    assert local is not None and distributed is not None
    assert (distributed.column, distributed.counts) == (local.column, local.counts)
    assert list(distributed.groups) == list(local.groups) == sorted(set(SUBJECTS))
    for group, means in local.groups.items():  # float64 sums of the same float32 p, batched differently
        assert distributed.groups[group] == pytest.approx(means, abs=1.5e-6), group
    assert distributed.overall == pytest.approx(local.overall, abs=1.5e-6)


@needs_ray
@pytest.mark.usefixtures("ray_runtime")
def test_without_skip_bad_both_engines_stop_at_the_first_bad_group_value_and_refuse_a_missing_column_alike(
    capsys: pytest.CaptureFixture[str], texts: list[Any], tmp_path: Path
) -> None:
    bank = grouped_bank(tmp_path / "bank.parquet", texts, "strings")
    for column, first_line in (
        ("subject", f"jeirt-lite: error: {bank}: data row {min(BAD_GROUPS) + 1} (1-based): has no group value "
                    "(missing or null); fix the row or pass --skip-bad to skip such rows"),
        ("topic", f"jeirt-lite: error: {bank}: no group column 'topic' (columns: text, subject); see --forecast-by"),
    ):
        local_error, ray_error = errors_of_both_engines(capsys, tmp_path, bank, "--forecast-by", column)
        assert local_error == first_line
        # The workers name a bad row by its number alone; a missing column is refused as one machine words it.
        assert ray_error == (local_error.replace(f"{bank}: ", "") if column == "subject" else local_error)


# a column's name and its values for row i, of a type no row can take its id or group value from
UNUSABLE_COLUMNS = {
    "bool-groups": ("subject", lambda row: row % 2 == 0),
    "float-groups": ("subject", lambda row: float(row % 4)),
    "list-groups": ("subject", lambda row: [row]),
    "float-ids": ("id", float),
}


@needs_ray
@pytest.mark.usefixtures("ray_runtime")
@pytest.mark.parametrize("case", list(UNUSABLE_COLUMNS))
def test_both_engines_refuse_an_id_or_group_column_no_row_can_use_before_any_row_alike(
    capsys: pytest.CaptureFixture[str], texts: list[Any], tmp_path: Path, case: str
) -> None:
    # With --skip-bad, each row of it would be skipped: the column is refused whole, from the file's footer.
    column, value_of = UNUSABLE_COLUMNS[case]
    bank = bank_of(tmp_path / "bank.parquet", texts, "none")
    values = pa.array([value_of(row) for row in range(len(texts))])
    pq.write_table(pq.read_table(bank).append_column(column, values), bank)
    flags = ["--forecast-by", column] if column == "subject" else []
    local_error, ray_error = errors_of_both_engines(capsys, tmp_path, bank, "--skip-bad", *flags)
    what, stored = ("group" if flags else "id"), pq.read_schema(bank).field(column).type  # a list's item is renamed
    assert local_error.startswith(f"jeirt-lite: error: {bank}: {what} column {column!r} is of type {stored}: ")
    assert local_error.endswith(f"; see {'--forecast-by' if flags else '--id-column'}")
    assert ray_error == local_error
