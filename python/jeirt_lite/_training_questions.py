"""Which questions a router learned from: training_questions.npy in the router folder.

A new LLM's answers to questions the router was trained on say less about the router's geometry than answers to
unseen questions: on its training questions the question vectors were fitted to the other LLMs' answers, so a
correction's residuals there understate what the geometry misses elsewhere; `add_llm` needs to know which
answered questions the router learned from. The router therefore keeps a compact record of its training questions: a sorted, duplicate-free uint64 array, one 8-byte hash per distinct question text, the text
normalised the way training groups identical texts (`normalise_question`: whitespace runs collapsed), so the
same question written with other spacing counts as seen. The texts themselves are not stored.

The file is optional (older routers lack it: which answers are on training questions is then unknown), listed in router.json's files with its sha256 like every other file, and validated at load.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from ._errors import JeirtError

TRAINING_QUESTIONS_FILE = "training_questions.npy"
TRAINING_QUESTIONS_ROLE = "training_questions"
_DTYPE = np.dtype("<u8")


def normalise_question(text: str) -> str:
    """The identity of a question text: its words joined by single spaces (jeirt_lite_training.splits groups texts by it)."""
    return " ".join(str(text).split())


def question_hash(text: str) -> int:
    """The first 8 bytes of the sha256 of the normalised UTF-8 text, as a little-endian unsigned integer."""
    digest = hashlib.sha256(normalise_question(text).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "little")


def question_hashes(texts: Iterable[str]) -> np.ndarray:
    """One hash per text, in order (uint64)."""
    return np.fromiter((question_hash(t) for t in texts), dtype=_DTYPE)


def training_question_set(texts: Iterable[str]) -> np.ndarray:
    """What training_questions.npy holds for a router trained on `texts`: their distinct hashes, sorted."""
    return np.unique(question_hashes(texts))


def seen_mask(record: np.ndarray, texts: Iterable[str]) -> np.ndarray:
    """(n,) bool: which of `texts` are among the questions of `record` (a sorted hash array)."""
    hashes = question_hashes(texts)
    if record.size == 0:
        return np.zeros(hashes.shape[0], dtype=bool)
    at = np.minimum(np.searchsorted(record, hashes), record.size - 1)
    found: np.ndarray = record[at] == hashes
    return found


def check_record(array: object, where: str) -> np.ndarray:
    """A valid record (1-D uint64, strictly increasing), read-only; anything else is an error naming `where`."""
    record = np.asarray(array)
    if record.ndim != 1 or record.dtype != _DTYPE:
        raise JeirtError(
            f"{where}: the training questions must be a 1-D little-endian uint64 array, got {record.dtype} with "
            f"shape {record.shape}"
        )
    if record.size > 1 and not bool(np.all(record[1:] > record[:-1])):
        raise JeirtError(f"{where}: the training question hashes must be sorted and distinct")
    record = np.ascontiguousarray(record)
    record.setflags(write=False)
    return record


def write_record(path: Path, record: np.ndarray) -> None:
    np.save(path, check_record(record, str(path)), allow_pickle=False)


def read_record(path: Path) -> np.ndarray:
    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError, SyntaxError) as err:  # SyntaxError: NumPy parsing a damaged descr
        raise JeirtError(f"{path}: not a readable .npy file ({err})") from err
    return check_record(array, str(path))
