"""Export a trained JE-IRT predictor as a router folder the runtime can load without torch.

One ONNX graph: input_ids, attention_mask (int64, dynamic batch and sequence) → frozen encoder (eager attention) →
attention-masked mean pooling → L2 normalise → adapter → question_vectors (float32, (batch, d)); the normalised
embedding before the adapter is a second output, features (what onboarding corrections read). The LLM table,
the tokenizer (truncation at the chosen max length, padding to the longest text, saved in the file) and a manifest
go next to it via `jeirt_lite.artifact.save_artifact`.
"""

from __future__ import annotations

import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from .encoders import SentenceEncoder, get_spec, load_encoder, load_tokenizer
from .model import Adapter, JeirtPredictor

INPUT_NAMES = ["input_ids", "attention_mask"]
OUTPUT_NAME = "question_vectors"
FEATURE_OUTPUT = "features"
OPSET = 17


class QuestionVectorGraph(nn.Module):
    """Frozen encoder followed by the trained adapter: token ids → question vectors."""

    def __init__(self, encoder: SentenceEncoder, adapter: Adapter) -> None:
        super().__init__()
        self.encoder = encoder
        self.adapter = adapter

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        features = self.encoder(input_ids, attention_mask)
        return self.adapter(features), features


def build_graph(adapter: Adapter, encoder: str) -> QuestionVectorGraph:
    return QuestionVectorGraph(load_encoder(encoder), copy_module(adapter)).eval()


def copy_module(adapter: Adapter) -> Adapter:
    import copy

    out = copy.deepcopy(adapter).eval()
    for p in out.parameters():
        p.requires_grad_(False)
    return out


def export_onnx(graph: QuestionVectorGraph, path: Path) -> Path:
    ids = torch.tensor([[101, 2054, 2003, 1037, 3160, 102], [101, 7592, 102, 0, 0, 0]], dtype=torch.int64)
    mask = (ids != 0).to(torch.int64)
    # The tracer warns about transformers' mask arithmetic and about indexing with negative indices; token ids and
    # positions are never negative, and export_router checks the written graph against torch on real texts (parity),
    # so on a user's terminal the warnings would only alarm.
    with torch.inference_mode(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
        warnings.filterwarnings("ignore", message="Exporting aten::index operator", category=UserWarning)
        torch.onnx.export(
            graph,
            (ids, mask),
            str(path),
            dynamo=False,
            opset_version=OPSET,
            input_names=INPUT_NAMES,
            output_names=[OUTPUT_NAME, FEATURE_OUTPUT],
            dynamic_axes={
                "input_ids": {0: "batch", 1: "sequence"},
                "attention_mask": {0: "batch", 1: "sequence"},
                OUTPUT_NAME: {0: "batch"},
                FEATURE_OUTPUT: {0: "batch"},
            },
        )
    return path


def write_tokenizer(encoder: str, max_length: int, path: Path) -> Path:
    """The encoder's tokenizer.json with truncation=max_length and BatchLongest padding saved into the file."""
    load_tokenizer(encoder, max_length).save(str(path))
    return path


def tokenize(encoder: str, max_length: int, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    enc = load_tokenizer(encoder, max_length).encode_batch(list(texts))
    ids = np.array([e.ids for e in enc], dtype=np.int64)
    mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
    return ids, mask


def parity(
    onnx_path: Path, graph: QuestionVectorGraph, encoder: str, max_length: int, texts: Sequence[str]
) -> float:
    """Max abs difference of question vectors, ONNX Runtime vs PyTorch, over `texts` (one padded batch and
    one text at a time, since the runtime uses both)."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    sess = ort.InferenceSession(str(onnx_path), opts, providers=["CPUExecutionProvider"])
    worst = 0.0
    batches = [list(texts)] + [[t] for t in texts[:4]]
    for batch in batches:
        ids, mask = tokenize(encoder, max_length, batch)
        (got,) = sess.run([OUTPUT_NAME], {"input_ids": ids, "attention_mask": mask})
        with torch.inference_mode():
            want = graph(torch.from_numpy(ids), torch.from_numpy(mask))[0].numpy()
        gap = float(np.abs(got - want).max())
        if not np.isfinite(gap):  # max() would keep the earlier value over a NaN: a NaN must fail the check
            return float("nan")
        worst = max(worst, gap)
    return worst


def encoder_manifest(encoder: str, max_length: int) -> dict[str, Any]:
    spec = get_spec(encoder)
    return {
        "name": spec.name,
        "source": spec.source(),
        "max_seq_length": max_length,
        "pooling": spec.pooling,
        "normalize": spec.normalize,
        "input_names": INPUT_NAMES,
        "output_name": OUTPUT_NAME,
        "feature_output": FEATURE_OUTPUT,
        "feature_dim": spec.embedding_dim,
        "embedding_dim": spec.embedding_dim,
    }


def export_router(
    predictor: JeirtPredictor,
    out_dir: Path,
    llm_names: list[str],
    *,
    encoder: str,
    max_length: int,
    parity_texts: Sequence[str],
    training: dict[str, Any] | None = None,
    metrics: dict[str, Any] | None = None,
    label: str | None = None,
    parity_tol: float = 1e-4,
    overwrite: bool = False,
    reference_directions: np.ndarray | None = None,
    alignment: dict[str, Any] | None = None,
    reference_center: np.ndarray | None = None,
    training_questions: np.ndarray | None = None,
) -> tuple[Path, float]:
    """Writes the router folder; returns (path, parity max abs diff). Raises if parity exceeds `parity_tol`."""
    from ._runtime import save_artifact

    vectors = predictor.llm_vectors
    if vectors.shape[0] != len(llm_names):
        raise ValueError(f"{vectors.shape[0]} LLM vectors but {len(llm_names)} names")
    graph = build_graph(predictor.adapter, encoder)
    with tempfile.TemporaryDirectory() as tmp:
        onnx_path = export_onnx(graph, Path(tmp) / "encoder.onnx")
        diff = parity(onnx_path, graph, encoder, max_length, parity_texts)
        if not diff <= parity_tol:
            raise RuntimeError(f"ONNX export parity failed: max abs diff {diff:.3g} > {parity_tol}")
        tok_path = write_tokenizer(encoder, max_length, Path(tmp) / "tokenizer.json")
        metrics = dict(metrics or {})
        metrics["export_parity_max_abs_diff"] = diff
        path = save_artifact(
            out_dir,
            llm_names=list(llm_names),
            llm_vectors=vectors,
            tokenizer_json=tok_path,
            encoder_onnx=onnx_path,
            encoder=encoder_manifest(encoder, max_length),
            training=training,
            metrics=metrics,
            label=label,
            overwrite=overwrite,
            reference_directions=reference_directions,
            alignment=alignment,
            reference_center=reference_center,
            training_questions=training_questions,
        )
    return Path(path), diff
