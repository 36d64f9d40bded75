"""What the docs list is what the code accepts: the training table's column names and label words
(docs/guide/training-data.md against the training library's loader), one README row per command of the CLI, and every
public call of the Python API named on its page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from jeirt_lite._io.vocabulary import EMPTY_LABELS, FALSE_LABELS, TRUE_LABELS
from jeirt_lite.cli import COMMANDS

REPO = Path(__file__).resolve().parent.parent
TRAINING_DATA_PAGE = REPO / "docs" / "guide" / "training-data.md"


def _table_rows(page: Path, heading: str) -> dict[str, list[str]]:
    """The first table under `heading`: first cell -> the `code` names of the second cell, in order."""
    text = page.read_text(encoding="utf-8")
    section = text.split(heading, 1)[1]
    rows: dict[str, list[str]] = {}
    for line in section.splitlines():
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if cells[0] in ("role", "file") or set(cells[0]) <= {"-", ":"}:
            continue
        rows[cells[0]] = re.findall(r"`([^`]+)`", cells[1])
    return rows


def test_training_data_page_lists_every_accepted_column_name_in_order() -> None:
    data = pytest.importorskip("jeirt_lite_training.data")  # the train extra (pandas)
    rows = _table_rows(TRAINING_DATA_PAGE, "## Accepted column names")
    assert rows["question id"] == list(data.DEFAULT_QUESTION_COLUMNS)
    assert rows["question text"] == list(data.DEFAULT_TEXT_COLUMNS)
    assert rows["LLM name (long)"] == list(data.DEFAULT_LLM_COLUMNS)
    assert rows["answer (long)"] == list(data.DEFAULT_CORRECT_COLUMNS)
    assert rows["subject (optional)"] == list(data.DEFAULT_SUBJECT_COLUMNS)
    assert rows["benchmark (optional)"] == list(data.DEFAULT_BENCHMARK_COLUMNS)


def test_training_data_page_lists_the_label_words() -> None:
    text = TRAINING_DATA_PAGE.read_text(encoding="utf-8")
    labels = text.split("## Answers", 1)[1].split("\n\n", 2)[1]  # the section's first paragraph
    words = {word.lower() for word in re.findall(r"`([^`]*)`", labels)} | {""}  # "an empty cell" is the empty word
    assert words == TRUE_LABELS | FALSE_LABELS | EMPTY_LABELS


def test_readme_has_a_row_for_every_command() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    rows = set(re.findall(r"^\| `jeirt-lite ([a-z-]+)", readme, re.MULTILINE))
    assert rows == set(COMMANDS), f"README command table {sorted(rows)} against the CLI's {sorted(COMMANDS)}"


def test_the_python_api_page_names_every_public_call() -> None:
    from jeirt_lite import EncodedQuestions, Router, RouteResult, kernels

    page = (REPO / "docs" / "guide" / "python-api.md").read_text(encoding="utf-8")
    spans = re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", page, flags=re.DOTALL))  # code named in the text
    named = set(re.findall(r"[A-Za-z_]\w*", " ".join(spans)))
    public = {name for cls in (Router, RouteResult, EncodedQuestions) for name in dir(cls) if not name.startswith("_")}
    public -= set(dir(tuple))  # EncodedQuestions is a named tuple: count and index are the tuple's
    public |= {name for name, value in vars(kernels).items()  # the kernels' own functions, not what they import
               if not name.startswith("_") and callable(value) and getattr(value, "__module__", "").startswith("jeirt")}
    assert sorted(public - named) == [], "python-api.md says it lists every public call"
