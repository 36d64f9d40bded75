"""Read a data folder in the project format (questions.csv, models.csv, responses.csv) with the I/O wing.

The runtime has no pandas; this is a small, strict reader for the report: questions with their subject, LLM names,
and observed (question, LLM, correct) cells. An absent cell is missing, never wrong. It reads a folder as training's
loader does (jeirt_lite_training.data): the same row numbers in its messages, a question id given two texts and a
model id or name given twice refused, a cell given more than once counted by its majority.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

from .._errors import JeirtError
from .._io.cells import merge_repeated_cells
from .._io.records import CsvRecords
from .._io.tables import Table, read_table
from .._io.vocabulary import label_missing, label_of

DATA_FILES = ("questions.csv", "models.csv", "responses.csv")
CSV_ROWS = CsvRecords.row_note


@dataclass(frozen=True)
class ResponseData:
    question_ids: list[str]
    texts: list[str]
    subjects: np.ndarray  # str per question (the benchmark where the subject is empty)
    llm_names: list[str]
    question: np.ndarray  # int64 per cell
    llm: np.ndarray  # int64 per cell
    correct: np.ndarray  # float64 per cell, 0 or 1

    @property
    def n_questions(self) -> int:
        return len(self.texts)

    def error_rates(self) -> np.ndarray:
        """Share of observed LLMs that answered each question wrongly; NaN where no cell was observed."""
        counts = np.bincount(self.question, minlength=self.n_questions)
        right = np.bincount(self.question, weights=self.correct, minlength=self.n_questions)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(counts > 0, 1.0 - right / np.maximum(counts, 1), np.nan)

    def subset(self, rows: np.ndarray) -> ResponseData:
        """The questions `rows` (in that order) and their cells."""
        rows = np.asarray(rows, dtype=np.int64)
        new_index = np.full(self.n_questions, -1, dtype=np.int64)
        new_index[rows] = np.arange(rows.size)
        keep = new_index[self.question] >= 0
        return ResponseData(
            [self.question_ids[i] for i in rows], [self.texts[i] for i in rows], self.subjects[rows],
            self.llm_names, new_index[self.question[keep]], self.llm[keep], self.correct[keep],
        )


def _table(path: Path, needed: Sequence[str]) -> Table:
    if not path.is_file():
        raise JeirtError(f"{path}: missing (a data folder holds questions.csv, models.csv and responses.csv)")
    return read_table(path, required=needed)


def _where(table: Table, i: int) -> str:
    """Row i of a data folder's CSV file, numbered as every reader numbers data rows, training's included."""
    return f"{table.path}: data row {table.rows[i]} ({CSV_ROWS})"


def _questions(table: Table) -> tuple[dict[str, int], list[str], list[str], list[str]]:
    """Each question id's index, the ids, texts and subjects; a repeated id must repeat its text (training refuses
    one given two texts alike)."""
    index: dict[str, int] = {}
    ids: list[str] = []
    texts: list[str] = []
    subjects: list[str] = []
    for i, row in enumerate(table.records()):
        qid, text = row["question_id"].strip(), row["text"].strip()
        if not qid or not text:
            raise JeirtError(f"{_where(table, i)}: empty question id or text")
        if qid in index:
            if texts[index[qid]] != text:
                raise JeirtError(f"{_where(table, i)}: question {qid!r} has another text than in an earlier row")
            continue
        index[qid] = len(ids)
        ids.append(qid)
        texts.append(text)
        subjects.append((row.get("subject") or "").strip() or (row.get("benchmark") or "").strip() or "all")
    return index, ids, texts, subjects


def _llms(table: Table) -> tuple[dict[str, int], list[str]]:
    """Each model id's index and the LLM names (the id where the name is empty); neither may repeat."""
    records = table.records()
    ids = [row["model_id"].strip() for row in records]
    names = [row["name"].strip() or model_id for row, model_id in zip(records, ids)]
    for values, what in ((ids, "model_id"), (names, "name")):
        seen: set[str] = set()
        for i, value in enumerate(values):
            if value in seen:
                raise JeirtError(f"{_where(table, i)}: {what} {value!r} appears twice")
            seen.add(value)
    return {model_id: i for i, model_id in enumerate(ids)}, names


def read_response_folder(folder: Path, question_ids: Optional[Sequence[str]] = None) -> ResponseData:
    """Read a data folder as training reads it (a cell given more than once counts by majority, a tie not at all);
    with `question_ids`, keep only those questions (e.g. a router's test split)."""
    folder = Path(folder)
    index, ids, texts, subjects = _questions(_table(folder / "questions.csv", ("question_id", "text")))
    llm_of, names = _llms(_table(folder / "models.csv", ("model_id", "name")))
    q_cells: list[int] = []
    m_cells: list[int] = []
    y_cells: list[float] = []
    responses = _table(folder / "responses.csv", ("question_id", "model_id", "correct"))
    for i, row in enumerate(responses.records()):
        label = row["correct"].strip().lower()
        if label_missing(label):
            continue
        correct = label_of(label)
        if correct is None:
            raise JeirtError(f"{_where(responses, i)}: correct = {label!r} is not 0/1")
        q, m = index.get(row["question_id"].strip()), llm_of.get(row["model_id"].strip())
        if q is None or m is None:
            raise JeirtError(f"{_where(responses, i)}: unknown question or model id")
        q_cells.append(q)
        m_cells.append(m)
        y_cells.append(float(correct))
    cells = merge_repeated_cells(np.asarray(q_cells, dtype=np.int64), np.asarray(m_cells, dtype=np.int64),
                                 np.asarray(y_cells, dtype=np.float64), len(names))
    data = ResponseData(ids, texts, np.asarray(subjects, dtype=object), names, cells.question, cells.llm,
                        cells.correct)
    return only_questions(data, question_ids, folder)


def only_questions(data: ResponseData, question_ids: Optional[Sequence[str]], source: Path) -> ResponseData:
    """The questions `question_ids` of `data` (each once, in the order given), all of them when None; an id that is
    not in `data` is an error."""
    if question_ids is None:
        return data
    index = {qid: i for i, qid in enumerate(data.question_ids)}
    wanted = [str(q).strip() for q in question_ids if str(q).strip()]
    unknown = [q for q in wanted if q not in index]
    if unknown:
        raise JeirtError(f"{len(unknown)} of the given question ids are not in {source} (first: {unknown[0]!r})")
    return data.subset(np.asarray([index[q] for q in dict.fromkeys(wanted)], dtype=np.int64))


def stratified_sample(subjects: np.ndarray, size: int, seed: int = 0) -> np.ndarray:
    """Row indices of a seeded sample of about `size` questions, each subject in proportion (sorted)."""
    n = len(subjects)
    if size >= n:
        return np.arange(n)
    rng = np.random.default_rng(seed)
    chosen = []
    for name in sorted(set(np.asarray(subjects).astype(str).tolist())):
        members = np.flatnonzero(np.asarray(subjects).astype(str) == name)
        take = max(1, int(round(size * members.size / n)))
        chosen.append(rng.choice(members, min(take, members.size), replace=False))
    return np.sort(np.concatenate(chosen))
