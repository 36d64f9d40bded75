"""Text -> top-1 LLM on one thread with the shipped (static) router, against the peer pipeline, in one run.

Contestants, each on the same real MMLU-Pro texts, one thread, rounds interleaved (A B C D, A B C D, ...):
  * jeirt-lite fast path: `Router.route(texts, k=1)` (Rust tokeniser, table mean, adapter, top-k kernel);
  * peer pipeline: model2vec's `StaticModel` over the router's own token table (same shape) and tokenizer, a
    NumPy two-layer adapter of the same weights and a NumPy route (norms, `Q @ M.T`, calibration, argmax);
  * Hugging Face `tokenizers` alone (`encode_batch` with truncation, no padding): the peer's floor;
  * jeirt-lite through the ONNX graph (`fast_path=False`), the reference path.

Prints texts/s (best round) and the ratios, the load average and core count, and the share of texts on which the
fast path and the peer pick the same LLM (the peer tokenises without [CLS]/[SEP], so a few differ). Wall-clock
numbers are reported, never asserted. model2vec is not a dependency: `pip install model2vec==0.10.0` (the `bench`
extra), else that contestant is skipped with a message.

Usage: python benches/bench_static.py [--texts 2000] [--rounds 5] [--out bench_results/static.json]
"""

from __future__ import annotations

import os

# One thread everywhere, set before NumPy, tokenizers and onnxruntime start their pools.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_RS_NUM_CPUS"):
    os.environ[_var] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"

import argparse  # noqa: E402
import csv  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
from jeirt_lite import Router  # noqa: E402
from jeirt_lite._static_path import read_static_tensors  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def real_texts(count: int) -> list[str]:
    """`count` MMLU-Pro question texts, spread over the file (repeated if count exceeds the 10,801 there)."""
    csv.field_size_limit(1 << 30)
    with open(REPO / "data" / "mmlu_pro" / "questions.csv", newline="", encoding="utf-8") as handle:
        texts = [row["text"] for row in csv.DictReader(handle)]
    step = max(1, len(texts) // count)
    picked = texts[::step][:count]
    return (picked * (count // len(picked) + 1))[:count]


def hf_tokenizer(router: Router) -> Any:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(router.path / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=int(router.manifest["encoder"]["max_seq_length"]))
    tokenizer.no_padding()
    return tokenizer


def peer_pipeline(router: Router) -> Callable[[list[str]], np.ndarray] | None:
    """model2vec + NumPy adapter + NumPy route over the router's weights; None when model2vec is missing."""
    try:
        from model2vec import StaticModel
    except ImportError:
        print("peer pipeline skipped: model2vec is not installed (pip install model2vec==0.10.0)")
        return None
    entry = router.manifest["files"]["static_encoder"]
    w = read_static_tensors(router.path / entry["path"])
    model = StaticModel(vectors=w["table"], tokenizer=hf_tokenizer(router), normalize=True)
    llms = np.ascontiguousarray(router.llm_vectors, dtype=np.float32)
    cal = router.calibration
    scale = np.ones(len(llms), np.float32) if cal is None else np.asarray(cal.scale, np.float32)
    bias = np.zeros(len(llms), np.float32) if cal is None else np.asarray(cal.bias, np.float32)

    def route(texts: list[str]) -> np.ndarray:
        x = model.encode(texts, use_multiprocessing=False).astype(np.float32, copy=False)
        q = np.maximum(x @ w["w1"].T + w["b1"], 0.0) @ w["w2"].T + w["b2"]
        norms = np.linalg.norm(q, axis=1, keepdims=True)
        logits = (q @ llms.T) / norms - norms
        best: np.ndarray = np.argmax(logits * scale + bias, axis=1)
        return best

    return route


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)

    texts = real_texts(args.texts)
    fast = Router.load(threads=1)
    if not fast.fast_path:
        raise SystemExit("the shipped router did not load its fast path")
    onnx = Router.load(threads=1, fast_path=False)
    tokenizer = hf_tokenizer(fast)
    contestants: dict[str, Callable[[list[str]], Any]] = {
        "jeirt-lite fast path": lambda t: fast.route(t, k=1).indices[:, 0],
        "tokenizers encode_batch alone": lambda t: tokenizer.encode_batch(t),
        "jeirt-lite ONNX path": lambda t: onnx.route(t, k=1).indices[:, 0],
    }
    peer = peer_pipeline(fast)
    if peer is not None:
        contestants["model2vec + NumPy adapter + NumPy route"] = peer
    times: dict[str, list[float]] = {name: [] for name in contestants}
    outputs: dict[str, Any] = {}
    for _ in range(args.rounds):
        for name, run in contestants.items():
            start = time.perf_counter()
            outputs[name] = run(texts)
            times[name].append(time.perf_counter() - start)
    rates = {name: len(texts) / min(ts) for name, ts in times.items()}
    medians = {name: len(texts) / statistics.median(ts) for name, ts in times.items()}
    base = rates["jeirt-lite fast path"]
    print(f"{len(texts)} MMLU-Pro texts, one thread, {args.rounds} interleaved rounds; {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}")
    for name in contestants:
        print(f"  {name:42s} {rates[name]:9,.0f} texts/s (median {medians[name]:8,.0f})  "
              f"fast path / this = {base / rates[name]:.2f}x")
    result: dict[str, Any] = {"texts": len(texts), "rounds": args.rounds, "best_texts_per_s": rates,
                              "median_texts_per_s": medians, "cores": os.cpu_count(),
                              "load_average": os.getloadavg()[0]}
    if peer is not None:
        same = float(np.mean(outputs["jeirt-lite fast path"] == outputs["model2vec + NumPy adapter + NumPy route"]))
        result["top1_agreement_with_peer"] = same
        print(f"  same top-1 LLM as the peer on {100 * same:.1f}% of texts")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
