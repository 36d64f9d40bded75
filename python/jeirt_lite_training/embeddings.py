"""Frozen-encoder embeddings, computed once and cached on disk.

Cache layout: `<cache>/<encoder>__len<max_length>/shard-*.npz`, <cache> being $JEIRT_CACHE, else
`~/.cache/jeirt-lite/embeddings` (under $XDG_CACHE_HOME when set). Each shard holds `keys` (sha256 hex of the text,
utf-8) and `vectors` (float32). Shards are written atomically (temp file + rename) and never modified, so
several processes can read while one writes, and an interrupted build keeps what it had finished; the temporary
file of a build killed outright is removed by the next read of the cache on the same machine (not on Windows).

Run as a script to fill the cache for whole data folders:
    python -m jeirt_lite_training.embeddings data/mmlu_pro data/zeroeval_crux_gsm_math
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import sys
import time
import uuid
import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ._runtime import atomic_output, remove_stale_partials_like, resolve_threads
from .encoders import (
    DEFAULT_ENCODER,
    DEFAULT_MAX_LENGTH,
    encode_batch,
    get_spec,
    load_encoder,
    load_tokenizer,
    one_torch_thread_each,
    user_cache_home,
)
from .progress import progress_bar
from .types import Dataset

logger = logging.getLogger(__name__)
SHARD_NAMES = "shard-*.npz"


def cache_root() -> Path:
    """$JEIRT_CACHE, else <user cache>/embeddings ($XDG_CACHE_HOME/jeirt-lite or ~/.cache/jeirt-lite)."""
    return Path(os.environ.get("JEIRT_CACHE") or str(user_cache_home() / "embeddings"))


def cache_dir(encoder: str, max_length: int) -> Path:
    return cache_root() / f"{encoder}__len{max_length}"


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _load_cache(directory: Path, width: int) -> dict[str, np.ndarray]:
    """Every cached vector of `width` by its text's key. A shard that cannot be read as one (damaged, or written by
    something else) is skipped with a warning naming it: the cache only saves time, and its texts are encoded again."""
    found: dict[str, np.ndarray] = {}
    if not directory.is_dir():
        return found
    remove_stale_partials_like(directory, SHARD_NAMES)
    for shard in sorted(directory.glob(SHARD_NAMES)):
        try:
            with np.load(shard, allow_pickle=False) as z:
                keys, vectors = z["keys"], z["vectors"]
            if keys.ndim != 1 or vectors.shape != (len(keys), width) or vectors.dtype != np.float32:
                raise ValueError(f"keys {keys.shape}, vectors {vectors.shape} {vectors.dtype}: not n keys, (n, {width}) float32")
        except (OSError, ValueError, KeyError, zipfile.BadZipFile) as err:
            logger.warning("%s: not a readable embedding cache shard, skipped (%s); delete it to silence this", shard,
                           err)
            continue
        found.update(zip(keys.astype(str).tolist(), vectors))
    return found


def _write_shard(directory: Path, keys: list[str], vectors: np.ndarray) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    name = f"shard-{time.strftime('%Y%m%d%H%M%S')}-{uuid.uuid4().hex[:8]}.npz"
    # A handle, not a path: np.savez would add ".npz" to the temporary file's name.
    with atomic_output(directory / name) as temporary, open(temporary, "wb") as handle:
        np.savez(handle, keys=np.array(keys, dtype="U64"), vectors=vectors.astype(np.float32))


def embed_texts(
    texts: Sequence[str],
    encoder: str = DEFAULT_ENCODER,
    max_length: int = DEFAULT_MAX_LENGTH,
    shard_size: int = 512,
    progress: bool = False,
) -> np.ndarray:
    """(n, D) float32 embeddings of `texts`, reading the cache and computing (and caching) only what is missing.

    Missing texts are encoded one at a time, each on one torch thread, so a text's vector depends neither on what
    else was missing from the cache nor on the threads of the run that filled it: in a batch, padding moves a vector
    by about 1e-7, and on some CPUs (AMX, AVX-512) so does the number of rows the matrix products hold even without
    padding, or the number of threads that split them; differences in the last bits are enough to turn near-tied
    choices of a training run. The run's torch threads (`torch.get_num_threads()`) encode that many texts at once
    instead. A shard is saved every `shard_size` texts so an interrupted run loses at most that much.
    """
    if isinstance(texts, str):
        raise TypeError("embed_texts takes a list of texts, not one string")
    spec = get_spec(encoder)
    directory = cache_dir(encoder, max_length)
    keys = [text_key(t) for t in texts]
    cached = _load_cache(directory, spec.embedding_dim)
    todo: dict[str, str] = {}
    for key, text in zip(keys, texts):
        if key not in cached and key not in todo:
            todo[key] = text
    if todo:
        bar = progress_bar(len(todo), f"encoding with {encoder}", "text") if progress else None
        load_tokenizer(encoder, max_length)  # loaded once, before the workers ask for them
        load_encoder(encoder)
        missing = list(todo.items())
        with one_torch_thread_each() as pool:
            for start in range(0, len(missing), shard_size):
                shard = missing[start : start + shard_size]
                encoded = pool.map(lambda text: encode_batch([text], encoder, max_length).numpy()[0],
                                   [text for _, text in shard])
                vectors = []
                for (key, _), vector in zip(shard, encoded):
                    cached[key] = vector
                    vectors.append(vector)
                    if bar is not None:
                        bar.update(1)
                _write_shard(directory, [key for key, _ in shard], np.stack(vectors))
        if bar is not None:
            bar.close()
    out = np.stack([cached[k] for k in keys]) if keys else np.zeros((0, spec.embedding_dim), np.float32)
    return np.ascontiguousarray(out, dtype=np.float32)


def embed_dataset(
    dataset_or_texts: Dataset | Sequence[str],
    encoder: str = DEFAULT_ENCODER,
    max_length: int = DEFAULT_MAX_LENGTH,
    progress: bool = False,
) -> np.ndarray:
    """Embeddings of all questions of a Dataset (row i = dataset.texts[i]) or of a list of texts, from the cache."""
    texts = dataset_or_texts.texts if isinstance(dataset_or_texts, Dataset) else list(dataset_or_texts)
    return embed_texts(texts, encoder, max_length, progress=progress)


def _main(argv: list[str]) -> int:
    import pandas as pd
    import torch

    parser = argparse.ArgumentParser(description="Fill the embedding cache for data folders.")
    parser.add_argument("data_dirs", nargs="+", type=Path)
    parser.add_argument("--encoder", default=DEFAULT_ENCODER)
    parser.add_argument("--max-length", type=int, default=DEFAULT_MAX_LENGTH)
    parser.add_argument("--threads", type=int, default=None, help="default: the cores this process may use")
    args = parser.parse_args(argv)
    torch.set_num_threads(resolve_threads(args.threads))
    for d in args.data_dirs:
        texts = pd.read_csv(d / "questions.csv", usecols=["text"])["text"].astype(str).tolist()
        t0 = time.perf_counter()
        emb = embed_texts(texts, args.encoder, args.max_length, progress=True)
        print(
            f"{d}: {emb.shape} in {time.perf_counter() - t0:.0f}s -> {cache_dir(args.encoder, args.max_length)}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
