"""Typed stub for the Rust extension ``jeirt_lite._core`` (see rust/src/python/).

All kernels take C-contiguous float32 2-D arrays (questions ``(N, d)``, llms ``(K, d)``), read them without
copying, release the GIL, and raise :class:`JeirtError` on bad input. ``threads = 0`` means all cores.
For question q and LLM m: ``logit = q.m/|q| - |q|`` (0 when ``q`` is the zero vector), ``P = sigmoid(logit)``.
Optional ``offsets`` ``(N, K)`` are added to each logit before the calibration ``scale``/``bias``.
"""

from typing import final

import numpy as np
import numpy.typing as npt

__all__ = [
    "JeirtError",
    "probabilities",
    "top_k",
    "mean_probability",
    "build_profile",
    "simd_level",
    "available_cores",
    "StaticEncoder",
    "top_k_bf16",
    "bf16_supported",
    "multiply_add_peak",
    "EmbedJob",
    "embed_start",
    "CsvParser",
    "format_score_rows",
    "VoteTable",
]

class JeirtError(ValueError):
    """Bad input to a kernel: shapes, NaN/inf rows (named), k, threads."""

def probabilities(
    questions: npt.NDArray[np.float32],
    llms: npt.NDArray[np.float32],
    threads: int,
    scale: npt.NDArray[np.float32] | None = None,
    bias: npt.NDArray[np.float32] | None = None,
    offsets: npt.NDArray[np.float32] | None = None,
    bfloat16: bool = False,
) -> npt.NDArray[np.float32]:
    """P(correct) for every pair: float32 ``(N, K)``; with scale/bias ``sigmoid(scale * logit + bias)``. With
    ``bfloat16``, logits from bfloat16 products (within about 1e-3 of float32's on the shipped router's real
    questions, more for larger vectors; float32 kernel where the CPU lacks AVX-512 BF16, and with offsets)."""

def top_k(
    questions: npt.NDArray[np.float32],
    llms: npt.NDArray[np.float32],
    k: int,
    threads: int,
    scale: npt.NDArray[np.float32] | None = None,
    bias: npt.NDArray[np.float32] | None = None,
    penalty: npt.NDArray[np.float32] | None = None,
    offsets: npt.NDArray[np.float32] | None = None,
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.float32]]:
    """The k most likely-correct LLMs per question, best first, ties by lower index: ``(N, k)`` each.

    With ``penalty`` the key is ``P - penalty`` instead of the logit."""

def mean_probability(
    questions: npt.NDArray[np.float32],
    llms: npt.NDArray[np.float32],
    threads: int,
    scale: npt.NDArray[np.float32] | None = None,
    bias: npt.NDArray[np.float32] | None = None,
    offsets: npt.NDArray[np.float32] | None = None,
) -> npt.NDArray[np.float32]:
    """Mean P(correct) per LLM over the questions (float64 sums): float32 ``(K,)``; N = 0 raises."""

def top_k_bf16(
    questions: npt.NDArray[np.float32],
    llms: npt.NDArray[np.float32],
    k: int,
    threads: int,
    scale: npt.NDArray[np.float32] | None = None,
    bias: npt.NDArray[np.float32] | None = None,
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.float32]]:
    """``top_k`` ranked with bfloat16 products, the chosen k scored again exactly (float32 kernel where the CPU
    lacks AVX-512 BF16)."""

def bf16_supported() -> bool:
    """Whether this CPU has AVX-512 BF16."""

def multiply_add_peak(seconds: float) -> tuple[float, float | None]:
    """One core's measured peak in GFLOP/s: float32 FMA at the detected SIMD level, bfloat16 or None."""

def build_profile() -> str:
    """``"release"`` or ``"debug"``."""

def simd_level() -> str:
    """The code path on this CPU: ``"avx512f"``, ``"avx2+fma"`` or ``"portable"``."""

def available_cores() -> int:
    """The cores this process may run on: its CPU affinity and its cgroup's CPU quota (a container's CPU limit)."""

@final
class StaticEncoder:
    """A static router's tokenizer (BERT WordPiece, ids equal to Hugging Face ``tokenizers``'), token table and
    adapter: texts to question vectors in Rust, the GIL released (see jeirt_lite._static_path)."""

    def __new__(
        cls,
        vocab: list[tuple[str, int]],
        unk_id: int,
        continuation_prefix: str,
        max_input_chars_per_word: int,
        added_tokens: list[tuple[str, int]],
        clean_text: bool,
        handle_chinese_chars: bool,
        strip_accents: bool,
        lowercase: bool,
        cls_id: int,
        sep_id: int,
        max_length: int,
        table: npt.NDArray[np.float32],
        w1: npt.NDArray[np.float32],
        b1: npt.NDArray[np.float32],
        w2: npt.NDArray[np.float32],
        b2: npt.NDArray[np.float32],
    ) -> StaticEncoder: ...
    def token_ids(self, texts: list[str]) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]:
        """``(ids, offsets)``: text i's ids (``[CLS]`` and ``[SEP]`` included) are ``ids[offsets[i]:offsets[i+1]]``."""

    def embed(self, texts: list[str], threads: int) -> npt.NDArray[np.float32]:
        """Question vectors, float32 ``(N, dim)``; ``threads = 0`` means all cores."""

    def embed_with_features(
        self, texts: list[str], threads: int
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
        """Question vectors ``(N, dim)`` and the encoder's features ``(N, embedding_dim)`` (the adapter's input: the
        L2-normalised mean of the token rows), float32; ``threads = 0`` means all cores."""

@final
class EmbedJob:
    """One chunk of texts being encoded on the Rust pool (``embed_start``); ``wait_all`` returns its outputs."""

    def wait_all(
        self,
    ) -> tuple[
        npt.NDArray[np.float32],
        npt.NDArray[np.float32] | None,
        npt.NDArray[np.float32] | None,
        npt.NDArray[np.float32] | None,
    ]:
        """``(vectors, features, vote sums, vote weights)``, the last three None where not asked for; once only."""

def embed_start(
    encoder: StaticEncoder,
    texts: list[str],
    threads: int,
    features: bool = False,
    votes: VoteTable | None = None,
    k: int = 1,
    temperature: float | None = None,
    candidates: int = 0,
) -> EmbedJob:
    """Start encoding ``texts`` on the pool of ``threads`` workers (0: every core) and return at once; with
    ``features`` the job keeps the encoder's features, with ``votes`` it computes each row's vote sums too."""

@final
class VoteTable:
    """A router's stored questions for the neighbour votes' search (rust/src/votes/)."""

    def __new__(
        cls,
        keys: npt.NDArray[np.float32],
        answers: npt.NDArray[np.int8],
        projection: npt.NDArray[np.float32],
        centre: npt.NDArray[np.float32] | None = None,
        query_map: npt.NDArray[np.float32] | None = None,
    ) -> VoteTable:
        """``keys`` (n, p) unit rows, ``answers`` (n, K) 1/0/-1, ``projection`` (p, dims) (dims 0: no coarse pass);
        with ``centre`` (f,) and ``query_map`` (f, p), queries of f features are mapped to the keys' space first."""

    def sums(
        self, queries: npt.NDArray[np.float32], k: int, temperature: float | None, candidates: int, threads: int
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
        """Per query and LLM, (weighted sum of answers, sum of weights) over the first ``k`` answered of the ``2k``
        nearest keys, each ``(rows, K)``; ``candidates`` keys kept per query by the coarse pass (``>= n``: exact)."""

@final
class CsvParser:
    """A strict CSV/TSV parser fed block by block (see jeirt_lite._io.records.CsvRecords): the records, blank
    lines, line numbers and errors of Python's ``csv.reader(..., strict=True)`` over the same bytes."""

    def __new__(cls, delimiter: str, max_record_bytes: int) -> CsvParser:
        """A record longer than ``max_record_bytes`` (its line ends inside quotes counted, the one ending it not) is
        the error that ends the file, its text starting ``record longer than``."""
    def feed(self, block: bytes) -> None:
        """Parse a block of the file (after any byte-order mark), the GIL released."""

    def finish(self) -> None:
        """The end of the file."""

    @property
    def records_ready(self) -> int:
        """Records (and the error ending the file) parsed and not yet taken; blank lines are not counted."""

    @property
    def has_item(self) -> bool:
        """Whether anything at all (a blank line too) is parsed and not yet taken."""

    @property
    def done(self) -> bool:
        """Whether the end of the file was seen or an error ended it."""

    def header(self) -> tuple[list[bytes] | None, str | None]:
        """The first item as the header: ``(fields, None)``, ``(None, error text)``, or ``(None, None)``."""

    def take(
        self, max_rows: int, width: int, wanted: list[int]
    ) -> tuple[list[list[str | None]], list[int], list[tuple[int, str]], tuple[int, str, int] | None]:
        """Up to ``max_rows`` rows: the ``wanted`` columns (None for a bad row), each row's last line, the bad
        rows' problems, and the malformed record ending the file (its index, error text, starting line)."""

def format_score_rows(
    ids: list[str],
    names: list[str],
    indices: npt.NDArray[np.uint32],
    probabilities: npt.NDArray[np.float32],
    difficulty: npt.NDArray[np.float32],
    all_probabilities: npt.NDArray[np.float32] | None,
    delimiter: str,
    fallback: npt.NDArray[np.bool_] | None = None,
) -> bytes:
    """``score``'s CSV/TSV rows of one chunk (id, per rank the LLM's name and probability, the difficulty, every
    LLM's probability when given, and the fallback flag as ``true``/``false`` when given), as the bytes
    ``csv.writer`` writes, floats as ``f"{x:.7g}"``; formatted with the GIL released. Arrays C-contiguous: indices
    ``(n, k)`` into ``names``, probabilities ``(n, k)``, difficulty ``(n,)``, all_probabilities ``(n, len(names))``,
    fallback ``(n,)``."""
