"""The question-text reader on its own (`TextReader`, `read_questions`): the row count the progress line extrapolates,
the id column a JSONL file's first row decides, labels kept in step with their texts when bad rows are skipped, and
a malformed CSV record that stops even a run that skips bad rows, the rows of one LLM in a table of several.
tests/test_batch.py and tests/test_io_hostile.py drive the same reader through `score_file`."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Optional

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from bank_files import LARGE_BANK_ROWS, write_jsonl, write_large_csv_bank
from jeirt_lite import JeirtError
from jeirt_lite._io.answers import read_answers
from jeirt_lite._io.formats import open_text_reader
from jeirt_lite._io.texts import no_rows_of, read_questions


def test_the_row_estimate_grows_from_the_share_read_and_ends_exact(tmp_path: Path) -> None:
    path = write_large_csv_bank(tmp_path / "bank.csv")
    with open_text_reader(path, chunk_size=100) as reader:
        assert reader.estimated_rows() is None  # nothing read: no share to extrapolate from
        estimates = []
        for _ in reader:
            estimate = reader.estimated_rows()
            share = reader.fraction_read()
            assert isinstance(estimate, float) and share is not None
            assert estimate == pytest.approx(reader.rows_read / share)  # rows read so far over the share of bytes
            assert reader.rows_read <= estimate < 1.05 * LARGE_BANK_ROWS  # rows differ a little in length
            estimates.append(estimate)
    assert estimates[0] < LARGE_BANK_ROWS / 2 and estimates[-1] == float(LARGE_BANK_ROWS)


def test_a_parquet_bank_gives_its_row_count_before_a_row_is_read(tmp_path: Path) -> None:
    path = tmp_path / "bank.parquet"
    pq.write_table(pa.table({"id": ["a", "b", "c"], "text": ["one?", "two?", "three?"]}), path)
    with open_text_reader(path, chunk_size=2) as reader:
        assert reader.total_rows == 3 and reader.estimated_rows() == 3.0 and reader.rows_read == 0


@pytest.mark.parametrize(("columns", "group", "refused"), [
    ({"id": pa.array([1.0, 2.0])}, None, "id column 'id' is of type double: "),  # found by its name, not named
    ({"qid": pa.array([7, 8]), "flag": pa.array([True, False])}, "flag", "group column 'flag' is of type bool: "),
    ({"subject": pa.array([[1], [2]])}, "subject", "group column 'subject' is of type list<element: int64>: "),
])
def test_a_parquet_id_or_group_column_of_a_type_no_row_can_use_is_refused_before_any_row(
    tmp_path: Path, columns: dict[str, pa.Array], group: Optional[str], refused: str
) -> None:
    # Skipping bad rows would skip every row: the column is refused whole, naming its type.
    path = tmp_path / "bank.parquet"
    pq.write_table(pa.table({"text": ["one?", "two?"], **columns}), path)
    with pytest.raises(JeirtError) as raised:
        open_text_reader(path, skip_bad=True, group_column=group)
    assert str(raised.value).startswith(f"{path}: {refused}") and "a string or an integer" in str(raised.value)
    with open_text_reader(path, read_ids=False) as reader:  # a column not read is not checked
        assert [chunk.texts for chunk in reader] == [["one?", "two?"]]


def test_a_jsonl_first_row_decides_the_id_column_for_the_whole_file(tmp_path: Path) -> None:
    # Row 1 has no id field: every row is named by its row number, and a later row that carries an id is bad (its
    # id would give way to a row number), as a later row without one is when row 1 has one.
    path = write_jsonl(tmp_path / "bank.jsonl", [{"text": "first?"}, {"text": "second?", "id": "x"}, {"text": "third?"}])
    with pytest.raises(JeirtError, match=r"bank\.jsonl: data row 2 .*has an id field 'id' where the first good row has none"):
        read_questions(open_text_reader(path, chunk_size=1))
    reader = open_text_reader(path, chunk_size=1, skip_bad=True)
    table = read_questions(reader)
    assert table.ids == [1, 3] and table.texts == ["first?", "third?"] and reader.skipped == 1
    # Row 1 has one: it is the id column, and a later row without it is bad.
    path = write_jsonl(tmp_path / "ids.jsonl", [{"text": "first?", "question_id": "q1"}, {"text": "second?"}])
    with pytest.raises(JeirtError, match=r"ids\.jsonl: data row 2 .*has no id"):
        read_questions(open_text_reader(path, chunk_size=1))


def test_a_named_id_column_missing_from_a_jsonl_first_row_is_refused(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "bank.jsonl", [{"text": "first?", "id": 1}])
    with pytest.raises(JeirtError, match=r"no id column 'key' \(columns: text, id\)"):
        read_questions(open_text_reader(path, id_column="key"))


def test_labels_stay_with_their_texts_when_bad_rows_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "answers.csv"
    path.write_text("id,text,correct\na,one?,1\nb,two?,maybe\nc,,0\nd,four?,false\ne,five?,TRUE\n")
    reader = open_text_reader(path, chunk_size=2, skip_bad=True, label_column="correct")
    table = read_questions(reader)
    assert (table.ids, table.texts, table.labels) == (["a", "d", "e"], ["one?", "four?", "five?"], [1, 0, 1])
    assert reader.skipped == 2
    with pytest.raises(JeirtError, match=r"data row 2 .*label 'maybe' is not 0/1"):
        read_questions(open_text_reader(path, label_column="correct"))


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_a_row_with_an_empty_label_is_a_missing_answer_left_out_and_counted(tmp_path: Path, suffix: str) -> None:
    # As training and the report read an empty label: no answer, never a wrong one, and never a bad row.
    rows = {"id": ["a", "b", "c", "d", "e"], "text": ["one?", "two?", "three?", "four?", "five?"],
            "correct": ["1", "", " NaN ", None, "0"]}
    path = tmp_path / f"answers{suffix}"
    if suffix == ".csv":
        path.write_text("id,text,correct\n" + "".join(f"{i},{t},{c or ''}\n" for i, t, c in zip(*rows.values())))
    elif suffix == ".jsonl":
        write_jsonl(path, [dict(zip(rows, values)) for values in zip(*rows.values())])
    else:
        pq.write_table(pa.table({**rows, "correct": [1.0, None, float("nan"), None, 0.0]}), path)
    table = read_questions(open_text_reader(path, label_column="correct"))
    assert (table.ids, table.texts, table.labels, table.unanswered) == (["a", "e"], ["one?", "five?"], [1, 0], 3)


def test_a_table_without_an_answered_row_is_refused_naming_the_empty_labels(tmp_path: Path) -> None:
    path = tmp_path / "answers.csv"
    path.write_text("text,correct\none?,\ntwo?,null\n")
    with pytest.raises(JeirtError, match=r"answers\.csv: has no rows with an answer \(2 with an empty label\)"):
        read_questions(open_text_reader(path, label_column="correct"))


def test_a_malformed_csv_record_stops_a_run_that_skips_bad_rows(tmp_path: Path) -> None:
    # The rest of the file cannot be told apart into records: skipping it would drop rows without counting them.
    path = tmp_path / "bank.csv"
    path.write_text('id,text\na,one?\nb,"two?" and more\nc,three?\n')
    reader = open_text_reader(path, skip_bad=True)
    with pytest.raises(JeirtError, match=r"bank\.csv: data row 2 \(1-based, header not counted"):
        read_questions(reader)
    assert reader.skipped == 0


def test_a_bank_with_no_good_row_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bank.csv"
    path.write_text("id,text\na,\nb,   \n")
    with pytest.raises(JeirtError, match=r"bank\.csv: has no rows"):
        read_questions(open_text_reader(path, skip_bad=True))


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_a_text_column_named_empty_is_refused_not_taken_for_unnamed(tmp_path: Path, suffix: str) -> None:
    # '' names a column (the option was given): it is not in the table, as at 75fe932, rather than the default
    # taking over and scoring the column `text` the user did not ask for.
    path = tmp_path / f"bank{suffix}"
    if suffix == ".csv":
        path.write_text("id,text\na,one?\n", encoding="utf-8")
    else:
        write_jsonl(path, [{"id": "a", "text": "one?"}])
    with pytest.raises(JeirtError, match=r"no (text column|field) ''"):
        read_questions(open_text_reader(path, text_column=""))


def test_a_jsonl_text_field_is_learned_from_the_first_object_that_has_one(tmp_path: Path) -> None:
    # Row 1 has no text at all (a bad row, not a header): the text field is the `question` of the rows after it,
    # not `text`, which would make every row bad and a run that skips bad rows score none.
    rows = [{"qid": "a"}, {"qid": "b", "question": "two?"}, {"qid": "c", "question": "three?"}]
    path = write_jsonl(tmp_path / "bank.jsonl", rows)
    reader = open_text_reader(path, chunk_size=2, skip_bad=True)
    table = read_questions(reader)
    assert (table.ids, table.texts, reader.skipped) == (["b", "c"], ["two?", "three?"], 1)
    with pytest.raises(JeirtError, match=r"data row 1 \(1-based, blank lines not counted, line 1\): "
                       r"no field 'question'"):
        read_questions(open_text_reader(path))


def test_blank_lines_before_a_jsonl_first_row_do_not_hide_its_text_field(tmp_path: Path) -> None:
    # Blank lines are not rows: however many come first, the first row's fields are read ahead, and the rows keep
    # their numbers and lines.
    path = tmp_path / "bank.jsonl"
    path.write_text("\n" * 100 + '{"qid": "a", "question": "one?"}\n\n{"qid": "b", "prompt": "two?"}\n',
                    encoding="utf-8")
    with pytest.raises(JeirtError, match=r"data row 2 \(1-based, blank lines not counted, line 103\): "
                       r"no field 'question'"):
        read_questions(open_text_reader(path, chunk_size=1))
    reader = open_text_reader(path, chunk_size=1, skip_bad=True)
    table = read_questions(reader)
    assert (table.ids, table.texts, reader.skipped) == (["a"], ["one?"], 1)


def test_a_jsonl_bank_without_any_text_field_is_refused_by_what_was_looked_for(tmp_path: Path) -> None:
    # As a CSV header without one is, even when bad rows are skipped (every row would be, and nothing scored);
    # a field named, as at 75fe932, leaves each row to say it lacks it.
    path = write_jsonl(tmp_path / "bank.jsonl", [{"qid": "a", "body": "one?"}, {"qid": "b", "body": "two?"}])
    for skip_bad in (False, True):
        with pytest.raises(JeirtError, match=r"bank\.jsonl: no text column \(looked for 'text', 'question', 'prompt'; "
                           r"columns: qid, body\)"):
            open_text_reader(path, skip_bad=skip_bad)
    with open_text_reader(path, text_column="text", skip_bad=True) as reader:
        assert list(reader) == [] and reader.skipped == 2


def test_an_llm_column_missing_from_a_header_is_refused_naming_that_column(tmp_path: Path) -> None:
    # add-llm looks for the column before it opens the reader; the reader's own check must name the column, not the
    # LLM whose rows it was to keep, and suggest the header's near miss for it.
    path = tmp_path / "answers.csv"
    path.write_text("id,text,Model\na,one?,x\n")
    with pytest.raises(JeirtError, match=r"answers\.csv: no LLM column 'model' \(columns: id, text, Model; "
                       r"did you mean 'Model'\?\)"):
        open_text_reader(path, llm_rows=("model", "x"))


@pytest.mark.parametrize(("named", "said"), [
    (None, "no text column (looked for 'text', 'question', 'prompt'; columns: id, Question, correct; did you mean "
           "'Question'?); see text_column"),
    ("body", "no text column 'body' (columns: id, Question, correct); see text_column"),
])
def test_score_and_add_llm_say_a_missing_text_column_in_the_same_words(
    tmp_path: Path, named: Optional[str], said: str
) -> None:
    # One sentence for every command, with the near miss of a name looked for.
    path = tmp_path / "answers.csv"
    path.write_text("id,Question,correct\na,one?,1\n")
    with pytest.raises(JeirtError) as by_score:
        open_text_reader(path, text_column=named)
    with pytest.raises(JeirtError) as by_add_llm:
        read_answers(path, "x", text_column=named)
    assert str(by_score.value) == str(by_add_llm.value) == f"{path}: {said}"


def test_only_the_named_llms_rows_are_kept_whatever_side_the_others_names_sort_on(tmp_path: Path) -> None:
    path = tmp_path / "answers.csv"
    path.write_text("id,text,model\n1,one?,a\n2,two?,m\n3,three?,z\n4,four?,m \n")
    reader = open_text_reader(path, llm_rows=("model", "m"))
    table = read_questions(reader)
    assert (table.ids, table.texts) == (["2", "4"], ["two?", "four?"])  # 'm ' is m, stripped as training strips it
    assert reader.other_llms == Counter({"a": 1, "z": 1}) and reader.kept_rows == 2


@pytest.mark.parametrize("count", [8, 9])
def test_the_error_of_a_table_without_the_llms_rows_names_eight_others_at_most(count: int) -> None:
    others = Counter({f"m{i}": count - i for i in range(count)})  # the most common first: m0, m1, ...
    named = ", ".join(f"'m{i}'" for i in range(8)) + (" and 1 more" if count > 8 else "")
    assert f"which names {count} other LLMs ({named}); add it" in no_rows_of(Path("all.csv"), "model", "x", others)


@pytest.mark.parametrize("before", [63, 64])
def test_a_jsonl_text_field_is_looked_for_in_the_first_64_rows(tmp_path: Path, before: int) -> None:
    # As docs/guide/scoring.md says: a bank whose first 64 rows hold none is refused, whatever comes after them.
    rows = [{"qid": f"q{i}", "body": "?"} for i in range(before)] + [{"qid": "last", "question": "one?"}]
    path = write_jsonl(tmp_path / "bank.jsonl", rows)
    if before == 64:
        with pytest.raises(JeirtError, match=r"no text column \(looked for 'text', 'question', 'prompt'"):
            open_text_reader(path, skip_bad=True)
        return
    reader = open_text_reader(path, skip_bad=True)
    table = read_questions(reader)
    assert (table.ids, table.texts, reader.skipped) == (["last"], ["one?"], 63)
