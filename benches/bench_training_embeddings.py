"""Training's embedding cache: `embed_texts` against each text alone on all of torch's threads, in one run.

`jeirt-lite train` encodes every question it has not cached with the frozen MiniLM transformer, one text at a time
(a text's vector must not depend on what it is encoded with). Contestants, on the same real MMLU-Pro texts, rounds
interleaved, each into an empty cache:
  * `embed_texts`: the run's torch threads encode that many texts side by side, each on one thread;
  * the reference: each text alone, its matrix products split across all of torch's threads (what the cache did
    before).

Prints seconds per round, the ratio and the load average, and whether the two give the same bits (they need not:
torch's threads split the products and move the last bits; `embed_texts` gives the same ones at any thread count).
Wall-clock numbers are reported, never asserted. Needs the train extra.

Usage: python benches/bench_training_embeddings.py [--texts 600] [--threads 2] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--texts", type=int, default=600, help="MMLU-Pro texts to encode (from the 5,000th on)")
    ap.add_argument("--threads", type=int, default=2, help="torch threads")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    import torch
    from jeirt_lite_training import embeddings
    from jeirt_lite_training.data import load_dataset
    from jeirt_lite_training.encoders import encode_batch

    texts = list(load_dataset(REPO / "data" / "mmlu_pro").texts)[5000 : 5000 + args.texts]
    torch.set_num_threads(args.threads)
    encode_batch(texts[:1])  # the model loaded before the clock starts
    print(f"{len(texts)} texts, {args.threads} torch threads, {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as scratch:
        for round_ in range(args.rounds):
            start = time.perf_counter()
            alone = np.stack([encode_batch([text]).numpy()[0] for text in texts])
            reference = time.perf_counter() - start
            os.environ["JEIRT_CACHE"] = str(Path(scratch) / f"round{round_}")
            start = time.perf_counter()
            cached = embeddings.embed_texts(texts)
            ours = time.perf_counter() - start
            print(f"round {round_}: embed_texts {ours:.1f} s, each alone on {args.threads} threads {reference:.1f} s "
                  f"({reference / ours:.2f}x); same bits: {np.array_equal(alone, cached)} (max difference "
                  f"{np.abs(alone - cached).max():.1e}); load average {os.getloadavg()[0]:.2f}", flush=True)


if __name__ == "__main__":
    main()
