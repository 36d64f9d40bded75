"""Load LLM correctness data into a `jeirt_lite_training.types.Dataset`.

Three layouts are understood:

* **folder**: the project's format, a directory with ``questions.csv`` (``question_id, benchmark, subject, text``),
  ``models.csv`` (``model_id, name``) and ``responses.csv`` (``question_id, model_id, correct``); extra columns are
  ignored.
* **long**: one table (``.csv``, ``.parquet`` or ``.jsonl``), a row per observed (question, LLM) cell with the
  question id, the question text, the LLM name and the label.
* **wide**: one table, a row per question with the id and text (and optionally subject/benchmark) columns and one
  column per LLM.

Labels are 0/1 or true/false (any case); an empty label is a missing cell, never a wrong answer. Duplicate
(LLM, question) cells are resolved by majority vote; a tie drops the cell. Bad rows (empty text, bad label, unknown
question or model id, conflicting texts for one question id) raise `DataError` naming the file and row, or are
skipped and counted in the `LoadReport` with ``skip_bad=True``. So is an LLM left without a single answer (refused,
or with ``skip_bad=True`` left out and listed).

Row numbers in messages are data row numbers, as every command gives them: 1-based, a CSV header and JSONL blank
lines not counted.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, Union

import numpy as np
import pandas as pd

from ._runtime import JeirtError, check_llm_names, counted, merge_repeated_cells
from .config import (  # the accepted column names, listed by `jeirt-lite train --help` (no pandas needed there)
    DEFAULT_BENCHMARK_COLUMNS,
    DEFAULT_CORRECT_COLUMNS,
    DEFAULT_LLM_COLUMNS,
    DEFAULT_QUESTION_COLUMNS,
    DEFAULT_SUBJECT_COLUMNS,
    DEFAULT_TEXT_COLUMNS,
)
from .data_rows import (
    ID_TYPES,
    ROW_NOTES,
    TEXT_TYPES,
    Columns,
    DataError,
    LazyDetail,
    LoadReport,
    RowChecker,
    as_str,
    named_llms,
    not_utf8_cells,
    parse_labels,
    read_frame,
    wrong_type,
)
from .types import Dataset, Responses

logger = logging.getLogger(__name__)

PathLike = Union[str, Path]
NOT_AN_LLM = (" (most of the column is no 0/1 answer: if it is not an LLM, remove it; a wide table's LLM columns are "
              "all besides id, text, subject and benchmark)")
Layout = Literal["auto", "folder", "long", "wide"]


def _pick(frame: pd.DataFrame, given: str | None, defaults: Sequence[str], role: str, file: str,
          required: bool = True) -> str | None:
    if given is not None:
        if given not in frame.columns:
            raise DataError(f"{file}: no column {given!r} for the {role} (columns: {list(frame.columns)})")
        return given
    for name in defaults:
        if name in frame.columns:
            return name
    if required:
        raise DataError(f"{file}: no {role} column; looked for {list(defaults)} (columns: {list(frame.columns)}); "
                        f"name it with --{role}-column (in Python: Columns({role}=...))")
    return None


# ---------------------------------------------------------------------------------------------------- shared steps


def _questions(qid: np.ndarray, text: np.ndarray, subject: np.ndarray, benchmark: np.ndarray, rows: np.ndarray,
               check: RowChecker, report: LoadReport) -> tuple[pd.DataFrame, np.ndarray]:
    """One row per question id in first-appearance order, plus the keep-mask over the input rows.

    Rows with an empty id or text are bad; an id given with two different texts is bad (all its rows).
    """
    keep = np.ones(len(qid), dtype=bool)
    keep &= check.check(keep & (qid == ""), rows, "empty question id", LazyDetail("question id is empty", qid))
    keep &= check.check(keep & (text == ""), rows, "empty question text",
                        LazyDetail("question {!r} has an empty text", qid))
    frame = pd.DataFrame({"qid": qid, "text": text, "subject": subject, "benchmark": benchmark, "row": rows})
    n_texts = frame[keep].groupby("qid", sort=False)["text"].transform("nunique").to_numpy()
    conflict = np.zeros(len(qid), dtype=bool)
    conflict[keep] = n_texts > 1
    if conflict.any():
        first_qid = qid[np.flatnonzero(conflict)[0]]
        where = frame.loc[conflict & (qid == first_qid), "row"].to_numpy()
        names = ", ".join(check.row_name(int(r)) for r in where[:4])
        keep &= check.check(conflict, rows, "conflicting texts for one question id",
                            LazyDetail("question {!r} has different texts (at " + names + ")", qid))
    unique = frame[keep].drop_duplicates("qid", keep="first")
    return unique.reset_index(drop=True), keep


def _typed(frame: pd.DataFrame, qcol: str, tcol: str, rows: np.ndarray, check: RowChecker,
           named: Sequence[tuple[str | None, str]] = ()) -> np.ndarray:
    """The keep-mask of a table's rows whose question id is a string or an integer and whose text is a string, and
    whose strings of those columns and the `named` ones ((column or None, what it holds)) are valid UTF-8."""
    keep = np.ones(len(rows), dtype=bool)
    for column, allowed, what in ((qcol, ID_TYPES, "question id"), (tcol, TEXT_TYPES, "text")):
        bad, names = wrong_type(frame[column], allowed)
        kinds = "a string or an integer" if allowed is ID_TYPES else "a string"
        keep &= check.check(keep & bad, rows, f"{what} not {kinds}",
                            LazyDetail(f"{what} {{!r}} is {{}}, not {kinds}", frame[column].to_numpy(), names))
    for column, what in ((qcol, "question id"), (tcol, "text"), *named):
        if column is not None:  # a JSONL string such as "\udcff": a JSON escape of no character
            keep &= check.check(keep & not_utf8_cells(frame[column]), rows, f"{what} not valid UTF-8",
                                LazyDetail(f"{column} = {{!r}} holds a lone surrogate (JSON's \\udcff), which is "
                                           "not UTF-8", frame[column].to_numpy()))
    return keep


def _looks_like_answers(values: pd.Series) -> bool:
    """Every value a label of the vocabulary (0/1, true/false) or empty, and at least one of them not empty."""
    _, empty, bad = parse_labels(values)
    return not bad.any() and not empty.all()


def _resolve_cells(q: np.ndarray, m: np.ndarray, label: np.ndarray, n_llms: int,
                   report: LoadReport) -> Responses:
    """Merge duplicate (question, LLM) rows by majority; ties are dropped and reported."""
    merged = merge_repeated_cells(q, m, label, n_llms)
    report.duplicate_cells += merged.repeated
    report.duplicate_rows += merged.extra_rows
    report.ties_dropped += merged.ties
    if merged.repeated:
        logger.warning("%s: %s given more than once; resolved by majority, %s dropped", report.source,
                       counted(merged.repeated, "(question, LLM) cell"), counted(merged.ties, "tie"))
    report.cells = len(merged.question)
    return Responses(question=merged.question, llm=merged.llm, correct=merged.correct.astype(np.float32))


def _strata(subject: np.ndarray, benchmark: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Subject falls back to the benchmark and vice versa; with neither, every question is in one stratum."""
    subject = np.where(subject == "", benchmark, subject)
    benchmark = np.where(benchmark == "", subject, benchmark)
    subject = np.where(subject == "", "all", subject)
    benchmark = np.where(benchmark == "", name, benchmark)
    return subject.astype(str), benchmark.astype(str)


# ----------------------------------------------------------------------------------------------------- the layouts


def _load_folder(folder: Path, name: str, skip_bad: bool, report: LoadReport) -> Dataset:
    q_path, m_path, r_path = folder / "questions.csv", folder / "models.csv", folder / "responses.csv"
    for p in (q_path, m_path, r_path):
        if not p.exists():
            raise DataError(f"{p}: missing (a data folder holds questions.csv, models.csv and responses.csv)")

    qf, _ = read_frame(q_path, skip_bad, report.skipped)
    for col in ("question_id", "text"):
        if col not in qf.columns:
            raise DataError(f"{q_path}: no {col!r} column (columns: {list(qf.columns)})")
    qcheck = RowChecker(str(q_path), "csv", skip_bad, report)
    qid = as_str(qf["question_id"])
    subject = as_str(qf["subject"]) if "subject" in qf.columns else np.full(len(qf), "", dtype=object)
    bench = as_str(qf["benchmark"]) if "benchmark" in qf.columns else np.full(len(qf), "", dtype=object)
    questions, qkeep = _questions(qid, as_str(qf["text"]), subject, bench, np.arange(len(qf)), qcheck, report)
    report.duplicate_question_rows += int(qkeep.sum() - len(questions))

    mf, _ = read_frame(m_path, skip_bad, report.skipped)
    for col in ("model_id", "name"):
        if col not in mf.columns:
            raise DataError(f"{m_path}: no {col!r} column (columns: {list(mf.columns)})")
    model_id, model_name = as_str(mf["model_id"]), as_str(mf["name"])
    model_name = np.where(model_name == "", model_id, model_name)
    for values, what in ((model_id, "model_id"), (model_name, "name")):
        dup = pd.Series(values).duplicated().to_numpy()
        if dup.any():
            i = int(np.flatnonzero(dup)[0])
            raise DataError(f"{m_path}: data row {i + 1} ({ROW_NOTES['csv']}): {what} {values[i]!r} appears twice")

    rf, _ = read_frame(r_path, skip_bad, report.skipped)
    for col in ("question_id", "model_id", "correct"):
        if col not in rf.columns:
            raise DataError(f"{r_path}: no {col!r} column (columns: {list(rf.columns)})")
    report.rows_read = len(rf)
    rcheck = RowChecker(str(r_path), "csv", skip_bad, report)
    rows = np.arange(len(rf))
    r_qid, r_mid = as_str(rf["question_id"]), as_str(rf["model_id"])
    q_index = pd.Index(questions["qid"]).get_indexer(r_qid)
    m_index = pd.Index(model_id).get_indexer(r_mid)
    keep = rcheck.check(q_index < 0, rows, "unknown question id",
                        LazyDetail("question id {!r} is not in questions.csv", r_qid))
    keep &= rcheck.check(keep & (m_index < 0), rows, "unknown model id",
                         LazyDetail("model id {!r} is not in models.csv", r_mid))
    label, empty, bad = parse_labels(rf["correct"])
    keep &= rcheck.check(keep & bad, rows, "label not 0/1/true/false",
                         LazyDetail("correct = {!r}", rf["correct"].to_numpy()))
    report.empty_labels += int((keep & empty).sum())
    keep &= ~empty
    responses = _resolve_cells(q_index[keep], m_index[keep], label[keep], len(model_id), report)
    return _dataset(name, questions, [str(x) for x in model_name], responses, str(r_path), skip_bad, report)


def _load_long(frame: pd.DataFrame, kind: str, file: str, name: str, cols: Columns, skip_bad: bool,
               report: LoadReport) -> Dataset:
    qcol = _pick(frame, cols.question, DEFAULT_QUESTION_COLUMNS, "question", file)
    tcol = _pick(frame, cols.text, DEFAULT_TEXT_COLUMNS, "text", file)
    lcol = _pick(frame, cols.llm, DEFAULT_LLM_COLUMNS, "llm", file)
    ccol = _pick(frame, cols.correct, DEFAULT_CORRECT_COLUMNS, "correct", file)
    scol = _pick(frame, cols.subject, DEFAULT_SUBJECT_COLUMNS, "subject", file, required=False)
    bcol = _pick(frame, cols.benchmark, DEFAULT_BENCHMARK_COLUMNS, "benchmark", file, required=False)
    assert qcol and tcol and lcol and ccol
    report.rows_read = len(frame)
    check = RowChecker(file, kind, skip_bad, report)
    rows = np.arange(len(frame))
    empty_col = np.full(len(frame), "", dtype=object)
    qid, llm = as_str(frame[qcol]), as_str(frame[lcol])
    keep = _typed(frame, qcol, tcol, rows, check, [(lcol, "LLM name"), (scol, "subject"), (bcol, "benchmark")])
    keep &= check.check(keep & (llm == ""), rows, "empty LLM name", LazyDetail("LLM name is empty", llm))
    label, empty, bad = parse_labels(frame[ccol])
    keep &= check.check(keep & bad, rows, "label not 0/1/true/false",
                        LazyDetail("{} = {!r}", np.full(len(frame), ccol, dtype=object),
                                    frame[ccol].to_numpy()))
    subject = as_str(frame[scol]) if scol else empty_col
    bench = as_str(frame[bcol]) if bcol else empty_col
    sub = np.flatnonzero(keep)
    questions, qkeep = _questions(qid[sub], as_str(frame[tcol])[sub], subject[sub], bench[sub], rows[sub],
                                  check, report)
    keep[sub] = qkeep
    report.empty_labels += int((keep & empty).sum())
    # Every LLM a good row names is an LLM of the data, answered or not: one whose labels are all empty is refused
    # (or left out) by _dataset, as in the other layouts, rather than vanish unseen.
    llm_codes, llm_names = pd.factorize(pd.Series(llm[keep]), sort=False)
    labelled = ~empty[keep]
    keep &= ~empty
    q_index = pd.Index(questions["qid"]).get_indexer(qid[keep])
    responses = _resolve_cells(q_index, llm_codes[labelled], label[keep], len(llm_names), report)
    return _dataset(name, questions, [str(x) for x in llm_names], responses, file, skip_bad, report)


def _load_wide(frame: pd.DataFrame, kind: str, file: str, name: str, cols: Columns, skip_bad: bool,
               report: LoadReport) -> Dataset:
    qcol = _pick(frame, cols.question, DEFAULT_QUESTION_COLUMNS, "question", file)
    tcol = _pick(frame, cols.text, DEFAULT_TEXT_COLUMNS, "text", file)
    scol = _pick(frame, cols.subject, DEFAULT_SUBJECT_COLUMNS, "subject", file, required=False)
    bcol = _pick(frame, cols.benchmark, DEFAULT_BENCHMARK_COLUMNS, "benchmark", file, required=False)
    meta = {c for c in (qcol, tcol, scol, bcol) if c}
    for column, role, given in ((scol, "subject", cols.subject), (bcol, "benchmark", cols.benchmark)):
        if column and given is None and cols.llm_columns is None and _looks_like_answers(frame[column]):
            logger.warning("%s: column %r is read as the %s, though it holds only 0/1 answers; if it is an LLM, "
                           "rename it (a wide table's LLM columns are those besides id, text, subject and "
                           "benchmark)", file, column, role)
    llm_cols = list(cols.llm_columns) if cols.llm_columns is not None else [c for c in frame.columns if c not in meta]
    missing = [c for c in llm_cols if c not in frame.columns]
    if missing:
        raise DataError(f"{file}: LLM columns {missing} not in the table")
    if not llm_cols:
        raise DataError(f"{file}: no LLM columns (a wide table has one column per LLM besides id and text)")
    check = RowChecker(file, kind, skip_bad, report)
    n = len(frame)
    rows = np.arange(n)
    empty_col = np.full(n, "", dtype=object)
    subject = as_str(frame[scol]) if scol else empty_col
    bench = as_str(frame[bcol]) if bcol else empty_col
    assert qcol and tcol
    qid = as_str(frame[qcol])
    # The rows kept so far only, as in the long layout: a skipped row's value may be no string pandas can hold.
    sub = np.flatnonzero(_typed(frame, qcol, tcol, rows, check, [(scol, "subject"), (bcol, "benchmark")]))
    questions, sub_keep = _questions(qid[sub], as_str(frame[tcol])[sub], subject[sub], bench[sub], rows[sub], check,
                                     report)
    qkeep = np.zeros(n, dtype=bool)
    qkeep[sub] = sub_keep
    report.duplicate_question_rows += int(qkeep.sum() - len(questions))
    q_index = np.full(n, -1)  # -1 for skipped rows
    q_index[qkeep] = pd.Index(questions["qid"]).get_indexer(qid[qkeep])

    # Column-major cells: cell c belongs to LLM c // n and row c % n.
    labels = pd.concat([frame[c].reset_index(drop=True) for c in llm_cols], ignore_index=True)
    report.rows_read = len(labels)
    label, empty, bad = parse_labels(labels)
    cell_row = np.tile(rows, len(llm_cols))
    cell_llm = np.repeat(np.arange(len(llm_cols)), n)
    keep = np.tile(qkeep, len(llm_cols))
    col_names = np.asarray([str(c) for c in llm_cols], dtype=object)[cell_llm]
    # A column mostly of other values is likely no LLM's (an answer key, a source, a saved index): say how to leave
    # it out. A typo in an LLM's column gets no such note.
    answers = np.bincount(cell_llm, weights=~(bad | empty), minlength=len(llm_cols))
    notes = np.where(np.bincount(cell_llm, weights=bad, minlength=len(llm_cols)) > answers, NOT_AN_LLM, "")[cell_llm]
    keep &= check.check(keep & bad, cell_row, "label not 0/1/true/false",
                        LazyDetail("column {!r} = {!r}{}", col_names, labels.to_numpy(), notes))
    report.empty_labels += int((keep & empty).sum())
    keep &= ~empty
    responses = _resolve_cells(q_index[cell_row[keep]], cell_llm[keep], label[keep], len(llm_cols), report)
    return _dataset(name, questions, [str(c) for c in llm_cols], responses, file, skip_bad, report)


def _answered_llms(llm_names: list[str], responses: Responses, file: str, skip_bad: bool,
                   report: LoadReport) -> tuple[list[str], Responses]:
    """The LLMs with at least one answer left, and their cells renumbered.

    A router cannot learn an LLM from no answers: it would rate it on its initial vector and route to it on an
    ability nobody measured. So an LLM whose every cell is empty, skipped or a tie is refused, or with skip_bad left
    out and listed in the report.
    """
    answered = np.bincount(responses.llm, minlength=len(llm_names)) > 0
    if answered.all():
        return llm_names, responses
    silent = [llm_names[i] for i in np.flatnonzero(~answered)]
    if not skip_bad:
        llms = f"{counted(len(silent), 'LLM')} ({named_llms(silent)})"
        raise DataError(f"{file}: no answers from {llms}: not one labelled cell (or only ties between repeated rows), "
                        "and a router cannot learn an LLM from no answers; give its answers, or leave it out of the data")
    report.llms_left_out += silent
    new_index = np.cumsum(answered) - 1
    kept = [n for n, a in zip(llm_names, answered) if a]
    return kept, Responses(responses.question, new_index[responses.llm], responses.correct)


def _dataset(name: str, questions: pd.DataFrame, llm_names: list[str], responses: Responses, file: str,
             skip_bad: bool, report: LoadReport) -> Dataset:
    if len(responses.question) == 0:  # a header alone, or every row bad and skipped, or every answer empty
        raise DataError(f"{file}: no answers to learn from ({report.rows_read} rows read; a router needs LLMs' "
                        "answers to questions)")
    llm_names, responses = _answered_llms(llm_names, responses, file, skip_bad, report)
    try:  # the names a router can hold, checked now rather than when the trained router is saved
        check_llm_names(llm_names, file)
    except JeirtError as error:
        raise DataError(str(error)) from None
    subject, bench = _strata(questions["subject"].to_numpy(dtype=object), questions["benchmark"].to_numpy(dtype=object),
                             name)
    return Dataset(
        name=name,
        question_ids=[str(x) for x in questions["qid"]],
        texts=[str(x) for x in questions["text"]],
        benchmarks=bench,
        subjects=subject,
        llm_names=llm_names,
        responses=responses,
    )


# ------------------------------------------------------------------------------------------------------ public API


def load_dataset_with_report(path: PathLike, *, layout: Layout = "auto", columns: Columns | None = None,
                             skip_bad: bool = False, name: str | None = None) -> tuple[Dataset, LoadReport]:
    """Load a data folder or a long/wide table; return the Dataset and what loading merged or skipped.

    Args:
        path: a folder (questions.csv, models.csv, responses.csv) or a .csv/.parquet/.jsonl table.
        layout: "auto" picks folder for a directory, long when the table has an LLM and a correct column,
            wide when it has neither (one without the other is refused).
        columns: column names for tables (defaults: question_id, text, llm/model, correct, subject, benchmark).
        skip_bad: skip and count bad rows instead of raising `DataError`.
        name: the Dataset's name (default: the folder name or file stem).

    >>> data, report = load_dataset_with_report("data/mmlu_pro")  # doctest: +SKIP
    """
    p = Path(path)
    cols = columns or Columns()
    if p.is_dir() or layout == "folder":
        if any(getattr(cols, role) is not None for role in ("question", "text", "llm", "correct")):
            raise DataError(f"{p}: a data folder's files have fixed column names (docs/guide/training-data.md); "
                            "the column options name the columns of one table")
        report = LoadReport(source=str(p), layout="folder")
        return _load_folder(p, name or p.name, skip_bad, report), report
    unreadable: dict[str, int] = {}
    frame, kind = read_frame(p, skip_bad, unreadable)
    if layout == "auto":
        layout = _table_layout(frame, cols, str(p))
    report = LoadReport(source=str(p), layout=layout, skipped=unreadable)
    loader = _load_long if layout == "long" else _load_wide
    return loader(frame, kind, str(p), name or p.stem, cols, skip_bad, report), report


def _table_layout(frame: pd.DataFrame, cols: Columns, file: str) -> Layout:
    """long with an LLM and a correct column, wide with neither. One without the other is refused: read as wide, it
    would become an LLM of its own (a long table whose LLM column was forgotten, a router of one LLM "correct")."""
    llm = _pick(frame, cols.llm, DEFAULT_LLM_COLUMNS, "llm", file, required=False)
    correct = _pick(frame, cols.correct, DEFAULT_CORRECT_COLUMNS, "correct", file, required=False)
    if (llm is None) == (correct is None):
        return "wide" if llm is None else "long"
    found, missing, flag, names = (("an LLM", "correct", "correct", DEFAULT_CORRECT_COLUMNS) if correct is None
                                   else ("a correct", "LLM", "llm", DEFAULT_LLM_COLUMNS))
    raise DataError(f"{file}: {found} column ({llm or correct!r}) but no {missing} column: a long table needs both "
                    f"(looked for {list(names)}; name it with --{flag}-column), a wide table neither (one 0/1 column "
                    "per LLM)")


def load_dataset(path: PathLike, *, layout: Layout = "auto", columns: Columns | None = None,
                 skip_bad: bool = False, name: str | None = None) -> Dataset:
    """Load a data folder or a long/wide table (see `load_dataset_with_report` for the arguments).

    >>> data = load_dataset("data/mmlu_pro")  # doctest: +SKIP
    >>> data.n_llms, data.n_questions  # doctest: +SKIP
    (32, 10801)
    """
    data, _ = load_dataset_with_report(path, layout=layout, columns=columns, skip_bad=skip_bad, name=name)
    return data
