"""`jeirt-lite add-llm` through a subprocess, on the tiny router."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from jeirt_lite import Router

WORDS = ("derivative", "integral", "price", "mass", "protein", "circuit", "court", "market")


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "jeirt_lite", *args], capture_output=True, text=True, timeout=120, check=False
    )


def _answers(path: Path, n: int = 24, label: object = None) -> Path:
    rows = [
        {
            "id": f"q{i}",
            "text": f"what is the {WORDS[i % 8]} of a {WORDS[(i * 3) % 8]} {i}",
            "correct": label if label is not None and i == 3 else i % 2,
        }
        for i in range(n)
    ]
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        path.write_text(
            "id,text,correct\n" + "".join(f"{r['id']},{r['text']},{r['correct']}\n" for r in rows)
        )
    return path


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_add_llm_writes_a_router_with_the_new_llm(
    tiny_router_path: Path, tmp_path: Path, suffix: str
) -> None:
    answers = _answers(tmp_path / f"answers{suffix}")
    done = run_cli(
        "add-llm",
        "--router",
        str(tiny_router_path),
        "--name",
        "newbie",
        "--answers",
        str(answers),
        "-o",
        str(tmp_path / "grown"),
        "--cost",
        "3.5",
    )
    assert done.returncode == 0, done.stderr
    assert "added 'newbie' from 24 answers (12 correct)" in done.stdout
    assert "cross-validated on its answers (5 folds): AUC" in done.stdout
    assert "feature correction: off: this router's encoder exposes no features" in done.stdout
    grown = Router.load(tmp_path / "grown")
    assert grown.llms[-1] == "newbie" and len(grown.llms) == 6 and grown.costs == {"newbie": 3.5}


def test_add_llm_leaves_out_rows_with_an_empty_label_and_says_so(tiny_router_path: Path, tmp_path: Path) -> None:
    answers = _answers(tmp_path / "a.csv", label="")  # row 4's label is empty
    done = run_cli("add-llm", str(tiny_router_path), "--name", "x", "--answers", str(answers), "-o",
                   str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert "added 'x' from 23 answers (11 correct; 1 row with an empty label left out)" in done.stdout
    lines = answers.read_text().splitlines()
    (tmp_path / "b.csv").write_text("\n".join(lines[:4] + lines[5:]) + "\n")  # the same answers without that row
    run_cli("add-llm", str(tiny_router_path), "--name", "x", "--answers", str(tmp_path / "b.csv"), "-o",
            str(tmp_path / "without"))
    assert Router.load(tmp_path / "out").llm_vectors[-1].tolist() == Router.load(
        tmp_path / "without").llm_vectors[-1].tolist()


def test_add_llm_counts_the_questions_of_answers_given_more_than_once(tiny_router_path: Path, tmp_path: Path) -> None:
    lines = _answers(tmp_path / "a.csv").read_text().splitlines()
    again = [line.replace(" ", "  ", 1) for line in lines[1:7]]  # six questions asked again, spaced otherwise
    (tmp_path / "b.csv").write_text("\n".join(lines + again) + "\n")
    done = run_cli("add-llm", str(tiny_router_path), "--name", "x", "--answers", str(tmp_path / "b.csv"), "-o",
                   str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert "added 'x' from 30 answers to 24 questions (" in done.stdout


def test_add_llm_says_question_in_the_singular_and_why_too_few_answers_are_left(
    tiny_router_path: Path, tmp_path: Path
) -> None:
    (tmp_path / "once.csv").write_text("text,correct\nwhat is the mass,1\nwhat is  the mass,0\n")
    done = run_cli("add-llm", str(tiny_router_path), "--name", "x", "--answers", str(tmp_path / "once.csv"), "-o",
                   str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert "added 'x' from 2 answers to 1 question (1 correct)" in done.stdout  # it said "to 1 questions"
    # Two of three labels empty: "got 1" alone did not say where the other rows went.
    (tmp_path / "empty.csv").write_text("text,correct\nwhat is the mass,1\nwhat is the price,\nwhat is a court,\n")
    done = run_cli("add-llm", str(tiny_router_path), "--name", "x", "--answers", str(tmp_path / "empty.csv"), "-o",
                   str(tmp_path / "none"))
    assert done.returncode == 1 and not (tmp_path / "none").exists()
    assert done.stderr == (f"jeirt-lite: error: {tmp_path / 'empty.csv'}: need at least 2 answers to fit an LLM, "
                           "got 1 (2 rows with an empty label left out: no answer)\n")


def test_add_llm_parquet(tiny_router_path: Path, tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    table = pa.table({"text": [f"what is the {w}" for w in WORDS], "correct": [True, False] * 4})
    pq.write_table(table, tmp_path / "a.parquet")
    done = run_cli(
        "add-llm",
        str(tiny_router_path),
        "--name",
        "p",
        "--answers",
        str(tmp_path / "a.parquet"),
        "-o",
        str(tmp_path / "out"),
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        # Rows are named as `score` names them (one reader); add-llm has no --skip-bad, so no advice to use it.
        ("bad_label", "data row 4 (1-based, header not counted, ending on line 5): label 'maybe' is not 0/1 or "
         "true/false\n"),
        ("empty_text", "data row 1 (1-based, header not counted, ending on line 2): text is empty\n"),
        ("duplicate", "LLM 'llm-0' is already in"),
        ("one_row", "need at least 2 answers"),
        ("no_column", "no correct column (looked for 'correct', 'label', 'is_correct', 'score'; columns: text, "
         "answer); see --correct-column"),
        # The near miss of a name looked for, as score says it of its text column.
        ("near_column", "no correct column (looked for 'correct', 'label', 'is_correct', 'score'; columns: text, "
         "Label; did you mean 'Label'?); see --correct-column"),
        ("exists", "already exists (pass --overwrite"),
        ("not_a_router", "is not a router folder (it holds no router.json); overwrite replaces only a router folder"),
    ],
)
def test_add_llm_errors_are_clear(tiny_router_path: Path, tmp_path: Path, setup: str, message: str) -> None:
    answers = tmp_path / "a.csv"
    name, out = "x", tmp_path / "out"
    if setup == "bad_label":
        _answers(answers, label="maybe")
    elif setup == "empty_text":
        answers.write_text('text,correct\n"  ",1\nwhat is the price,0\n')
    elif setup == "one_row":
        answers.write_text("text,correct\nwhat is the price,1\n")
    elif setup == "no_column":
        answers.write_text("text,answer\nwhat is the price,1\n")
    elif setup == "near_column":
        answers.write_text("text,Label\nwhat is the price,1\n")
    else:
        _answers(answers)
    if setup == "duplicate":
        name = "llm-0"
    if setup in ("exists", "not_a_router"):
        out.mkdir()
        (out / "notes.txt").write_text("mine")
    overwrite = ["--overwrite"] if setup == "not_a_router" else []
    done = run_cli(
        "add-llm", str(tiny_router_path), "--name", name, "--answers", str(answers), "-o", str(out), *overwrite
    )
    assert done.returncode == 1
    assert message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1
    if setup in ("exists", "not_a_router"):
        assert [p.name for p in out.iterdir()] == ["notes.txt"]


def test_add_llm_reads_no_ids_so_a_blank_or_a_late_one_is_no_error(tiny_router_path: Path, tmp_path: Path) -> None:
    # add-llm keeps texts and labels only: an id column, blank in places or brought by later JSONL rows alone,
    # is not its business (score refuses such ids, as it writes them out).
    (tmp_path / "a.csv").write_text("id,text,correct\nq1,what is the price,1\n,acid and base,0\nq3,law,1\n")
    (tmp_path / "a.jsonl").write_text('{"text": "what is the price", "correct": 1}\n'
                                      '{"id": "q2", "text": "acid and base", "correct": 0}\n'
                                      '{"id": "q3", "text": "law", "correct": 1}\n')
    for name in ("a.csv", "a.jsonl"):
        done = run_cli("add-llm", "--router", str(tiny_router_path), "--name", "x", "--answers", str(tmp_path / name),
                       "-o", str(tmp_path / f"out-{name}"))
        assert done.returncode == 0, done.stderr
        assert "from 3 answers (2 correct)" in done.stdout


def test_the_fit_summary_says_how_the_correction_was_averaged() -> None:
    from jeirt_lite.cli.add_llm import fit_summary

    record = {
        "folds": 5, "cv_auc": 0.71, "cv_log_loss": 0.55, "cv_auc_vector_only": 0.66, "cv_log_loss_vector_only": 0.6,
        "correction": "on", "router_scale": 0.8,
        "averaged_fits": [{"router_scale": 1.0, "strength": 300.0, "weight": 0.6},
                          {"router_scale": 1.0, "strength": None, "weight": 0.25},
                          {"router_scale": 0.5, "strength": 1000.0, "weight": 0.15}],
    }
    text = fit_summary(record)
    assert "AUC 0.710, log-loss 0.550 (vector alone: AUC 0.660, log-loss 0.600)" in text
    assert "feature correction: on (an average of 3 fits" in text
    assert "25% on the vector alone; the router's logit scaled by 0.8)" in text
    one = fit_summary({**record, "averaged_fits": [{"router_scale": 1.0, "strength": 3000.0, "weight": 1.0}]})
    assert "feature correction: on (strength 3000; the router's logit scaled by 0.8)" in one
    off = fit_summary({**record, "correction": "off: this router's encoder exposes no features"})
    assert "feature correction: off: this router's encoder exposes no features\n" in off


def test_the_fit_summary_says_how_many_answers_were_on_training_questions() -> None:
    from jeirt_lite.cli.add_llm import fit_summary

    record = {"answers": 100, "on_training_questions": 40, "cv_answers": 60, "folds": 5, "cv_auc": 0.7,
              "cv_log_loss": 0.6, "cv_auc_vector_only": 0.68, "cv_log_loss_vector_only": 0.61, "correction": "on"}
    text = fit_summary(record)
    assert "40 of its 100 answers are on questions the router learned from: they fit its vector, not" in text
    assert "cross-validated on its 60 answers on other questions (5 folds)" in text
    assert "0 of its 100 answers are on questions the router learned from\n" in fit_summary(
        {**record, "on_training_questions": 0, "cv_answers": 100})
    assert "keeps no record of the questions it learned from" in fit_summary({**record, "on_training_questions": None})
    assert "learned from" not in fit_summary({k: v for k, v in record.items() if k != "on_training_questions"})


def test_the_fit_summary_reads_the_record_s_own_values_and_defaults() -> None:
    from jeirt_lite.cli.add_llm import fit_summary

    many = int("1000")  # a count no small-int cache holds: equal to the answers, not the same object
    record = {"answers": 1000, "cv_answers": many, "folds": 5, "cv_auc": 0.7, "cv_log_loss": 0.6,
              "cv_auc_vector_only": 0.68, "cv_log_loss_vector_only": 0.61, "correction": "on",
              "averaged_fits": [{"strength": 30.0, "weight": 1.0}],
              "alignment": {"mostly_out_of_distribution": True, "in_distribution_share": 0.25, "mean_score": 0.41}}
    text = fit_summary(record)
    assert "cross-validated on its answers (5 folds)" in text
    assert "feature correction: on (strength 30; the router's logit scaled by 1)\n" in text  # no scale recorded
    assert "its questions are mostly UNLIKE the router's training questions: 25% in distribution" in text
    like = fit_summary({**record, "alignment": {**record["alignment"], "mostly_out_of_distribution": False}})
    assert "its questions are mostly like the router's" in like
    # An "off: ..." correction sorts before "on": it gets no details, whatever fits are recorded.
    off = fit_summary({**record, "correction": "off: fewer than 5 answers of each kind"})
    assert "feature correction: off: fewer than 5 answers of each kind\n" in off
    two = [{"strength": 30.0, "weight": 0.5}, {"strength": None, "weight": 0.5}]
    read = "".join(["o", "n"])  # "on" as read from router.json: equal to the literal, not the same object
    assert "feature correction: on (an average of 2 fits" in fit_summary({**record, "correction": read, "averaged_fits": two})
    assert "feature correction: on (strength 30; " in fit_summary({**record, "correction": read})
    assert "feature correction: off: x\n" in fit_summary({**record, "correction": "off: x", "averaged_fits": two})


@pytest.mark.parametrize("missing", ["--name", "--answers", "-o"])
def test_the_name_the_answers_and_the_output_are_required(missing: str, capsys: pytest.CaptureFixture[str]) -> None:
    from jeirt_lite.cli import main

    given = {"--name": "x", "--answers": "a.csv", "-o": "out"}
    argv = [part for flag, value in given.items() if flag != missing for part in (flag, value)]
    assert main(["add-llm", *argv]) == 2
    assert f"the following arguments are required: {missing.replace('-o', '-o/--output')}" in capsys.readouterr().err


def test_a_cost_may_be_zero_but_not_negative(capsys: pytest.CaptureFixture[str]) -> None:
    from jeirt_lite.cli import build_parser, main

    argv = ["add-llm", "--name", "x", "--answers", "a.csv", "-o", "out", "--cost"]
    assert build_parser().parse_args([*argv, "0"]).cost == 0.0
    assert main([*argv, "-0.5"]) == 2
    assert "argument --cost: must be a finite number in [0, inf), got -0.5" in capsys.readouterr().err


def test_an_output_that_is_or_holds_an_input_is_refused_before_anything_is_written(
    tiny_router_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from jeirt_lite import _router
    from jeirt_lite.cli import main
    from tiny_router import copy_router

    out = tmp_path / "out"
    out.mkdir()
    answers = _answers(out / "answers.csv")
    assert main(["add-llm", "--router", str(tiny_router_path), "--name", "x", "--answers", str(answers),
                 "-o", str(out), "--overwrite"]) == 1
    assert "holds the input" in capsys.readouterr().err and answers.exists()
    # The shipped router (here a copy standing in for it) is an input too when --router is not given.
    default = copy_router(tiny_router_path, tmp_path / "default")
    monkeypatch.setattr(_router, "DEFAULT_ROUTER_PATH", default)
    before = sorted(p.name for p in default.iterdir())
    assert main(["add-llm", "--name", "x", "--answers", str(_answers(tmp_path / "a.csv")), "-o", str(default),
                 "--overwrite"]) == 1
    assert "is also the input" in capsys.readouterr().err
    assert sorted(p.name for p in default.iterdir()) == before


def test_a_second_new_llm_is_summarised_by_its_own_record(tiny_router_path: Path, tmp_path: Path) -> None:
    first = run_cli("add-llm", "--router", str(tiny_router_path), "--name", "a", "--answers",
                    str(_answers(tmp_path / "a.csv", n=24)), "-o", str(tmp_path / "one"))
    assert first.returncode == 0, first.stderr
    second = run_cli("add-llm", "--router", str(tmp_path / "one"), "--name", "b", "--answers",
                     str(_answers(tmp_path / "b.csv", n=30)), "-o", str(tmp_path / "two"))
    assert second.returncode == 0, second.stderr
    from jeirt_lite.cli.add_llm import fit_summary

    records = Router.load(tmp_path / "two").manifest["onboarded"]
    assert [record["name"] for record in records] == ["a", "b"]
    assert second.stdout.endswith(fit_summary(records[1])) and fit_summary(records[0]) != fit_summary(records[1])


def _long_table(path: Path, llm_column: str = "model") -> Path:
    """x's answers (those of `_answers`) with another LLM's between them: opposite labels, and one row that would be
    bad if it were read (an empty text)."""
    rows = []
    for i, line in enumerate(_answers(path.with_name("x_only.csv")).read_text().splitlines()[1:]):
        qid, text, label = line.split(",")
        rows.append({"id": qid, "text": text, llm_column: "x", "correct": int(label)})
        rows.append({"id": qid, "text": "" if i == 5 else text, llm_column: "other", "correct": 1 - int(label)})
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        path.write_text(f"id,text,{llm_column},correct\n" + "".join(",".join(map(str, r.values())) + "\n" for r in rows))
    return path


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_add_llm_reads_only_the_named_llms_rows_of_a_table_of_several(
    tiny_router_path: Path, tmp_path: Path, suffix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from jeirt_lite.cli import main

    table = _long_table(tmp_path / f"all{suffix}")
    assert main(["add-llm", "--router", str(tiny_router_path), "--name", "x", "--answers", str(table),
                 "-o", str(tmp_path / "from_all")]) == 0
    assert "added 'x' from 24 answers (12 correct; 24 rows of 1 other LLM in column 'model' left out)" in (
        capsys.readouterr().out)
    assert main(["add-llm", "--router", str(tiny_router_path), "--name", "x", "--answers",
                 str(tmp_path / "x_only.csv"), "-o", str(tmp_path / "alone")]) == 0
    assert Router.load(tmp_path / "from_all").llm_vectors[-1].tolist() == Router.load(
        tmp_path / "alone").llm_vectors[-1].tolist()


@pytest.mark.parametrize(
    ("argv", "edit", "message"),
    [
        (["--name", "y"], None, "all.csv: no row of 'y' in its LLM column 'model', which names 2 other LLMs ('x', "
         "'other'); add it under the name the file gives it, or give its answers alone without that column"),
        (["--name", "x"], ("x,", ",", 3), "all.csv: data row 3 (1-based, header not counted, ending on line 4): has no "
         "LLM name"),
        (["--name", "x", "--llm-column", "llm"], None, "all.csv: no LLM column 'llm' (columns: id, text, model, "
         "correct); see --llm-column"),
        (["--name", "x", "--text-column", "prompt"], None, "all.csv: no text column 'prompt' (columns: id, text, "
         "model, correct); see --text-column"),
    ],
)
def test_a_table_of_several_llms_is_refused_where_it_cannot_say_whose_answers(
    tiny_router_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
    edit: tuple[str, str, int] | None, message: str,
) -> None:
    from jeirt_lite.cli import main

    table = _long_table(tmp_path / "all.csv")
    if edit is not None:
        old, new, line = edit
        lines = table.read_text().splitlines()
        lines[line] = lines[line].replace(old, new, 1)
        table.write_text("\n".join(lines) + "\n")
    assert main(["add-llm", "--router", str(tiny_router_path), *argv, "--answers", str(table),
                 "-o", str(tmp_path / "out")]) == 1
    assert capsys.readouterr().err == f"jeirt-lite: error: {tmp_path}/{message}\n"
    assert not (tmp_path / "out").exists()


def test_add_llm_reads_the_column_names_train_reads(
    tiny_router_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from jeirt_lite.cli import build_parser, main

    plain = _answers(tmp_path / "plain.csv").read_text()
    (tmp_path / "train_names.csv").write_text(plain.replace("id,text,correct", "qid,question,label", 1))
    (tmp_path / "mine.csv").write_text(plain.replace("id,text,correct", "id,ask,right", 1))
    for name, options in [("plain.csv", []), ("train_names.csv", []),
                          ("mine.csv", ["--text-column", "ask", "--correct-column", "right"]),
                          ("mine.csv", ["--text-column", "ask", "--label-column", "right"])]:  # the old name works
        out = tmp_path / f"out_{len(list(tmp_path.iterdir()))}"
        assert main(["add-llm", "--router", str(tiny_router_path), "--name", "x", "--answers", str(tmp_path / name),
                     "-o", str(out), *options]) == 0, capsys.readouterr().err
        assert Router.load(out).llm_vectors[-1].tolist() == Router.load(
            tmp_path / "out_3").llm_vectors[-1].tolist()
    usage = build_parser()._subparsers._group_actions[0].choices["add-llm"].format_help()  # type: ignore[union-attr]
    assert "--correct-column" in usage and "--llm-column" in usage and "--label-column" not in usage


def test_an_llm_name_with_spaces_at_its_ends_is_the_name_train_reads(
    tiny_router_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # train strips a long table's LLM names (' x ' is x) and add-llm refuses a name with spaces at its ends: the
    # rows of 'x ' were another LLM's, and a table naming x only so could not add it under any name.
    from jeirt_lite.cli import main

    table = _long_table(tmp_path / "all.csv")
    lines = table.read_text().splitlines()
    table.write_text("\n".join([lines[0], *(line.replace(",x,", ",x ,", 1) for line in lines[1:])]) + "\n")
    assert main(["add-llm", "--router", str(tiny_router_path), "--name", "x", "--answers", str(table),
                 "-o", str(tmp_path / "spaced")]) == 0, capsys.readouterr().err
    assert "added 'x' from 24 answers (12 correct; 24 rows of 1 other LLM in column 'model' left out)" in (
        capsys.readouterr().out)
    _answers(tmp_path / "x_only.csv")
    assert main(["add-llm", "--router", str(tiny_router_path), "--name", "x", "--answers",
                 str(tmp_path / "x_only.csv"), "-o", str(tmp_path / "alone")]) == 0
    assert Router.load(tmp_path / "spaced").llm_vectors[-1].tolist() == Router.load(
        tmp_path / "alone").llm_vectors[-1].tolist()


def test_a_file_of_one_llms_answers_under_another_name_is_told_the_way_out_that_works(
    tiny_router_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The refusal said 'keep only its rows in the file' to a file holding only its rows: the LLM column is what
    # chooses the rows, so the way out is a file without it (or the file's name for the LLM).
    from jeirt_lite.cli import main

    rows = _answers(tmp_path / "plain.csv").read_text().splitlines()
    table = tmp_path / "one.csv"
    table.write_text("\n".join([rows[0] + ",model", *(row + ",openai/x-2024" for row in rows[1:])]) + "\n")
    argv = ["add-llm", "--router", str(tiny_router_path), "--answers", str(table), "-o", str(tmp_path / "out")]
    assert main([*argv, "--name", "x"]) == 1
    err = capsys.readouterr().err
    assert "names 1 other LLM ('openai/x-2024'); add it under the name the file gives it, or give its answers alone " \
        "without that column\n" in err and "keep only its rows" not in err
    assert main([*argv, "--name", "openai/x-2024"]) == 0
    table.write_text("\n".join(row.rsplit(",", 1)[0] for row in table.read_text().splitlines()) + "\n")
    assert main([*argv, "--name", "x", "--overwrite"]) == 0


def test_a_jsonl_row_without_the_correct_field_is_a_question_without_an_answer_as_train_reads_it(
    tiny_router_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # train reads a long JSONL's row without the field as no answer; add-llm stopped at it ("no field 'correct'"),
    # even at a row of another LLM, whose rows it promises not to read.
    from jeirt_lite.cli import main

    rows = [json.loads(line) for line in _long_table(tmp_path / "all.jsonl").read_text().splitlines()]
    del rows[0]["correct"], rows[3]["correct"]  # x's first row (it stands for the header) and another LLM's row
    table = tmp_path / "omitted.jsonl"
    table.write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert main(["add-llm", "--router", str(tiny_router_path), "--name", "x", "--answers", str(table),
                 "-o", str(tmp_path / "out")]) == 0, capsys.readouterr().err
    assert "added 'x' from 23 answers (12 correct; 1 row with an empty label left out; 24 rows of 1 other LLM in " \
        "column 'model' left out)" in capsys.readouterr().out


def test_add_llm_update_adapts_an_llm_the_router_holds(tmp_path: Path) -> None:
    import csv

    with open(Path(__file__).resolve().parents[1] / "data" / "zeroeval_crux_gsm_math" / "questions.csv",
              encoding="utf-8") as handle:
        texts = [row["text"] for _, row in zip(range(40), csv.DictReader(handle))]
    answers = tmp_path / "answers.csv"
    with open(answers, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([("text", "correct"), *((t, int(i % 4 == 0)) for i, t in enumerate(texts))])
    done = run_cli("add-llm", "--name", "Yi-34B", "--answers", str(answers), "--update", "-o", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert "updated 'Yi-34B' from 40 answers (10 correct)" in done.stdout
    assert "(unchanged: AUC" in done.stdout
    shipped, updated = Router.load(), Router.load(tmp_path / "out")
    assert updated.llms == shipped.llms and updated.manifest["onboarded"][-1]["update"] is True
    assert updated.corrections is not None and updated.corrections.llms == ("Yi-34B",)


def test_add_llm_update_is_refused_where_it_cannot_apply(tiny_router_path: Path, tmp_path: Path) -> None:
    answers = _answers(tmp_path / "answers.csv")
    out = str(tmp_path / "out")
    done = run_cli("add-llm", str(tiny_router_path), "--name", "llm-1", "--answers", str(answers), "-o", out)
    assert done.returncode != 0 and "already in" in done.stderr and "pass --update" in done.stderr
    done = run_cli("add-llm", str(tiny_router_path), "--name", "newbie", "--answers", str(answers), "--update", "-o", out)
    assert done.returncode != 0 and "has no 'newbie'; drop --update to add it" in done.stderr
    done = run_cli("add-llm", str(tiny_router_path), "--name", "llm-1", "--answers", str(answers), "--update", "-o", out)
    assert done.returncode != 0 and "exposes no features" in done.stderr
    done = run_cli("add-llm", str(tiny_router_path), "--name", "llm-1", "--answers", str(answers), "--update",
                   "--cost", "2", "-o", out)
    assert done.returncode != 0 and "--update keeps the LLM's cost" in done.stderr
    assert not (tmp_path / "out").exists()
