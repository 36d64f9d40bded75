"""Build the transformer variants of the router in one command, each a complete router folder:

    python -m scripts.build_variants --out routers/            # fp32/, int8/
    python -m scripts.build_variants --out routers/ --variants fp32

* fp32:   the transformer router (JE-IRT adapter trained on cached MiniLM embeddings), graph operator-fused
          offline; same vectors as the plain export (checked here, max abs difference in the manifest).
* int8:   the same adapter over an int8 encoder graph (per-channel dynamic int8, FFN-output and adapter MatMuls
          fp32; see quantize.py); cosine to fp32 on real test texts recorded in the manifest.

Both are trained on the project's split of data/mmlu_pro (`make_split(seed=0)`) with the settings of the published
variant table (PUBLISHED_HYPER, docs/research/encoders.md), so that they reproduce it. The static router is the
shipped one: `python -m scripts.build_default_router` (add `--holdout 0.2 --out DIR` for one scored on the same
test split). benches/pareto_encoders.py measures every variant through `Router.load`.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from jeirt_lite_training.encoders import DEFAULT_ENCODER, DEFAULT_MAX_LENGTH, get_spec

from .shipped import DEFAULT_DATA, PUBLISHED_HYPER

VARIANTS = ("fp32", "int8")
# Texts per encoder call, written into each router's manifest (encoder.batch_size), from benches/bench_encoders.py:
# a transformer is fastest one text at a time on a CPU (no padding at all, and its vectors then do not depend on
# which texts share a batch).
TRANSFORMER_BATCH_SIZE = 1


def copy_with_graph(
    src: Path, dst: Path, graph: Path, encoder_changes: dict[str, Any], metrics: dict[str, Any]
) -> Path:
    """A copy of router folder `src` at `dst` with another encoder graph and an updated manifest (no static
    encoder file: the copy runs its graph; a graph reading its tensors from `src`'s static file gets them back
    inside, as the copy has no such file)."""
    import onnx
    from jeirt_lite._onnx_external import external_tensors
    from jeirt_lite.artifact import load_artifact, save_artifact

    art = load_artifact(src)
    manifest = art.manifest
    with tempfile.TemporaryDirectory() as scratch:
        if external_tensors(graph):
            embedded = Path(scratch) / "encoder.onnx"
            embedded.write_bytes(onnx.load(str(graph)).SerializeToString())
            graph = embedded
        return save_artifact(
            dst,
            llm_names=list(art.llm_names),
            llm_vectors=np.array(art.llm_vectors),
            tokenizer_json=art.tokenizer_path,
            encoder_onnx=graph,
            encoder={**manifest["encoder"], **encoder_changes},
            training=manifest.get("training"),
            metrics={**(manifest.get("metrics") or {}), **metrics},
            label=manifest.get("label"),
            overwrite=True,
            training_questions=art.training_questions,
        )


def with_max_length(src: Path, dst: Path, max_length: int) -> Path:
    """A copy of router `src` that truncates at `max_length` tokens (same graph, same weights)."""
    from jeirt_lite.artifact import load_artifact

    art = load_artifact(src)
    return copy_with_graph(src, dst, art.encoder_path, {"max_seq_length": max_length}, {})


def parity_texts(texts: list[str], test: np.ndarray, n: int = 12) -> list[str]:
    """Short, middle and long test questions (some longer than the max length)."""
    by_len = sorted((texts[i] for i in test), key=len)
    mid = len(by_len) // 2
    return by_len[: n // 3] + by_len[mid : mid + n // 3] + by_len[-(n // 3) :]


def graph_outputs(path: Path, encoder: str, max_length: int, texts: list[str]) -> np.ndarray:
    """Question vectors of `texts` from an ONNX graph, one text at a time (no padding effects)."""
    from jeirt_lite_training.export import tokenize

    from .quantize import run_graph

    return run_graph(path, [tokenize(encoder, max_length, [t]) for t in texts])


def build_transformer(out: Path, data: Path, variants: list[str], threads: int) -> dict[str, Any]:
    from jeirt_lite_training.pipeline import fit_and_export
    from jeirt_lite_training.prepared import prepare

    from .quantize import cosine_rows, fuse_bert, quantize_int8

    report: dict[str, Any] = {}
    prep = prepare(data, split_seed=0)
    spec = get_spec(DEFAULT_ENCODER)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        res = fit_and_export(
            prep,
            tmp / "plain",
            label=f"JE-IRT on {prep.data.name}, MiniLM fp32",
            progress=False,
            **PUBLISHED_HYPER,
        )
        assert res.router_path is not None
        plain_graph = res.router_path / "encoder.onnx"
        texts = parity_texts(prep.data.texts, prep.split.test)
        reference = graph_outputs(plain_graph, DEFAULT_ENCODER, DEFAULT_MAX_LENGTH, texts)
        fused = fuse_bert(plain_graph, tmp / "fused.onnx", hidden_size=spec.embedding_dim)
        fused_diff = float(
            np.abs(graph_outputs(fused, DEFAULT_ENCODER, DEFAULT_MAX_LENGTH, texts) - reference).max()
        )
        if not fused_diff <= 1e-4:
            raise RuntimeError(f"fused graph differs from the plain export by {fused_diff:.3g}")
        report["fp32"] = {"test": res.test, "fused_vs_plain_max_abs_diff": fused_diff}
        if "fp32" in variants:
            copy_with_graph(
                res.router_path,
                out / "fp32",
                fused,
                {"graph": "fp32, BERT ops fused offline", "batch_size": TRANSFORMER_BATCH_SIZE},
                {"fused_vs_plain_max_abs_diff": fused_diff},
            )
        if "int8" in variants:
            int8, kept = quantize_int8(fused, tmp / "int8.onnx")
            cos = cosine_rows(graph_outputs(int8, DEFAULT_ENCODER, DEFAULT_MAX_LENGTH, texts), reference)
            int8_metrics = {
                "int8_question_vector_cosine_to_fp32": {"mean": float(cos.mean()), "min": float(cos.min())},
                "note": "test/val metrics above were measured with the fp32 encoder; see docs/research/encoders.md",
            }
            copy_with_graph(
                res.router_path,
                out / "int8",
                int8,
                {
                    "graph": "int8 dynamic per-channel; FFN-output and adapter MatMuls fp32",
                    "fp32_nodes": kept,
                    "batch_size": TRANSFORMER_BATCH_SIZE,
                },
                int8_metrics,
            )
            report["int8"] = int8_metrics
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument(
        "--variants", default=",".join(VARIANTS), help=f"comma-separated subset of {VARIANTS}"
    )
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        parser.error(f"unknown variants {unknown}; choose from {VARIANTS}")

    import torch

    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {}
    report.update(build_transformer(args.out, args.data, variants, args.threads))
    for name, entry in report.items():
        test = entry.get("test")
        if test:
            print(
                f"{name}: test AUC {test['auc']:.3f}, accuracy {test['accuracy']:.3f}, log-loss {test['log_loss']:.3f}"
            )
        else:
            print(f"{name}: {entry}")
    for name in variants:
        folder = args.out / name
        if folder.is_dir():
            size = sum(f.stat().st_size for f in folder.iterdir()) / 1e6
            print(f"  {folder}: {size:.1f} MB")
    shutil.rmtree(args.out / ".tmp", ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
