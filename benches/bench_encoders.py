"""Questions per second of each router encoder variant against the pipeline a user would otherwise write.

The baseline is sentence-transformers on PyTorch with default settings, `model.encode(texts)` (batch 32, its own
length sorting), MiniLM at max length 256: what one writes to embed questions before scoring them. Every engine
gets the same real MMLU-Pro texts and the same thread count (torch.set_num_threads and the router's `threads`),
and the timings are interleaved round by round so machine load hits all of them alike; the best round counts.

Agreement with the baseline, on the same texts:
* fp32 / int8 (routers with a transformer graph): the baseline's embedding pushed through the router's own adapter
  (weights read from its ONNX graph) against the router's question vectors: max abs difference and cosine.
* static: its pre-adapter embedding lives in another space (PCA of distilled token vectors), so the comparison is
  how well it keeps MiniLM's similarity structure: the Spearman correlation, over all text pairs, of the two
  encoders' cosine similarities.

    python benches/bench_encoders.py --routers DIR          # DIR/fp32, DIR/int8, DIR/static (those present)
    python benches/bench_encoders.py --routers DIR --texts 256 --threads 2 --rounds 3 --batch-sizes 1,4,8,16,32
    python benches/bench_encoders.py --routers DIR --max-lengths 64,128   # also the shorter truncations

Writes bench_results/encoders.json. Asserts nothing about time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

VARIANTS = ("fp32", "int8", "static")


def sample_texts(n: int, seed: int = 0) -> list[str]:
    import pandas as pd

    texts = pd.read_csv(REPO / "data" / "mmlu_pro" / "questions.csv", usecols=["text"])["text"].astype(str)
    return texts.sample(n=min(n, len(texts)), random_state=seed).tolist()


def graph_initializers(path: Path) -> dict[str, np.ndarray]:
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path))
    return {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}


def adapter_from_graph(path: Path) -> Callable[[np.ndarray], np.ndarray]:
    """The adapter (Linear → ReLU → Linear) of an exported transformer router graph, as NumPy.

    Its weights are the initializers the exporter names after the torch parameters; the int8 graph keeps them fp32
    but stores each weight transposed ("<name>_Transposed") after splitting the Gemm into MatMul + Add."""
    inits = graph_initializers(path)

    def weight(name: str) -> np.ndarray:  # as (in, out)
        if name in inits:
            return inits[name].T
        if f"{name}_Transposed" in inits:
            return inits[f"{name}_Transposed"]
        raise RuntimeError(f"{path}: no adapter weight {name!r} among the graph's initializers")

    w1, b1 = weight("adapter.net.0.weight"), inits["adapter.net.0.bias"]
    w2, b2 = weight("adapter.net.3.weight"), inits["adapter.net.3.bias"]

    def apply(x: np.ndarray) -> np.ndarray:
        return (np.maximum(x.astype(np.float64) @ w1 + b1, 0.0) @ w2 + b2).astype(np.float32)

    return apply


def spearman_of_pair_similarities(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.stats import spearmanr

    def sims(x: np.ndarray) -> np.ndarray:
        x = x / np.linalg.norm(x, axis=1, keepdims=True)
        s = x @ x.T
        return s[np.triu_indices(len(x), k=1)]

    return float(spearmanr(sims(a), sims(b)).statistic)


def timed(fn: Callable[[list[str]], Any], texts: list[str]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn(texts)
    return time.perf_counter() - start, result


def parse_args(argv: list[str] | None) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--routers", type=Path, required=True, help="folder holding fp32/, int8/, static/")
    parser.add_argument("--texts", type=int, default=128)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batch-sizes", default="1,4,8,16,32", help="swept for the transformer variants")
    parser.add_argument(
        "--max-lengths",
        default="64,128",
        help="extra max lengths for the transformer variants (their own batch size)",
    )
    parser.add_argument("--out", type=Path, default=REPO / "bench_results" / "encoders.json")
    return parser, parser.parse_args(argv)


def int_list(text: str) -> list[int]:
    """`"1,4,8"` as `[1, 4, 8]` (empty items skipped)."""
    return [int(b) for b in text.split(",") if b.strip()]


def build_engines(
    baseline: Callable[[list[str]], np.ndarray],
    routers: dict[str, Any],
    args: argparse.Namespace,
    scratch: Path,
) -> dict[str, Callable[[list[str]], np.ndarray]]:
    """The baseline first, then each router at each batch size, and each transformer router at the shorter max
    lengths (copies written under `scratch`, each with its own default batch size)."""
    from jeirt_lite import Router
    from jeirt_lite._encoder import DEFAULT_BATCH_SIZE

    from scripts.build_variants import with_max_length

    batch_sizes, max_lengths = int_list(args.batch_sizes), int_list(args.max_lengths)
    engines = {"sentence-transformers (PyTorch, encode defaults)": baseline}
    for name, router in routers.items():
        sizes = batch_sizes if name != "static" else sorted({DEFAULT_BATCH_SIZE, 64, 256})
        length = router.manifest["encoder"]["max_seq_length"]
        for size in sizes:
            engines[f"{name} router, max {length}, batch {size}"] = lambda t, r=router, s=size: r.encode(
                t, batch_size=s
            , features=False).vectors
        if name == "static":
            continue
        for max_length in max_lengths:
            folder = with_max_length(router.path, scratch / f"{name}-{max_length}", max_length)
            shorter = Router.load(folder, threads=args.threads)
            label = f"{name} router, max {max_length}, batch {shorter._encoder.batch_size}"  # its own default
            engines[label] = lambda t, r=shorter: r.encode(t, features=False).vectors
    return engines


def time_interleaved(
    engines: dict[str, Callable[[list[str]], np.ndarray]], texts: list[str], rounds: int
) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """Each engine's best seconds over `rounds` rounds (all engines once per round, after a warm-up) and its
    last output."""
    for fn in engines.values():  # warm-up: first-call allocations, lazy imports
        fn(texts[:8])
    best: dict[str, float] = {name: float("inf") for name in engines}
    outputs: dict[str, np.ndarray] = {}
    for _ in range(rounds):
        for name, fn in engines.items():
            seconds, outputs[name] = timed(fn, texts)
            best[name] = min(best[name], seconds)
            print(f"  {name}: {len(texts) / seconds:.1f} questions/s", flush=True)
    return best, outputs


def throughput_rows(best: dict[str, float], baseline_name: str, n_texts: int) -> list[dict[str, Any]]:
    return [
        {
            "engine": name,
            "questions_per_s": n_texts / seconds,
            "ratio_to_sentence_transformers": best[baseline_name] / seconds,
        }
        for name, seconds in best.items()
    ]


def static_agreement(router: Any, texts: list[str], baseline: np.ndarray) -> dict[str, float]:
    """How well the static encoder keeps MiniLM's similarity structure (its pre-adapter space is another one)."""
    from jeirt_lite_training.static_encoder import static_embed
    from tokenizers import Tokenizer

    inits = graph_initializers(router.path / "encoder.onnx")
    table = inits["table"].astype(np.float32)
    enc = Tokenizer.from_file(str(router.path / "tokenizer.json"))  # truncation as the manifest says
    enc.enable_truncation(max_length=int(router.manifest["encoder"]["max_seq_length"]))
    enc.enable_padding(pad_id=0, pad_token="[PAD]")
    batch = enc.encode_batch(texts)
    ids = np.array([e.ids for e in batch], dtype=np.int64)
    mask = np.array([e.attention_mask for e in batch], dtype=np.int64)
    return {
        "spearman_of_pair_cosines_vs_minilm": spearman_of_pair_similarities(
            static_embed(table, ids, mask), baseline
        )
    }


def transformer_agreement(router: Any, texts: list[str], baseline: np.ndarray) -> dict[str, float]:
    """The router's question vectors against the baseline's embeddings pushed through the router's own adapter."""
    vectors = router.encode(texts, features=False).vectors
    expected = adapter_from_graph(router.path / "encoder.onnx")(baseline)
    cos = (vectors * expected).sum(1) / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(expected, axis=1))
    return {
        "question_vector_max_abs_diff_vs_st_plus_adapter": float(np.abs(vectors - expected).max()),
        "question_vector_cosine_mean": float(cos.mean()),
        "question_vector_cosine_min": float(cos.min()),
    }


def report(result: dict[str, Any], args: argparse.Namespace) -> None:
    """Writes `result` to `args.out` and prints the throughput table and the agreement."""
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\n{result['texts']} MMLU-Pro texts, {args.threads} thread(s), best of {args.rounds} rounds")
    for row in result["throughput"]:
        print(
            f"{row['engine']:<52} {row['questions_per_s']:9.1f} q/s  {row['ratio_to_sentence_transformers']:6.2f}x"
        )
    print(json.dumps(result["agreement"], indent=2))
    print(f"written to {args.out}")


def main(argv: list[str] | None = None) -> int:
    parser, args = parse_args(argv)

    import torch
    from jeirt_lite import Router
    from jeirt_lite_training.encoders import DEFAULT_ENCODER, get_spec
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(args.threads)
    scratch = Path(tempfile.mkdtemp(prefix="bench-encoders-"))  # routers at other max lengths
    texts = sample_texts(args.texts)
    model = SentenceTransformer(str(get_spec(DEFAULT_ENCODER).model_dir()), device="cpu")
    routers = {
        name: Router.load(args.routers / name, threads=args.threads)
        for name in VARIANTS
        if (args.routers / name / "router.json").is_file()
    }
    if not routers:
        parser.error(f"no router folders {VARIANTS} under {args.routers}")

    engines = build_engines(lambda t: model.encode(t, convert_to_numpy=True), routers, args, scratch)
    best, outputs = time_interleaved(engines, texts, args.rounds)
    baseline_name = next(iter(engines))
    baseline = outputs[baseline_name]
    agreement = {
        name: static_agreement(router, texts, baseline)
        if name == "static"
        else transformer_agreement(router, texts, baseline)
        for name, router in routers.items()
    }
    result = {
        "machine": {
            "cores": os.cpu_count(),
            "threads": args.threads,
            "platform": platform.platform(),
            "load_average_at_end": os.getloadavg(),
        },
        "texts": len(texts),
        "rounds": args.rounds,
        "throughput": throughput_rows(best, baseline_name, len(texts)),
        "agreement": agreement,
    }
    shutil.rmtree(scratch, ignore_errors=True)
    report(result, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
