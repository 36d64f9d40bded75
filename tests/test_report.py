"""The HTML report: complete (every section, every figure a decodable PNG) on the tiny router and a small data
folder built in code; the CLI writes it; missing result files and routers without alignment are notes, not errors."""

from __future__ import annotations

import base64
import csv
import html
import os
import re
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from jeirt_lite import JeirtError, Router
from jeirt_lite.analysis.data import read_response_folder
from jeirt_lite.analysis.report import SECTIONS, _answers_in_router_order, build_report
from jeirt_lite.artifact import load_artifact, save_artifact
from jeirt_lite.cli import main
from tiny_router import WORDS, copy_router, edit_and_reseal

SUBJECTS = ("math", "law", "biology")


def _write_folder(folder: Path, llm_names: list[str], n: int = 90, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True)
    with open(folder / "questions.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["question_id", "benchmark", "subject", "text"])
        for i in range(n):
            words = " ".join(rng.choice(WORDS, size=6))
            options = "\n".join(f"{c}. {rng.integers(1, 99)}" if i % 2 == 0 else f"{c}. {rng.choice(WORDS)}"
                                for c in "ABCD")
            writer.writerow([f"q{i}", "bench", SUBJECTS[i % 3], f"{words}?\n{options}"])
    with open(folder / "models.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["model_id", "name"])
        writer.writerows([[f"m{j}", name] for j, name in enumerate(llm_names)])
    with open(folder / "responses.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["question_id", "model_id", "correct"])
        for i in range(n):
            for j in range(len(llm_names)):
                if rng.random() < 0.9:  # some cells missing
                    writer.writerow([f"q{i}", f"m{j}", int(rng.random() < 0.3 + 0.1 * j)])
    return folder


def _sections_with_figures(page: str) -> list[str]:
    parts = page.split("<section>")[1:]
    return [re.search(r"<h2>(.*?)</h2>", part).group(1) for part in parts if "<img" in part]  # type: ignore[union-attr]


def _check_complete(page: str) -> int:
    for title in SECTIONS:
        assert f"<h2>{title}</h2>" in page, title
    sources = re.findall(r"<img[^>]*src='([^']*)'", page)
    assert sources
    for src in sources:
        assert src.startswith("data:image/png;base64,")
        png = base64.b64decode(src.split(",", 1)[1], validate=True)
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 1000
    assert "src=''" not in page and "http" not in page.replace("http-equiv", "")
    return len(sources)


def test_report_is_complete(tiny_router_path: Path, tmp_path: Path) -> None:
    router = Router.load(tiny_router_path, threads=1)
    # A router with alignment and result curves present: every section gets its figure.
    artifact = load_artifact(tiny_router_path)
    aligned = Router.load(save_artifact(
        tmp_path / "aligned", llm_names=artifact.llm_names, llm_vectors=artifact.llm_vectors,
        tokenizer_json=artifact.tokenizer_path, encoder_onnx=artifact.encoder_path, encoder=artifact.encoder,
        reference_directions=np.eye(router.dim, dtype=np.float32), alignment={"threshold": 0.6}), threads=1)
    aligned = aligned.with_costs({"llm-0": 1.0, "llm-1": 2.0, "llm-3": 8.0})  # llm-2 and llm-4: no cost
    data = _write_folder(tmp_path / "data", list(router.llms))
    page = build_report(aligned, data, tmp_path / "report.html").read_text(encoding="utf-8")
    assert _check_complete(page) == 9  # LLM vectors: two figures
    assert _sections_with_figures(page) == [s for s in SECTIONS if s != "Router and data"]
    assert "the router records no split: these questions may include the router&#x27;s training" in page
    assert "log-loss from 10 answers" in page and "log-loss from 25 answers" in page  # computed here
    assert "best single LLM in hindsight" in page and "cheapest with P ≥ t" in page
    assert "among the 3 LLMs with a cost" in page


def test_report_cli_notes_missing_parts(tiny_router_path: Path, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    router = Router.load(tiny_router_path, threads=1)
    data = _write_folder(tmp_path / "data", list(router.llms) + ["not-in-router"])
    ids = tmp_path / "ids.txt"
    ids.write_text("\n".join(f"q{i}" for i in range(60)))
    out = tmp_path / "cli.html"
    code = main(["report", str(tiny_router_path), "--data", str(data), "-o", str(out), "--threads", "1",
                 "--question-ids", str(ids)])
    assert code == 0 and out.is_file()
    page = out.read_text(encoding="utf-8")
    assert _check_complete(page) == 7
    assert _sections_with_figures(page) == [
        "Difficulty", "Taxonomy", "LLM vectors", "Calibration", "Arithmetic probe", "Onboarding"
    ]
    assert "alignment is unavailable" in page and "no quality–cost curve" in page
    assert "may include the router" not in page  # ids were given
    assert "<td>60</td>" in page


def _section_rows(page: str, title: str) -> dict[str, str]:
    part = page.split(f"<h2>{title}</h2>")[1].split("<section>")[0]
    return dict(re.findall(r"<tr><th>(.*?)</th><td>(.*?)</td></tr>", part))


def test_report_numbers_are_those_of_the_cells_it_read(tiny_router_path: Path, tmp_path: Path) -> None:
    router = Router.load(tiny_router_path, threads=1)
    data = _write_folder(tmp_path / "data", list(router.llms)[:3] + ["not-in-router"], n=60, seed=3)
    # The tiny router's P(correct) all lie far below 0.5: a calibration that centres them makes the cut count.
    raw = router.predict_proba(["which river crosses the old town?"])
    centre = -float(np.median(np.log(raw / (1.0 - raw))))
    router = router.with_calibration([1.0] * len(router.llms), [centre] * len(router.llms))
    page = build_report(router, data, tmp_path / "r.html", question_ids=[f"q{i}" for i in range(60)])
    text = page.read_text(encoding="utf-8")
    rows, routing = _section_rows(text, "Calibration"), _section_rows(text, "Quality and cost")
    # The same cells, scored and measured here without the report's code: the router's P(correct) for every
    # answer of an LLM it holds, AUC by counting pairs, accuracy at 0.5, ECE over 15 equal-width bins.
    with open(data / "questions.csv", newline="", encoding="utf-8") as handle:
        texts = {row["question_id"]: row["text"] for row in csv.DictReader(handle)}
    ids = list(texts)
    probabilities = router.predict_proba([texts[i] for i in ids])
    names = {f"m{j}": name for j, name in enumerate(list(router.llms)[:3] + ["not-in-router"])}
    answers = np.full(probabilities.shape, np.nan)  # (question, router LLM): its answer, NaN where none
    with open(data / "responses.csv", newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            if names[row["model_id"]] in router.llms:
                cell = (ids.index(row["question_id"]), router.llms.index(names[row["model_id"]]))
                answers[cell] = int(row["correct"])
    answered = ~np.isnan(answers)
    p_, y_ = probabilities[answered].astype(np.float64), answers[answered]
    pos, neg = p_[y_ == 1], p_[y_ == 0]
    auc = (np.sum(pos[:, None] > neg[None, :]) + 0.5 * np.sum(pos[:, None] == neg[None, :])) / (pos.size * neg.size)
    bins = [np.flatnonzero(np.minimum((p_ * 15).astype(int), 14) == b) for b in range(15)]
    ece = sum(abs(y_[b].mean() - p_[b].mean()) * b.size for b in bins if b.size) / p_.size
    assert rows["cells"] == str(p_.size) and p_.size > 100
    assert abs(float(rows["AUC"]) - auc) <= 6e-4, (rows, auc)
    assert abs(float(rows["accuracy at 0.5"]) - np.mean((p_ >= 0.5) == (y_ == 1))) <= 6e-4, rows
    assert abs(float(rows["ECE (15 bins)"]) - ece) <= 6e-4, (rows, ece)
    assert 0.0 < ece and 0.2 < np.mean(p_ >= 0.5) < 0.8  # neither number is trivially 0 or 1 here
    # The answers the routing and onboarding sections read, in the router's LLM order (NaN: no answer).
    np.testing.assert_array_equal(_answers_in_router_order(router, read_response_folder(data, ids)), answers)
    # Routing: per question, the LLM of highest P(correct) among those that answered it (two of the router's five
    # LLMs answered nothing here), scored by its answer; the oracle is right where any of them was.
    asked = ~np.isnan(answers).all(axis=1)
    picks = np.argmax(np.where(np.isnan(answers), -np.inf, probabilities), axis=1)[asked]
    routed = float(np.mean(answers[asked][np.arange(picks.size), picks]))
    assert routing["questions"] == str(int(asked.sum()))
    assert abs(float(routing["router (most likely LLM)"]) - routed) <= 6e-4, (routing, routed)
    assert abs(float(routing["oracle (any LLM right)"]) - np.mean(np.nansum(answers, axis=1)[asked] > 0)) <= 6e-4


@pytest.mark.parametrize(("questions", "ks"), [(20, [4, 6, 8]), (9, [2])])
def test_report_taxonomy_tries_the_cluster_counts_its_questions_allow(
        tiny_router_path: Path, tmp_path: Path, questions: int, ks: list[int]) -> None:
    router = Router.load(tiny_router_path, threads=1)
    data = _write_folder(tmp_path / "data", list(router.llms))
    page = build_report(router, data, tmp_path / "r.html", question_ids=[f"q{i}" for i in range(questions)])
    text = page.read_text(encoding="utf-8")
    rows = _section_rows(text, "Taxonomy")
    assert [int(k.split("=")[1]) for k in rows if k.startswith("silhouette k=")] == ks  # k below half the questions
    assert int(rows["k (max silhouette)"]) in ks
    if questions < 20:  # at most one answer per question
        assert "No LLM of the router has 20 answers here: nothing to refit." in text


def test_report_needs_three_questions(tiny_router_path: Path, tmp_path: Path) -> None:
    router = Router.load(tiny_router_path, threads=1)
    data = _write_folder(tmp_path / "data", list(router.llms))
    with pytest.raises(JeirtError, match="the report needs at least 3 questions, found 2"):
        build_report(router, data, tmp_path / "two.html", question_ids=["q0", "q1"])
    assert not (tmp_path / "two.html").exists()
    assert build_report(router, data, tmp_path / "three.html", question_ids=["q0", "q1", "q2"]).is_file()


def test_a_report_on_questions_without_answers_is_still_written(tiny_router_path: Path, tmp_path: Path) -> None:
    router = Router.load(tiny_router_path, threads=1)
    data = _write_folder(tmp_path / "data", list(router.llms))
    (data / "responses.csv").write_text("question_id,model_id,correct\n", encoding="utf-8")  # no answer at all
    page = build_report(router, data, tmp_path / "r.html").read_text("utf-8")
    assert "No question here has an answer: no correlation of difficulty with error." in page
    assert "No question here has an answer from an LLM of the router: nothing to route by." in page
    assert "Taxonomy" in page  # the sections that need no answers are all there


def test_a_router_with_a_split_gets_a_report_on_a_folder_without_answers(
    tiny_router_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Drawing the split again reads the folder as training does, which refuses a folder without answers: the page
    # says so instead of the command ending in a traceback, and numpy warns of no empty mean on the way.
    pytest.importorskip("pandas", reason="drawing the router's split again needs the train extra")
    artifact = load_artifact(tiny_router_path)
    split = {"seed": 0, "n_train_questions": 60, "n_val_questions": 9, "n_test_questions": 21}
    router = save_artifact(
        tmp_path / "router", llm_names=artifact.llm_names, llm_vectors=artifact.llm_vectors,
        tokenizer_json=artifact.tokenizer_path, encoder_onnx=artifact.encoder_path, encoder=artifact.encoder,
        training={"split": split})
    data = _write_folder(tmp_path / "data", list(artifact.llm_names))
    (data / "responses.csv").write_text("question_id,model_id,correct\n", encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main(["report", "--router", str(router), "--data", str(data), "-o", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text("utf-8")
    assert "the router&#x27;s split could not be drawn again (" in page and "no answers to learn from" in page


def test_report_cli_bad_data_folder(tiny_router_path: Path, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tiny_router_path), "--data", str(tmp_path), "-o", str(tmp_path / "x.html")]) == 1
    assert "questions.csv: missing" in capsys.readouterr().err
    missing = tmp_path / "missing" / "dir" / "x.html"
    assert main(["report", "--router", str(tiny_router_path), "--data", str(tmp_path), "-o", str(missing)]) == 1
    assert "missing/dir does not exist" in capsys.readouterr().err and not (tmp_path / "missing").exists()


def test_report_output_is_refused_inside_the_router_a_folder_or_without_a_data_folder(
    tiny_router_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    router = copy_router(tiny_router_path, tmp_path / "router")
    before = {f.name: f.read_bytes() for f in router.iterdir()}
    data = _write_folder(tmp_path / "data", list(Router.load(router, threads=1).llms))
    for output, words in ((router / "router.json", "is inside the router folder"),
                          (router / "new.html", "is inside the router folder"),
                          (tmp_path / "data", "is a folder; give a file name such as"),
                          (Path(""), "is a folder; give a file name such as")):
        assert main(["report", "--router", str(router), "--data", str(data), "-o", str(output)]) == 1
        err = capsys.readouterr().err
        assert words in err and err.count("\n") == 1, err
    assert {f.name: f.read_bytes() for f in router.iterdir()} == before
    assert main(["report", "--router", str(router), "--data", str(tmp_path / "nowhere"), "-o",
                 str(tmp_path / "x.html")]) == 1
    assert f"{tmp_path / 'nowhere'}: no such data folder or table" in capsys.readouterr().err
    assert not (tmp_path / "x.html").exists()


@pytest.mark.skipif(sys.platform == "win32", reason="a name of bytes that are not UTF-8 is POSIX's")
def test_the_page_escapes_a_data_path_of_any_bytes_and_html_in_paths_and_llm_names(
    tiny_router_path: Path, tmp_path: Path
) -> None:
    # A --data path holding a byte that is not UTF-8 (a lone surrogate once decoded, which UTF-8 cannot hold)
    # ended the page's write in a traceback, with no page.
    router = copy_router(tiny_router_path, tmp_path / "r<1>")
    edit_and_reseal(router, lambda manifest: manifest["llms"].__setitem__(0, '<b>llm&"0'))
    data = _write_folder(tmp_path / os.fsdecode(b'da<ta>&"\xff'), list(Router.load(router, threads=1).llms))
    out = tmp_path / "page.html"
    assert main(["report", str(router), "--data", str(data), "-o", str(out), "--threads", "1"]) == 0
    page = out.read_bytes().decode("utf-8")
    assert f"<th>data</th><td>{html.escape(str(tmp_path))}/da&lt;ta&gt;&amp;&quot;\\udcff</td>" in page
    assert "<h1>jeirt-lite report: r&lt;1&gt;</h1>" in page
    assert "&lt;b&gt;llm&amp;&quot;0" in page and "<b>llm" not in page

def test_report_on_the_shipped_router_says_it_learned_from_every_question(tmp_path: Path) -> None:
    pytest.importorskip("pandas", reason="drawing the router's split again needs the train extra")
    data = Path(__file__).resolve().parent.parent / "data" / "mmlu_pro"
    page = build_report(Router.load(threads=1), data, tmp_path / "r.html", max_questions=200).read_text("utf-8")
    # Trained on all of data/mmlu_pro (no test part): the page warns that the questions are training questions.
    assert "the router learned from every question of its data (no test part)" in page and "may include" in page
    assert _sections_with_figures(page) == [s for s in SECTIONS if s != "Router and data"]
    assert "gemini-3.1-pro" in page and "among the 27 LLMs with a cost" in page
    assert f"Router label: {html.escape(Router.load().manifest['label'])}" in page
    assert "pairwise cosine min / median" in _section_rows(page, "LLM vectors")


def test_a_router_with_a_test_part_gets_its_test_split_drawn_again() -> None:
    pytest.importorskip("pandas", reason="drawing the router's split again needs the train extra")
    from jeirt_lite.analysis._router_split import router_test_question_ids

    data = Path(__file__).resolve().parent.parent / "data" / "mmlu_pro"
    sizes = {"seed": 0, "n_train_questions": 7561, "n_val_questions": 1079, "n_test_questions": 2161}
    ids, how = router_test_question_ids({"training": {"split": sizes}}, data)
    assert ids is not None and len(ids) == len(set(ids)) == 2161
    assert how == "the router's test split (seed 0, drawn again: 2161 questions)"
    wrong = router_test_question_ids({"training": {"split": {**sizes, "n_test_questions": 2000}}}, data)
    assert wrong[0] is None and "questions" in wrong[1]


def test_a_split_drawn_for_other_fractions_is_drawn_again_from_the_recorded_ones(tmp_path: Path) -> None:
    # `train --holdout 0.3`: the sizes alone imply fractions whose per-subject rounding draws other parts.
    pytest.importorskip("pandas", reason="drawing the router's split again needs the train extra")
    from jeirt_lite.analysis._router_split import router_test_question_ids
    from jeirt_lite_training.data import load_dataset
    from jeirt_lite_training.splits import make_split
    from make_data_slice import write_slice

    data = write_slice(Path(__file__).resolve().parent.parent / "data" / "mmlu_pro", tmp_path / "slice", 300, seed=5)
    dataset = load_dataset(data)
    split = make_split(dataset, seed=0, val_fraction=0.1, test_fraction=0.3)
    sizes = {"seed": 0, "n_train_questions": len(split.train), "n_val_questions": len(split.val),
             "n_test_questions": len(split.test)}
    assert router_test_question_ids({"training": {"split": sizes}}, data)[0] is None  # the sizes alone: not found
    record = {**sizes, "val_fraction": 0.1, "test_fraction": 0.3}
    ids, _ = router_test_question_ids({"training": {"split": record}}, data)
    assert ids == [dataset.question_ids[i] for i in split.test]

@pytest.mark.parametrize(("cap", "questions"), [("0", 90), ("45", 45)])
def test_report_cli_max_questions_caps_the_sample_and_zero_takes_all(
    tiny_router_path: Path, tmp_path: Path, cap: str, questions: int
) -> None:
    router = Router.load(tiny_router_path, threads=1)
    data = _write_folder(tmp_path / "data", list(router.llms))
    out = tmp_path / "cli.html"
    assert main(["report", str(tiny_router_path), "--data", str(data), "-o", str(out), "--threads", "1",
                 "--max-questions", cap]) == 0
    rows = re.findall(r"<th>questions used</th><td>(\d+)</td>", out.read_text(encoding="utf-8"))
    assert rows == [str(questions)], rows


def test_report_needs_data_and_caps_its_sample_at_3000_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    from jeirt_lite.cli import build_parser

    assert main(["report", "-o", "r.html"]) == 2
    assert "the following arguments are required: --data" in capsys.readouterr().err
    args = build_parser().parse_args(["report", "--data", "d"])
    assert args.max_questions == 3000 and str(args.output) == "report.html"


def test_report_without_matplotlib_names_the_extra_in_one_line(
    tiny_router_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from jeirt_lite.analysis import report

    def missing() -> None:
        raise ImportError('jeirt-lite report needs matplotlib: pip install "jeirt-lite[report]"')

    monkeypatch.setattr(report, "require_matplotlib", missing)
    code = main(["report", str(tiny_router_path), "--data", str(tmp_path), "-o", str(tmp_path / "r.html")])
    err = capsys.readouterr().err
    assert code == 1 and err == 'jeirt-lite: error: jeirt-lite report needs matplotlib: pip install "jeirt-lite[report]"\n'
    assert not (tmp_path / "r.html").exists()


def test_without_the_train_extra_the_router_split_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from jeirt_lite.analysis._router_split import TRAIN_EXTRA, router_test_question_ids

    monkeypatch.setitem(sys.modules, "jeirt_lite_training.router_split", None)  # its import fails as without torch
    assert router_test_question_ids({"training": {"split": {"seed": 0}}}, tmp_path) == (None, TRAIN_EXTRA)


def _long_table(folder: Path, path: Path, names: tuple[str, str, str, str] = ("question_id", "text", "llm", "correct"),
                ) -> Path:
    """The answers of a data folder as one long table (one row per answer), its columns named `names`."""
    with open(folder / "questions.csv", newline="", encoding="utf-8") as handle:
        questions = {row["question_id"]: row for row in csv.DictReader(handle)}
    with open(folder / "models.csv", newline="", encoding="utf-8") as handle:
        llms = {row["model_id"]: row["name"] for row in csv.DictReader(handle)}
    with open(folder / "responses.csv", newline="", encoding="utf-8") as handle, \
            open(path, "w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow([*names, "subject"])
        for row in csv.DictReader(handle):
            question = questions[row["question_id"]]
            writer.writerow([row["question_id"], question["text"], llms[row["model_id"]], row["correct"],
                             question["subject"]])
    return path


def test_a_table_of_answers_gets_the_report_its_data_folder_gets(tiny_router_path: Path, tmp_path: Path) -> None:
    pytest.importorskip("pandas", reason="a table is read as train reads it: the train extra")
    router = Router.load(tiny_router_path, threads=1)
    data = _write_folder(tmp_path / "data", list(router.llms)[:4] + ["not-in-router"], n=60, seed=3)
    pages = {}
    for name, source, options in (
        ("folder", data, []),
        ("table", _long_table(data, tmp_path / "answers.csv"), []),
        ("named", _long_table(data, tmp_path / "named.csv", ("qid_", "ask", "who", "right")),
         ["--question-column", "qid_", "--text-column", "ask", "--llm-column", "who", "--correct-column", "right"]),
    ):
        out = tmp_path / f"{name}.html"
        assert main(["report", "--router", str(tiny_router_path), "--data", str(source), "-o", str(out),
                     "--threads", "1", *options]) == 0
        pages[name] = out.read_text(encoding="utf-8")
    for title in ("Calibration", "Quality and cost", "Difficulty"):
        rows = _section_rows(pages["folder"], title)
        assert rows and _section_rows(pages["table"], title) == rows == _section_rows(pages["named"], title), title
    assert _section_rows(pages["table"], "Router and data")["observed cells"] == _section_rows(
        pages["folder"], "Router and data")["observed cells"]


def test_a_tables_router_split_is_drawn_again_from_the_table(tmp_path: Path) -> None:
    pytest.importorskip("pandas", reason="a table is read as train reads it: the train extra")
    from jeirt_lite.analysis._table_data import read_answer_table
    from jeirt_lite_training.data import load_dataset
    from jeirt_lite_training.splits import make_split
    from make_data_slice import write_slice

    folder = write_slice(Path(__file__).resolve().parent.parent / "data" / "mmlu_pro", tmp_path / "slice", 200, seed=2)
    table = _long_table(folder, tmp_path / "answers.csv")
    dataset = load_dataset(table)
    split = make_split(dataset, seed=4, val_fraction=0.1, test_fraction=0.25)
    record = {"seed": 4, "n_train_questions": len(split.train), "n_val_questions": len(split.val),
              "n_test_questions": len(split.test), "val_fraction": 0.1, "test_fraction": 0.25}
    data, ids, how = read_answer_table(table, {"training": {"split": record}}, None, None)
    assert ids == [str(dataset.question_ids[i]) for i in split.test] and data.n_questions == 200
    assert how == f"the router's test split (seed 4, drawn again: {len(split.test)} questions)"
    everything, ids, how = read_answer_table(table, {}, None, None)
    assert ids is None and how == "the router records no split" and everything.n_questions == 200


def test_a_table_is_refused_without_the_train_extra_and_column_options_with_a_folder(
    tiny_router_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import sys

    data = _write_folder(tmp_path / "data", list(Router.load(tiny_router_path, threads=1).llms), n=12)
    out = tmp_path / "r.html"
    assert main(["report", "--router", str(tiny_router_path), "--data", str(data), "-o", str(out),
                 "--text-column", "ask"]) == 2
    assert "a data folder's files have fixed column names" in capsys.readouterr().err
    table = _long_table(data, tmp_path / "answers.csv")
    monkeypatch.setitem(sys.modules, "jeirt_lite_training.data", None)  # its import fails as without pandas
    assert main(["report", "--router", str(tiny_router_path), "--data", str(table), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert 'a table is read as train reads it, which needs the train extra (pip install "jeirt-lite[train]")' in err
    assert not out.exists()


def test_a_table_the_loader_cannot_open_is_named_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pandas", reason="a table is read as train reads it: the train extra")
    import jeirt_lite_training.data as training_data
    from jeirt_lite.analysis._table_data import read_answer_table

    def refused(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(training_data, "load_dataset", refused)
    with pytest.raises(JeirtError, match=r"answers.csv: cannot read it \(Permission denied\)$"):
        read_answer_table(tmp_path / "answers.csv", {}, None, None)


def test_a_split_drawn_again_that_holds_questions_the_router_learned_from_is_not_called_its_test_split(
    tiny_router_path: Path, tmp_path: Path
) -> None:
    # The split is drawn from the questions in the order the data lists them: the same answers in another row order
    # drew a split of the recorded sizes, most of it training questions, and the page called it the test split.
    pytest.importorskip("pandas", reason="a table is read as train reads it: the train extra")
    from jeirt_lite._training_questions import training_question_set
    from jeirt_lite_training.data import load_dataset
    from jeirt_lite_training.splits import make_split

    artifact = load_artifact(tiny_router_path)
    folder = _write_folder(tmp_path / "data", list(artifact.llm_names), n=60, seed=3)
    table = _long_table(folder, tmp_path / "answers.csv")
    dataset = load_dataset(table)
    split = make_split(dataset, seed=0, val_fraction=0.1, test_fraction=0.3)
    record = {"seed": 0, "n_train_questions": len(split.train), "n_val_questions": len(split.val),
              "n_test_questions": len(split.test), "val_fraction": 0.1, "test_fraction": 0.3}
    learned = [dataset.texts[i] for i in (*split.train, *split.val)]
    router = Router.load(save_artifact(
        tmp_path / "router", llm_names=artifact.llm_names, llm_vectors=artifact.llm_vectors,
        tokenizer_json=artifact.tokenizer_path, encoder_onnx=artifact.encoder_path, encoder=artifact.encoder,
        training={"split": record}, training_questions=training_question_set(learned)), threads=1)
    with open(table, newline="", encoding="utf-8") as handle:
        header, *rows = list(csv.reader(handle))
    reordered = tmp_path / "reordered.csv"
    with open(reordered, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([header, *reversed(rows)])
    page = build_report(router, table, tmp_path / "same.html").read_text("utf-8")
    assert f"Questions: the router&#x27;s test split (seed 0, drawn again: {len(split.test)} questions)." in page
    page = build_report(router, reordered, tmp_path / "reordered.html").read_text("utf-8")
    assert "Questions: the router" not in page
    # What it reads instead: the questions its record of training questions does not hold, the same test part.
    assert _section_rows(page, "Router and data")["questions used"] == str(len(split.test))
    assert re.search(rf"Questions: the {len(split.test)} of these 60 questions the router did not learn from \(its "
                     r"training_questions.npy holds the others; drawing the router&#x27;s split again gave \d+ of its "
                     r"\d+ test questions among those it learned from", page)
    # A router that learned from every question of its data, on that data and more: the questions it has not seen.
    router = Router.load(save_artifact(
        tmp_path / "router_all", llm_names=artifact.llm_names, llm_vectors=artifact.llm_vectors,
        tokenizer_json=artifact.tokenizer_path, encoder_onnx=artifact.encoder_path, encoder=artifact.encoder,
        training={"split": {**record, "n_test_questions": 0}}, training_questions=training_question_set(learned)),
        threads=1)
    page = build_report(router, table, tmp_path / "all.html").read_text("utf-8")
    assert _section_rows(page, "Router and data")["questions used"] == str(len(split.test))
    assert (f"Questions: the {len(split.test)} of these 60 questions the router did not learn from (its "
            "training_questions.npy holds the others; the router learned from every question of its data (no test "
            "part)).") in page
    # Data of which it learned from none: all of it, and not said to flatter anything.
    router = Router.load(save_artifact(
        tmp_path / "router_other", llm_names=artifact.llm_names, llm_vectors=artifact.llm_vectors,
        tokenizer_json=artifact.tokenizer_path, encoder_onnx=artifact.encoder_path, encoder=artifact.encoder,
        training={"split": {**record, "n_test_questions": 0}},
        training_questions=training_question_set(["a question from elsewhere"])), threads=1)
    page = build_report(router, table, tmp_path / "other.html").read_text("utf-8")
    assert _section_rows(page, "Router and data")["questions used"] == "60"
    assert ("Questions: none of these questions is among those the router learned from (its "
            "training_questions.npy).") in page
    assert "may include the router" not in page


def test_data_with_fewer_than_three_questions_the_router_did_not_learn_from_is_reported_whole(
    tiny_router_path: Path, tmp_path: Path
) -> None:
    # Without a test split the report reads the questions the router did not learn from; where those are fewer than
    # a report needs, it stopped with 'needs at least 3 questions, found 2' on data of 60 questions (while the same
    # data without its 2 new questions was reported whole): it reads them all, and says why.
    from jeirt_lite._training_questions import training_question_set

    artifact = load_artifact(tiny_router_path)
    folder = _write_folder(tmp_path / "data", list(artifact.llm_names), n=60, seed=3)
    texts = read_response_folder(folder).texts
    router = Router.load(save_artifact(
        tmp_path / "router", llm_names=artifact.llm_names, llm_vectors=artifact.llm_vectors,
        tokenizer_json=artifact.tokenizer_path, encoder_onnx=artifact.encoder_path, encoder=artifact.encoder,
        training_questions=training_question_set(list(texts[:58]))), threads=1)
    page = build_report(router, folder, tmp_path / "report.html").read_text("utf-8")
    assert _section_rows(page, "Router and data")["questions used"] == "60"
    assert ("only 2 of these 60 questions are ones the router did not learn from (its training_questions.npy), too "
            "few for a report: these questions may include the router&#x27;s training questions") in page


def test_a_router_with_an_added_llm_s_correction_gets_its_report(tmp_path: Path) -> None:
    # add-llm's feature correction needs the encoder's features to score; the onboarding section scored on vectors
    # alone and ended the report with "questions encoded elsewhere need the encoder's features too"
    base = Router.load(threads=1)
    data = _write_folder(tmp_path / "data", list(base.llms), n=60)
    texts = read_response_folder(data).texts
    rng = np.random.default_rng(1)
    labels = (rng.random(len(texts)) < 0.5).astype(np.int64)
    grown = base.add_llm("new-llm", texts, labels)
    assert grown.corrections is not None and grown.needs_features
    page = build_report(grown, data, tmp_path / "report.html").read_text(encoding="utf-8")
    assert "log-loss from 10 answers" in page


def test_the_note_on_unanswered_choices_names_the_cost_column_only_when_there_is_one() -> None:
    # A router without costs has no quality-cost table: the note named its column "own choice unanswered" anyway
    # (zeroeval router without costs: "router's pick has no answer here on 40.0% ... (the cost rules: column ...)").
    from jeirt_lite.analysis._routing_value import RoutingValue
    from jeirt_lite.analysis.report import _unanswered_note

    value = RoutingValue(n_questions=10, router=0.9, best_single=0.8, best_single_name="a", best_single_answered=10,
                         oracle=1.0, mean_llm=0.5, router_unanswered=0.4)
    assert "own choice unanswered" not in _unanswered_note(value)
    assert "on 40.0% of the questions; where" in _unanswered_note(value)
    value.curve, value.curve_unanswered = [("max P − λ·cost", 0.0, 0.9, 1.0)], [0.4]
    assert "(the cost rules: column 'own choice unanswered')" in _unanswered_note(value)
