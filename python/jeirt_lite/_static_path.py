"""The fast path of static routers: tokenising, table lookup, mean and adapter in Rust, one call a batch.

A static router (one vector per token, averaged, then the adapter) carries `static_encoder.safetensors` next
to its ONNX graph: the token table (`table`, float16 or float32, V x D) and the adapter (`w1` H x D, `b1`,
`w2` d x H, `b2`), bound to the router by its sha256 in router.json like every other file; the graph reads the same
bytes (ONNX external data, _onnx_external.py) unless it is an older one that embeds its own copy. With it, and a
tokenizer.json of the BERT WordPiece shape the Rust tokenizer reproduces exactly (BertNormalizer,
BertPreTokenizer, WordPiece, `[CLS] text [SEP]`), `Router` encodes texts without Python token lists or an ONNX
Runtime session; the ONNX graph stays the reference (tests/test_static_path.py checks the two agree) and the
path of every other router.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Optional

import numpy as np

from . import _core
from ._errors import JeirtError
from ._manifest import STATIC_ROLE

STATIC_ENCODER_FILE = "static_encoder.safetensors"
TENSORS = ("table", "w1", "b1", "w2", "b2")


class Unsupported(Exception):
    """A tokenizer.json of a shape the Rust tokenizer does not reproduce (the ONNX path is used instead)."""


def tokenizer_settings(tokenizer_json: Path, max_length: int) -> dict[str, Any]:
    """The Rust tokenizer's settings read from a tokenizer.json, or `Unsupported` naming what differs."""
    try:
        spec = json.loads(tokenizer_json.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
        raise JeirtError(f"{tokenizer_json}: not readable JSON ({err})") from err
    if max_length < 3:
        raise Unsupported(f"max_seq_length {max_length} leaves no room for a token between [CLS] and [SEP]")
    normalizer, pre, model = (
        spec.get("normalizer") or {},
        spec.get("pre_tokenizer") or {},
        spec.get("model") or {},
    )
    if normalizer.get("type") != "BertNormalizer":
        raise Unsupported(f"normalizer {normalizer.get('type')!r}")
    if pre.get("type") != "BertPreTokenizer":
        raise Unsupported(f"pre-tokenizer {pre.get('type')!r}")
    if model.get("type") != "WordPiece":
        raise Unsupported(f"model {model.get('type')!r}")
    vocab = model.get("vocab")
    if not isinstance(vocab, dict) or model.get("unk_token") not in vocab:
        raise Unsupported("WordPiece without a vocabulary that holds its unknown token")
    added = []
    for token in spec.get("added_tokens") or []:
        if token.get("normalized") or token.get("lstrip") or token.get("rstrip") or token.get("single_word"):
            raise Unsupported(f"added token {token.get('content')!r} with normalisation or strip flags")
        added.append((str(token["content"]), int(token["id"])))
    cls_id, sep_id = _template_ids(spec.get("post_processor") or {})
    lowercase = bool(normalizer.get("lowercase", True))
    strip = normalizer.get("strip_accents")
    return {
        "vocab": [(str(token), int(i)) for token, i in vocab.items()],
        "unk_id": int(vocab[model["unk_token"]]),
        "continuation_prefix": str(model.get("continuing_subword_prefix", "##")),
        "max_input_chars_per_word": int(model.get("max_input_chars_per_word", 100)),
        "added_tokens": added,
        "clean_text": bool(normalizer.get("clean_text", True)),
        "handle_chinese_chars": bool(normalizer.get("handle_chinese_chars", True)),
        "strip_accents": lowercase if strip is None else bool(strip),
        "lowercase": lowercase,
        "cls_id": cls_id,
        "sep_id": sep_id,
        "max_length": max_length,
    }


def _template_ids(post: Mapping[str, Any]) -> tuple[int, int]:
    """The ids of `[CLS] $A [SEP]` from a TemplateProcessing or BertProcessing post-processor."""
    if post.get("type") == "BertProcessing":
        return int(post["cls"][1]), int(post["sep"][1])
    if post.get("type") != "TemplateProcessing":
        raise Unsupported(f"post-processor {post.get('type')!r}")
    single = post.get("single") or []
    shape = (
        ["SpecialToken" in single[0], "Sequence" in single[1], "SpecialToken" in single[2]]
        if len(single) == 3
        else []
    )
    if shape != [True, True, True]:
        raise Unsupported("a post-processor template other than [CLS] $A [SEP]")
    ids = []
    for item in (single[0], single[2]):
        entry = (post.get("special_tokens") or {}).get(item["SpecialToken"]["id"]) or {}
        if len(entry.get("ids") or []) != 1:
            raise Unsupported(f"special token {item['SpecialToken']['id']!r} is not one id")
        ids.append(int(entry["ids"][0]))
    return ids[0], ids[1]


def read_static_tensors(path: Path) -> dict[str, np.ndarray]:
    """The table (as float32) and adapter weights of a static_encoder.safetensors, checked for shape."""
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    try:
        tensors = load_file(str(path))
    except (SafetensorError, OSError, ValueError) as err:
        raise JeirtError(f"{path}: not a readable safetensors file ({err})") from err
    missing = [name for name in TENSORS if name not in tensors]
    if missing:
        raise JeirtError(f"{path}: lacks tensors {missing}")
    out = {name: np.ascontiguousarray(tensors[name], dtype=np.float32) for name in TENSORS}
    table, w1, b1, w2, b2 = (out[name] for name in TENSORS)
    if (
        table.ndim != 2
        or w1.ndim != 2
        or w2.ndim != 2
        or w1.shape[1] != table.shape[1]
        or w2.shape[1] != w1.shape[0]
    ):
        raise JeirtError(f"{path}: table {table.shape}, w1 {w1.shape} and w2 {w2.shape} do not chain")
    if b1.shape != (w1.shape[0],) or b2.shape != (w2.shape[0],):
        raise JeirtError(f"{path}: biases {b1.shape}, {b2.shape} do not match w1 {w1.shape}, w2 {w2.shape}")
    return out


class StaticEncoder:
    """Texts to question vectors for a static router, in Rust (same interface as `OnnxEncoder`)."""

    def __init__(
        self, tokenizer_path: Path, tensors_path: Path, max_length: int, dim: int, threads: int, feature_dim: int = 0
    ):
        """`feature_dim`: the width of the graph's `features` output (router.json encoder.feature_dim; 0: none).
        The pooled rows the adapter reads are that output; they are returned only when the widths agree."""
        settings = tokenizer_settings(tokenizer_path, max_length)
        tensors = read_static_tensors(tensors_path)
        if tensors["w2"].shape[0] != dim:
            raise JeirtError(
                f"{tensors_path}: the adapter outputs {tensors['w2'].shape[0]} values, the router's d is {dim}"
            )
        self._core = _core.StaticEncoder(**settings, **tensors)  # type: ignore[arg-type]
        self.dim = dim
        self.threads = threads
        self.max_length = max_length
        # Whether the pooled rows are the graph's `features` output (so corrections can read them here).
        self.gives_features = feature_dim > 0 and feature_dim == tensors["table"].shape[1]

    def encode(self, texts: Sequence[str], batch_size: Optional[int] = None) -> np.ndarray:
        """Question vectors (N, d) float32 for validated texts; `batch_size` is checked, not needed."""
        _check_batch_size(batch_size)
        return _checked(self._call(self._core.embed, texts))

    def encode_with_features(
        self, texts: Sequence[str], batch_size: Optional[int] = None
    ) -> tuple[np.ndarray, Optional[np.ndarray]]:
        """(question vectors (N, d), features (N, p) or None when the router's graph exposes none), as
        `OnnxEncoder.encode_with_features` gives them, in one pass over the texts."""
        if not self.gives_features:
            return self.encode(texts, batch_size), None
        _check_batch_size(batch_size)
        vectors, features = self._call(self._core.embed_with_features, texts)
        return _checked(vectors), features

    def _call(self, embed: Any, texts: Sequence[str]) -> Any:
        try:
            return embed(list(texts), self.threads)
        except UnicodeEncodeError:
            raise JeirtError(
                f"text {_first_unencodable(texts)} is not valid Unicode (a lone surrogate)"
            ) from None

    def encode_start(
        self, texts: Sequence[str], *, features: bool = False, votes: Optional[VoteRequest] = None
    ) -> PendingEncoding:
        """Start encoding validated texts on the Rust pool and return at once (`score`'s pipeline): the caller
        reads and writes other chunks meanwhile, and `result()` gives what `encode` would have, with the features
        when asked for and the neighbour votes' sums when `votes` is given (computed in the same job)."""
        table, k, temperature, candidates = votes if votes is not None else (None, 1, None, 0)
        try:
            job = _core.embed_start(self._core, list(texts), self.threads, features, table, k, temperature,
                                    candidates)
        except UnicodeEncodeError:
            raise JeirtError(
                f"text {_first_unencodable(texts)} is not valid Unicode (a lone surrogate)"
            ) from None
        return PendingEncoding(job)

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """The token ids of each text (as `tokenizers` gives them, [CLS] and [SEP] included)."""
        ids, offsets = self._core.token_ids(list(texts))
        return [ids[offsets[i] : offsets[i + 1]].tolist() for i in range(len(offsets) - 1)]


# What a background job computes the neighbour votes with: the table and its k, temperature and candidates.
VoteRequest = tuple[_core.VoteTable, int, Optional[float], int]
# A finished job: vectors, features (or None) and the votes' (sums, weights) (or None).
Encoding = tuple[np.ndarray, Optional[np.ndarray], Optional[tuple[np.ndarray, np.ndarray]]]


class PendingEncoding:
    """One chunk being encoded in the background (`StaticEncoder.encode_start`)."""

    def __init__(self, job: _core.EmbedJob):
        self._job = job

    def result(self) -> Encoding:
        """(vectors (N, d), features or None, vote sums or None), once encoded (blocks, the GIL released)."""
        vectors, features, sums, counts = self._job.wait_all()
        return _checked(vectors), features, None if sums is None or counts is None else (sums, counts)


def _check_batch_size(batch_size: Optional[int]) -> None:
    if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1):
        raise JeirtError(f"batch_size must be an integer of at least 1, got {batch_size!r}")


def _checked(vectors: np.ndarray) -> np.ndarray:
    if not np.isfinite(vectors).all():
        bad = int(np.flatnonzero(~np.isfinite(vectors).all(axis=1))[0])
        raise JeirtError(f"encoder produced NaN or inf for text {bad}")
    return vectors


def _first_unencodable(texts: Sequence[str]) -> int:
    for i, text in enumerate(texts):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return i
    return -1


def static_encoder_for(
    folder: Path, manifest: Mapping[str, Any], tokenizer_path: Path, dim: int, threads: int
) -> Optional[StaticEncoder]:
    """The fast encoder of a router folder, or None when it has no static encoder file or an unsupported
    tokenizer. The file's hash is checked at load (see artifact.load_artifact)."""
    entry = (manifest.get("files") or {}).get(STATIC_ROLE)
    if not isinstance(entry, Mapping):
        return None
    spec = manifest["encoder"]
    try:
        return StaticEncoder(
            tokenizer_path,
            folder / str(entry["path"]),
            int(spec["max_seq_length"]),
            dim,
            threads,
            int(spec.get("feature_dim") or 0) if spec.get("feature_output") else 0,
        )
    except Unsupported:
        return None


# Texts both encoders of a static router must agree on at load: words, subwords, accents, CJK, an unknown
# character, added tokens in the raw text, and one past max_seq_length (truncation).
PROBE_TEXTS = (
    "What is the derivative of x**3 with respect to x?",
    "Which enzyme unwinds DNA during replication? Options: helicase, ligase, primase, polymerase",
    "Café naïve résumé 東京 北京大学 \u2603 [MASK] [CLS] unbelievably-hyphenated words, 42% of $100",
    "question " * 600,
)
# Max abs difference allowed between the Rust path and the ONNX graph on a probe's question vector, relative to
# the largest entry (float32 sums in another order differ far below this; a graph computing something else, far
# above it).
PROBE_TOLERANCE = 1e-4


def check_agreement(fast: StaticEncoder, graph: Any, encoder_path: Path) -> None:
    """Refuse a static router whose ONNX graph and Rust fast path give different question vectors, or different
    features where the fast path gives them, on the probe texts: the two must compute the same thing (the graph is
    the reference, the fast path the default; neighbour votes and corrections read the features of whichever is
    used), and hashes recomputed after editing one of them would otherwise go unnoticed."""
    texts = list(PROBE_TEXTS)
    fast_vectors, fast_features = fast.encode_with_features(texts)
    graph_vectors, graph_features = graph.encode_with_features(texts)
    worst = _relative_gap(fast_vectors, graph_vectors)
    if not worst <= PROBE_TOLERANCE:  # NaN fails too
        raise JeirtError(
            f"{encoder_path}: computes other question vectors than the router's static encoder file (max "
            f"difference {worst:.3g} relative, allowed {PROBE_TOLERANCE:g} on fixed probe texts); the graph or "
            f"{STATIC_ENCODER_FILE} was altered"
        )
    if fast_features is None or graph_features is None:
        return
    worst = _relative_gap(fast_features, graph_features)
    if not worst <= PROBE_TOLERANCE:
        raise JeirtError(
            f"{encoder_path}: its features output differs from the pooled rows of the router's static encoder file "
            f"(max difference {worst:.3g} relative, allowed {PROBE_TOLERANCE:g} on fixed probe texts); neighbour "
            "votes and corrections would read other features with and without the fast path"
        )


def _relative_gap(fast: np.ndarray, graph: np.ndarray) -> float:
    """The largest difference relative to the graph's largest entry (at least 1); NaN when either holds one."""
    return float(np.abs(fast - graph).max()) / max(1.0, float(np.abs(graph).max()))
