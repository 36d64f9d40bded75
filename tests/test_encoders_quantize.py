"""The int8 recipe's node selection on a small graph named like the exporter names MiniLM + adapter nodes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from scripts.quantize import cosine_rows, int8_excluded_nodes, quantize_int8

LAYER = "/encoder/transformer/encoder/layer.0"


def _graph(path: Path) -> Path:
    """x (N, 16) → attention-output MatMul → FFN-output MatMul → adapter Gemm: the three kinds of node."""
    rng = np.random.default_rng(0)
    weights = {
        name: rng.normal(size=(16, 16)).astype(np.float32) for name in ("w_attn", "w_ffn", "w_adapter")
    }
    nodes = [
        helper.make_node("MatMul", ["x", "w_attn"], ["a"], name=f"{LAYER}/attention/output/dense/MatMul"),
        helper.make_node("MatMul", ["a", "w_ffn"], ["f"], name=f"{LAYER}/output/dense/MatMul"),
        helper.make_node("Gemm", ["f", "w_adapter", "b"], ["y"], name="/adapter/net/net.0/Gemm", transB=1),
    ]
    inits = [numpy_helper.from_array(w, name) for name, w in weights.items()]
    inits.append(numpy_helper.from_array(np.zeros(16, np.float32), "b"))
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 16])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def test_ffn_output_and_adapter_are_excluded_attention_projection_is_not(tmp_path: Path) -> None:
    excluded = int8_excluded_nodes(onnx.load(str(_graph(tmp_path / "g.onnx"))))
    assert f"{LAYER}/output/dense/MatMul" in excluded
    assert "/adapter/net/net.0/Gemm" in excluded and "/adapter/net/net.0/Gemm_MatMul" in excluded
    assert f"{LAYER}/attention/output/dense/MatMul" not in excluded


def test_quantize_int8_only_quantises_the_attention_projection(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime.quantization")
    out, _ = quantize_int8(_graph(tmp_path / "g.onnx"), tmp_path / "q.onnx")
    nodes = onnx.load(str(out)).graph.node
    quantised = [n.name for n in nodes if n.op_type == "MatMulInteger"]
    assert len(quantised) == 1 and "attention" in quantised[0]
    assert not any(
        "adapter" in n.name for n in nodes if n.op_type in ("MatMulInteger", "DynamicQuantizeLinear")
    )


def test_quantize_int8_refuses_a_graph_without_ffn_outputs(tmp_path: Path) -> None:
    model = onnx.load(str(_graph(tmp_path / "g.onnx")))
    for node in model.graph.node:
        node.name = node.name.replace("/output/dense/", "/renamed/")
    onnx.save(model, str(tmp_path / "renamed.onnx"))
    with pytest.raises(RuntimeError, match="FFN-output"):
        quantize_int8(tmp_path / "renamed.onnx", tmp_path / "q.onnx")


def test_cosine_rows() -> None:
    a = np.array([[1.0, 0.0], [1.0, 1.0]])
    np.testing.assert_allclose(cosine_rows(a, np.array([[2.0, 0.0], [-1.0, -1.0]])), [1.0, -1.0])
