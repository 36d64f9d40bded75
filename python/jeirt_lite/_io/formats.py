"""The registry of file formats: suffix -> reader class, writer class. Every command finds its format here.

To add a table format: a `records.RecordReader` subclass, a `writers.Writer` subclass, and one row below.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from .._errors import JeirtError
from .records import CsvRecords, JsonlRecords, ParquetRecords, RecordReader, TsvRecords
from .texts import QuestionTable, TextReader, read_questions
from .vectors import VectorReader
from .vocabulary import TEXT_COLUMN
from .writers import CsvWriter, JsonlWriter, ParquetWriter, TsvWriter, Writer


@dataclass(frozen=True)
class Format:
    name: str
    suffixes: tuple[str, ...]  # lower case, with the dot
    records: type[RecordReader]
    writer: type[Writer]


FORMATS = (
    Format("csv", (".csv",), CsvRecords, CsvWriter),
    Format("tsv", (".tsv",), TsvRecords, TsvWriter),
    Format("jsonl", (".jsonl", ".ndjson"), JsonlRecords, JsonlWriter),
    Format("parquet", (".parquet", ".pq"), ParquetRecords, ParquetWriter),
)


@dataclass(frozen=True)
class VectorFormat:
    """A file format of precomputed question vectors (`score --vectors`): one (N, d) array."""

    name: str
    suffixes: tuple[str, ...]
    reader: type[VectorReader]


VECTOR_FORMATS = (VectorFormat("npy", (".npy",), VectorReader),)

_BY_SUFFIX = {suffix: fmt for fmt in FORMATS for suffix in fmt.suffixes}
_BY_NAME = {fmt.name: fmt for fmt in FORMATS}


COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz", ".zst", ".zip")


def known_suffixes() -> str:
    """The table suffixes, for help texts: ".csv, .tsv, .jsonl, .ndjson, .parquet, .pq"."""
    return ", ".join(suffix for fmt in FORMATS for suffix in fmt.suffixes)


def table_format(path: Path, what: str = "input") -> Format:
    """The format of a table file, from its suffix."""
    fmt = _BY_SUFFIX.get(path.suffix.lower())
    if fmt is None:
        known = ", ".join(sorted(_BY_SUFFIX))
        if path.is_dir():  # a data folder, as `train --data` takes, where a table file goes
            raise JeirtError(f"{path}: is a folder, not a table file (use one of {known})")
        inner = Path(path.stem).suffix.lower()
        if path.suffix.lower() in COMPRESSED_SUFFIXES and inner in _BY_SUFFIX:
            raise JeirtError(f"{path}: a compressed {what} ({path.suffix}) is not read; decompress it first (e.g. to "
                             f"{path.stem}), or write Parquet, which compresses by itself")
        raise JeirtError(
            f"{path}: cannot tell the {what} format from the suffix {path.suffix!r} (use one of {known})"
        )
    return fmt


def format_of(path: Path, what: str = "input") -> str:
    """'csv', 'tsv', 'jsonl' or 'parquet' from the file's suffix."""
    return table_format(path, what).name


def check_input_file(path: Path, what: str = "question bank") -> None:
    if not path.exists():
        raise JeirtError(f"{path}: no such file")
    if path.is_dir():
        raise JeirtError(f"{path}: is a folder, not a {what} file")


def open_text_reader(
    path: Path,
    *,
    text_column: Optional[str] = None,
    id_column: Optional[str] = None,
    chunk_size: int = 4096,
    skip_bad: bool = False,
    label_column: Optional[str] = None,
    read_ids: bool = True,
    llm_rows: Optional[tuple[str, str]] = None,
    group_column: Optional[str] = None,
) -> TextReader:
    """A chunked reader of question texts and ids (and labels) from any table format, chosen by the suffix;
    `text_column` None: the first of `TEXT_COLUMNS` in the table; `llm_rows` (column, name): only the rows of that
    LLM; `group_column`: each row's group value, read as text, into the chunks' `groups`."""
    fmt = table_format(path)
    check_input_file(path)
    try:
        return TextReader(path, fmt.records, text_column, id_column, chunk_size, skip_bad, label_column, read_ids,
                          llm_rows, group_column)
    except OSError as err:
        raise JeirtError(f"{path}: cannot read it ({err.strerror or err})") from err


def open_vector_reader(
    path: Path, dim: int, chunk_size: int, skip_bad: bool, ids_path: Optional[Path] = None
) -> VectorReader:
    """A chunked reader of (N, dim) question vectors, its format chosen by the file's suffix."""
    fmt = next((fmt for fmt in VECTOR_FORMATS if path.suffix.lower() in fmt.suffixes), None)
    if fmt is None:
        known = ", ".join(suffix for fmt in VECTOR_FORMATS for suffix in fmt.suffixes)
        raise JeirtError(f"{path}: question vectors must be a {known} file holding an (N, d) array")
    return fmt.reader(path, dim, chunk_size, skip_bad, ids_path)


def open_writer(
    path: Path, fmt: str, k: int, llm_names: Sequence[str], all_probabilities: bool, id_type: object = None,
    fallback: bool = False,
) -> Writer:
    """A scored-bank writer for the format named `fmt`; `id_type` is the input's Arrow id type, when known;
    `fallback`: with the `fallback` column (routing by a minimum probability)."""
    return _BY_NAME[fmt].writer(path, k, llm_names, all_probabilities, id_type, fallback)


def read_question_table(
    path: Path,
    text_column: str = TEXT_COLUMN,
    label_column: Optional[str] = None,
    id_column: Optional[str] = None,
    read_ids: bool = True,
) -> QuestionTable:
    """All texts (and labels) and ids of a table file of any format; bad rows stop. `read_ids=False` (add-llm,
    which keeps no id): no id column is read or checked, the rows are named by their numbers."""
    return read_questions(
        open_text_reader(path, text_column=text_column, id_column=id_column, label_column=label_column,
                         read_ids=read_ids)
    )
