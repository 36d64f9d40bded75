"""Small static-encoder files over the shipped router's tokenizer: a tokenizer.json with some keys changed and a
static_encoder.safetensors of small random tensors, for tests of the static fast path that load no router."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from jeirt_lite._router import DEFAULT_ROUTER_PATH
from jeirt_lite._static_path import STATIC_ENCODER_FILE
from safetensors.numpy import save_file

SHIPPED_TOKENIZER = DEFAULT_ROUTER_PATH / "tokenizer.json"
SPEC = json.loads(SHIPPED_TOKENIZER.read_text(encoding="utf-8"))
VOCAB = len(SPEC["model"]["vocab"])
WIDTH, HIDDEN, DIM = 2, 3, 2


def tokenizer_file(tmp_path: Path, **changes: Any) -> Path:
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps({**SPEC, **changes}), encoding="utf-8")
    return path


def static_tensors(*, width: int = WIDTH, **changes: np.ndarray) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    made = {
        "table": rng.normal(size=(VOCAB, width)).astype(np.float32),
        "w1": rng.normal(size=(HIDDEN, width)).astype(np.float32),
        "b1": np.zeros(HIDDEN, np.float32),
        "w2": rng.normal(size=(DIM, HIDDEN)).astype(np.float32),
        "b2": np.zeros(DIM, np.float32),
    }
    return {**made, **changes}


def tensor_file(tmp_path: Path, *, width: int = WIDTH, **changes: np.ndarray) -> Path:
    path = tmp_path / STATIC_ENCODER_FILE
    save_file(static_tensors(width=width, **changes), str(path))
    return path


def reference_token_ids(tokenizer_path: Path, max_length: int, texts: list[str]) -> list[list[int]]:
    """The token ids Hugging Face `tokenizers` gives each text under `tokenizer_path`, truncated, not padded."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(tokenizer_path))
    tokenizer.enable_truncation(max_length=max_length)
    tokenizer.no_padding()
    return [encoding.ids for encoding in tokenizer.encode_batch(texts)]
