"""A tiny but real router built in code: a word-level tokenizer, an ONNX graph made with onnx.helper (embedding
lookup, attention-masked mean pooling, linear adapter) and a random LLM table.

Tests use it where the shipped MiniLM router would be slow, and `reference_vectors` re-implements the graph in
NumPy so the runtime's tokenising, batching, padding and ordering can be checked exactly.

    python tests/tiny_router.py OUT_DIR     # writes a tiny router folder
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np
from jeirt_lite.artifact import save_artifact

WORDS = (
    "what is the of a to in and how many which derivative integral prime number code python function returns "
    "value list law court contract cell protein energy force mass velocity history war king economy market price "
    "demand supply philosophy ethics mind psychology memory chemistry acid base reaction engineering circuit"
).split()


def build_tokenizer(path: Path) -> None:
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    vocab = {"[PAD]": 0, "[UNK]": 1}
    for word in WORDS:
        vocab.setdefault(word, len(vocab))
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(path))


def build_encoder_onnx(path: Path, embeddings: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> None:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes = [
        helper.make_node("Gather", ["embeddings", "input_ids"], ["token_vectors"]),
        helper.make_node("Cast", ["attention_mask"], ["mask_float"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["mask_float", "axis_2"], ["mask_3d"]),
        helper.make_node("Mul", ["token_vectors", "mask_3d"], ["masked"]),
        helper.make_node("ReduceSum", ["masked", "axis_1"], ["summed"], keepdims=0),
        helper.make_node("ReduceSum", ["mask_3d", "axis_1"], ["count"], keepdims=0),
        helper.make_node("Max", ["count", "one"], ["count_safe"]),
        helper.make_node("Div", ["summed", "count_safe"], ["pooled"]),
        helper.make_node("MatMul", ["pooled", "weight"], ["projected"]),
        helper.make_node("Add", ["projected", "bias"], ["question_vectors"]),
    ]
    initializers = [
        numpy_helper.from_array(embeddings.astype(np.float32), "embeddings"),
        numpy_helper.from_array(weight.astype(np.float32), "weight"),
        numpy_helper.from_array(bias.astype(np.float32), "bias"),
        numpy_helper.from_array(np.array([2], dtype=np.int64), "axis_2"),
        numpy_helper.from_array(np.array([1], dtype=np.int64), "axis_1"),
        numpy_helper.from_array(np.array(1.0, dtype=np.float32), "one"),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny_question_encoder",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"]),
        ],
        [helper.make_tensor_value_info("question_vectors", TensorProto.FLOAT, ["batch", weight.shape[1]])],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # readable by every onnxruntime >= 1.17
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def build_tiny_router(
    path: Path,
    *,
    n_llms: int = 5,
    dim: int = 4,
    embedding_dim: int = 8,
    max_seq_length: int = 16,
    seed: int = 0,
    llm_names: Optional[Sequence[str]] = None,
    label: str = "tiny test router built in code (random weights)",
) -> Path:
    rng = np.random.default_rng(seed)
    names = list(llm_names) if llm_names is not None else [f"llm-{i}" for i in range(n_llms)]
    with tempfile.TemporaryDirectory() as scratch:
        tokenizer_path = Path(scratch) / "tokenizer.json"
        onnx_path = Path(scratch) / "encoder.onnx"
        build_tokenizer(tokenizer_path)
        vocab_size = len(WORDS) + 2
        build_encoder_onnx(
            onnx_path,
            embeddings=rng.normal(size=(vocab_size, embedding_dim)),
            weight=rng.normal(size=(embedding_dim, dim)),
            bias=rng.normal(size=dim) * 0.1,
        )
        return save_artifact(
            path,
            llm_names=names,
            llm_vectors=rng.normal(size=(len(names), dim)).astype(np.float32),
            tokenizer_json=tokenizer_path,
            encoder_onnx=onnx_path,
            encoder={
                "name": "tiny-word-mean",
                "source": "built in code by tests/tiny_router.py",
                "max_seq_length": max_seq_length,
                "pooling": "mean",
                "normalize": False,
                "input_names": ["input_ids", "attention_mask"],
                "output_name": "question_vectors",
                "embedding_dim": embedding_dim,
            },
            label=label,
        )


def reference_vectors(router_path: Path, texts: Sequence[str]) -> np.ndarray:
    """The tiny encoder re-implemented in NumPy, one text at a time (no batching, no padding)."""
    import onnx
    from jeirt_lite.artifact import load_artifact
    from onnx import numpy_helper
    from tokenizers import Tokenizer

    artifact = load_artifact(router_path)
    weights = {t.name: numpy_helper.to_array(t) for t in onnx.load(str(artifact.encoder_path)).graph.initializer}
    tokenizer = Tokenizer.from_file(str(artifact.tokenizer_path))
    tokenizer.enable_truncation(max_length=artifact.encoder.max_seq_length)
    out = []
    for text in texts:
        ids = tokenizer.encode(text).ids
        pooled = weights["embeddings"][ids].mean(axis=0)
        out.append(pooled @ weights["weight"] + weights["bias"])
    return np.asarray(out, dtype=np.float32).reshape(len(texts), -1)


def copy_router(src: Path, dst: Path) -> Path:
    """A byte-for-byte copy of the router folder `src` at `dst` (made here), for a test to damage or edit."""
    dst.mkdir()
    for item in src.iterdir():
        (dst / item.name).write_bytes(item.read_bytes())
    return dst


def edit_and_reseal(folder: Path, edit: Callable[[dict[str, Any]], None] = lambda manifest: None) -> None:
    """Apply `edit` to router.json, then re-hash the files and re-bind the table as save_artifact would: a folder
    that is consistent but wrong, to test the checks that come after the hashes and the binding."""
    from jeirt_lite._manifest import content_digest, names_in_order
    from jeirt_lite.artifact import DIGEST_KEY, LLM_TENSOR, NAMES_KEY, sha256_of
    from safetensors import safe_open
    from safetensors.numpy import save

    manifest = json.loads((folder / "router.json").read_text())
    edit(manifest)
    for role, entry in manifest["files"].items():
        if role != "llms" and (folder / entry["path"]).is_file():
            entry["sha256"] = sha256_of(folder / entry["path"])
    llms_path = folder / manifest["files"]["llms"]["path"]
    with safe_open(str(llms_path), framework="numpy") as handle:
        table = handle.get_tensor(LLM_TENSOR)
    binding = {NAMES_KEY: names_in_order(manifest["llms"]), DIGEST_KEY: content_digest(manifest)}
    llms_path.write_bytes(save({LLM_TENSOR: table}, metadata=binding))
    manifest["files"]["llms"]["sha256"] = sha256_of(llms_path)
    (folder / "router.json").write_text(json.dumps(manifest))



def refusals_of_an_optional_table(folder: Path, role: str, scratch: Path) -> dict[str, str]:
    """What `load_artifact` says of three copies of `folder`, each resealed so that only the damage is wrong: its
    router.json block `role` dropped, its files entry dropped, and its table's bytes replaced by garbage."""
    from jeirt_lite._errors import JeirtError
    from jeirt_lite.artifact import load_artifact

    def drop_block(manifest: dict[str, Any]) -> None:
        del manifest[role]

    def drop_file(manifest: dict[str, Any]) -> None:
        del manifest["files"][role]

    said: dict[str, str] = {}
    for damage in ("block", "file", "garbage"):
        copy = copy_router(folder, scratch / f"{role}-{damage}")
        if damage == "garbage":
            (copy / f"{role}.safetensors").write_bytes(b"not a tensor file")
        edit_and_reseal(copy, {"block": drop_block, "file": drop_file, "garbage": lambda manifest: None}[damage])
        try:
            load_artifact(copy)
        except JeirtError as err:
            said[damage] = str(err)
    return said

if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python tests/tiny_router.py OUT_DIR")
    print(build_tiny_router(Path(sys.argv[1])))
