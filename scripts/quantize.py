"""Faster transformer graphs for a router: BERT operator fusion (same answers) and an accuracy-keeping int8 recipe.

Both take the exported question-vector graph (encoder → mean pooling → normalise → adapter, see export.py) and
write a new ONNX file with the same inputs and output, so a router folder only swaps its `encoder.onnx`.

* `fuse_bert`: onnxruntime.transformers' offline optimiser fuses attention, GELU, skip-layer-norm and the embedding
  layer norm. Same arithmetic, fewer kernels (the measured difference is in docs/research/encoders.md).
* `quantize_int8`: dynamic int8 (weights int8 per output channel, activations quantised per tensor at run time) on
  every MatMul EXCEPT the six FFN-output MatMuls (intermediate 1536 → 384, which feed the residual stream's outlier
  dimensions: per-tensor activation quantisation there is what damages the default recipe,
  docs/research/encoders.md) and the adapter's MatMuls (tiny, and their error goes straight into the question vector).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx

# Node names from torch.onnx.export of QuestionVectorGraph: ".../layer.<i>/output/dense/MatMul" is the FFN output
# (the attention projection is ".../layer.<i>/attention/output/dense/MatMul").
FFN_OUTPUT_MATMUL = re.compile(r"layer\.\d+/output/dense/MatMul")
ADAPTER_NODE = re.compile(r"^/adapter/")

# The documented promise of `quantize_int8` on MiniLM's embedding (cosine to fp32 on real MMLU-Pro texts; measured
# values are in docs/research/encoders.md and above these with margin). Tests hold the recipe to them.
INT8_MEAN_COSINE = 0.99
INT8_MIN_COSINE = 0.98


def fuse_bert(src: Path, dst: Path, *, num_heads: int = 12, hidden_size: int = 384) -> Path:
    """Write the operator-fused version of the BERT graph `src` to `dst`."""
    from onnxruntime.transformers.optimizer import optimize_model

    # opt_level=0: only the offline fusions; ONNX Runtime applies its own graph optimisations again at load time,
    # and a graph saved after level-2 optimisations may hold CPU-only ops tied to this ORT build.
    model = optimize_model(
        str(src), model_type="bert", num_heads=num_heads, hidden_size=hidden_size, opt_level=0, use_gpu=False
    )
    model.save_model_to_file(str(dst))
    return dst


def int8_excluded_nodes(model: onnx.ModelProto) -> list[str]:
    """MatMuls that stay fp32: the FFN outputs and everything of the adapter."""
    names = []
    for node in model.graph.node:
        if node.op_type not in ("MatMul", "Gemm"):
            continue
        if FFN_OUTPUT_MATMUL.search(node.name) or ADAPTER_NODE.search(node.name):
            names.append(node.name)
            if node.op_type == "Gemm":
                # The quantiser first splits a Gemm into "<name>_MatMul" + "<name>_Add" and checks the exclusion
                # list against the NEW name: without it the adapter would be quantised after all.
                names.append(f"{node.name}_MatMul")
    return names


def quantize_int8(src: Path, dst: Path) -> tuple[Path, list[str]]:
    """Dynamic int8 (per-channel weights) of `src`, FFN-output and adapter MatMuls left fp32.

    Returns the written path and the names of the nodes left in fp32 (an error if none were found: the name
    pattern no longer matches the exporter's names, and the recipe would silently be the damaging default).
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic

    excluded = int8_excluded_nodes(onnx.load(str(src), load_external_data=False))
    n_ffn = sum(1 for name in excluded if FFN_OUTPUT_MATMUL.search(name))
    if n_ffn == 0:
        raise RuntimeError(f"{src}: found no FFN-output MatMul to keep in fp32; node names changed?")
    quantize_dynamic(
        str(src),
        str(dst),
        weight_type=QuantType.QInt8,
        per_channel=True,
        nodes_to_exclude=excluded,
        op_types_to_quantize=["MatMul", "Attention"],
        # Fused ops (com.microsoft domain) defeat shape inference; their outputs are float32.
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
    )
    return dst, excluded


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity of matching rows of a and b."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    num = (a * b).sum(axis=1)
    den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return num / np.maximum(den, 1e-30)


def run_graph(path: Path, ids_masks: Sequence[tuple[np.ndarray, np.ndarray]], threads: int = 1) -> np.ndarray:
    """Outputs of an ONNX graph for a list of (input_ids, attention_mask) batches, rows stacked."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    output = session.get_outputs()[0].name
    rows = [session.run([output], {"input_ids": ids, "attention_mask": mask})[0] for ids, mask in ids_masks]
    return np.concatenate(rows, axis=0)
