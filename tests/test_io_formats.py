"""The registry of file formats (`_io/formats.py`): the format from the suffix, the input file's checks, and the
two whole-or-chunked readers it opens, as `add-llm` and `score` read through them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from jeirt_lite import JeirtError
from jeirt_lite._io import formats


@pytest.mark.parametrize(("name", "fmt"), [("a.csv", "csv"), ("a.TSV", "tsv"), ("a.ndjson", "jsonl"),
                                           ("a.Jsonl", "jsonl"), ("a.pq", "parquet"), ("b.x.parquet", "parquet")])
def test_the_format_comes_from_the_suffix_in_any_case(name: str, fmt: str) -> None:
    assert formats.format_of(Path(name)) == fmt


def test_an_unknown_suffix_lists_the_known_ones() -> None:
    with pytest.raises(JeirtError) as raised:
        formats.format_of(Path("scores.xlsx"), "output")
    assert str(raised.value) == ("scores.xlsx: cannot tell the output format from the suffix '.xlsx' (use one of "
                                 ".csv, .jsonl, .ndjson, .parquet, .pq, .tsv)")
    assert formats.known_suffixes() == ".csv, .tsv, .jsonl, .ndjson, .parquet, .pq"
    with pytest.raises(JeirtError, match=re.escape("v.csv: question vectors must be a .npy file holding an (N, d) "
                                                   "array")):
        formats.open_vector_reader(Path("v.csv"), 4, 10, False)


def test_a_missing_file_and_a_folder_are_named(tmp_path: Path) -> None:
    with pytest.raises(JeirtError, match=re.escape(f"{tmp_path / 'no.csv'}: no such file")):
        formats.open_text_reader(tmp_path / "no.csv")
    (tmp_path / "dir.csv").mkdir()
    with pytest.raises(JeirtError, match=re.escape(f"{tmp_path / 'dir.csv'}: is a folder, not a question bank file")):
        formats.open_text_reader(tmp_path / "dir.csv")


def test_a_folder_without_a_table_suffix_is_named_as_a_folder(tmp_path: Path) -> None:
    # `score data/mmlu_pro` (the folder `train --data` takes) said "cannot tell the input format from the suffix ''".
    data = tmp_path / "mmlu_pro"
    data.mkdir()
    with pytest.raises(JeirtError) as raised:
        formats.open_text_reader(data)
    assert str(raised.value) == (f"{data}: is a folder, not a table file (use one of .csv, .jsonl, .ndjson, "
                                 ".parquet, .pq, .tsv)")


def test_a_whole_table_read_stops_at_a_bad_row_rather_than_skipping_it(tmp_path: Path) -> None:
    path = tmp_path / "answers.csv"
    path.write_text("text,correct\nwhat is 2 + 2?,1\n,0\nwho wrote Hamlet?,1\n", encoding="utf-8")
    with pytest.raises(JeirtError, match=r"answers.csv: data row 2 .*text is empty"):
        formats.read_question_table(path, label_column="correct")
    path.write_text("text,correct\nwhat is 2 + 2?,1\nwho wrote Hamlet?,0\n", encoding="utf-8")
    table = formats.read_question_table(path, label_column="correct")
    assert (table.texts, table.labels, table.ids) == (["what is 2 + 2?", "who wrote Hamlet?"], [1, 0], [1, 2])


@pytest.mark.parametrize(("error", "words"), [(PermissionError(13, "Permission denied"), "Permission denied"),
                                              (OSError("the disk went away"), "the disk went away")])
def test_a_file_the_system_will_not_open_says_why_in_its_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: OSError, words: str
) -> None:
    path = tmp_path / "bank.csv"
    path.write_text("text\nwhat is 2 + 2?\n", encoding="utf-8")

    def refuse(*args: object, **kwargs: object) -> None:
        raise error

    monkeypatch.setattr(formats, "TextReader", refuse)
    with pytest.raises(JeirtError) as raised:
        formats.open_text_reader(path)
    assert str(raised.value) == f"{path}: cannot read it ({words})"
