"""A static encoder distilled from the frozen transformer: one vector per vocabulary token, averaged.

Distillation (as model2vec does, written out here so no extra package is needed):
1. every vocabulary token t goes through the transformer alone, as `[CLS] t [SEP]`; its vector is the
   attention-masked mean of the last hidden states (the transformer's own sentence pooling);
2. PCA (centred, fitted on the whole table) to `dim` components: most of the table's variance in fewer numbers;
3. each row is scaled by a SIF weight a / (a + p(t)), p(t) the token's frequency in the training texts (add-one
   smoothed), so that frequent, uninformative tokens ([CLS], [SEP], "the", "of") hardly move the average.

At run time a text's embedding is the mask-weighted mean of its tokens' rows, L2-normalised: a table lookup and an
average. `export_static_router_graph` writes that (plus the trained adapter) as the router's ONNX graph with the
usual inputs (input_ids, attention_mask) and output (question_vectors), so `Router.load` needs no change.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DEFAULT_STATIC_DIM = 256
DEFAULT_SIF_A = 1e-3
NORM_EPS = 1e-12


@dataclass(frozen=True)
class StaticTable:
    """The distilled table (V, dim) float32, SIF weights already multiplied in, plus how it was made."""

    table: np.ndarray
    sif_a: float
    source: str


def token_vectors(encoder: str, batch_size: int = 1024) -> np.ndarray:
    """(V, D) float32: each vocabulary token's mean-pooled last hidden state, fed alone as [CLS] t [SEP]."""
    import torch

    from .encoders import load_encoder, load_tokenizer

    tok = load_tokenizer(encoder, 8)
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    vocab = tok.get_vocab_size()
    transformer = load_encoder(encoder).transformer
    out = np.empty((vocab, transformer.config.hidden_size), dtype=np.float32)
    with torch.inference_mode():
        for start in range(0, vocab, batch_size):
            ids = torch.arange(start, min(start + batch_size, vocab), dtype=torch.int64)
            batch = torch.stack([torch.full_like(ids, cls_id), ids, torch.full_like(ids, sep_id)], dim=1)
            hidden = transformer(
                input_ids=batch, attention_mask=torch.ones_like(batch), token_type_ids=torch.zeros_like(batch)
            ).last_hidden_state
            out[start : start + len(ids)] = hidden.mean(dim=1).numpy()
    return out


def cached_token_vectors(encoder: str) -> np.ndarray:
    """token_vectors(encoder), kept in the embedding cache folder ($JEIRT_CACHE): they depend on nothing else."""
    from .embeddings import cache_root

    path = cache_root() / f"{encoder}__token_vectors.npy"
    if path.is_file():
        return np.load(path)
    vectors = token_vectors(encoder)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, vectors)
    tmp.replace(path)
    return vectors


def pca(vectors: np.ndarray, dim: int) -> np.ndarray:
    """Centred PCA of the rows to `dim` components (dim >= D keeps all, only centring and rotating)."""
    centred = vectors.astype(np.float64) - vectors.mean(axis=0, dtype=np.float64)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    k = min(dim, vt.shape[0])
    return (centred @ vt[:k].T).astype(np.float32)


def token_frequencies(token_ids: Sequence[Sequence[int]], vocab: int) -> np.ndarray:
    """Add-one smoothed relative frequency of each vocabulary id over tokenised texts."""
    counts = np.ones(vocab, dtype=np.float64)
    for ids in token_ids:
        np.add.at(counts, np.asarray(ids, dtype=np.int64), 1.0)
    return counts / counts.sum()


def sif_weights(frequencies: np.ndarray, a: float = DEFAULT_SIF_A) -> np.ndarray:
    """Smooth inverse frequency: a / (a + p), near 1 for rare tokens, small for very frequent ones."""
    return (a / (a + frequencies)).astype(np.float32)


def distil(
    encoder: str,
    train_texts: Sequence[str],
    *,
    max_length: int,
    dim: int = DEFAULT_STATIC_DIM,
    sif_a: float = DEFAULT_SIF_A,
) -> StaticTable:
    """Distil `encoder` into a static table; token frequencies come from `train_texts` only."""
    from .encoders import get_spec, load_tokenizer

    vectors = pca(cached_token_vectors(encoder), dim)
    tok = load_tokenizer(encoder, max_length)
    ids = [e.ids for e in tok.encode_batch(list(train_texts))]  # padding ids are [PAD]: counted, never used
    weights = sif_weights(token_frequencies(ids, vectors.shape[0]), sif_a)
    table = np.ascontiguousarray(vectors * weights[:, None], dtype=np.float32)
    return StaticTable(table=table, sif_a=sif_a, source=f"distilled from {get_spec(encoder).source()}")


def static_embed(table: np.ndarray, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
    """NumPy reference of the runtime graph's encoder part: masked mean of table rows, L2-normalised."""
    rows = table[input_ids].astype(np.float64)  # (N, L, D)
    mask = attention_mask.astype(np.float64)[:, :, None]
    pooled = (rows * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
    norm = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), NORM_EPS)
    return (pooled / norm).astype(np.float32)


def embed_texts(
    table: np.ndarray, tokenizer: object, texts: Sequence[str], batch_size: int = 256
) -> np.ndarray:
    """Static embeddings (N, D) of texts with a `tokenizers.Tokenizer` that pads to the longest in a batch."""
    out = []
    for start in range(0, len(texts), batch_size):
        enc = tokenizer.encode_batch(list(texts[start : start + batch_size]))  # type: ignore[attr-defined]
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        out.append(static_embed(table, ids, mask))
    return np.concatenate(out) if out else np.zeros((0, table.shape[1]), np.float32)


def adapter_weights(adapter: object) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(W1, b1, W2, b2) of the trained 2-layer adapter (Linear → ReLU → Dropout → Linear), float32."""
    net = adapter.net  # type: ignore[attr-defined]
    first, last = net[0], net[3]
    return tuple(  # type: ignore[return-value]
        p.detach().cpu().numpy().astype(np.float32)
        for p in (first.weight, first.bias, last.weight, last.bias)
    )


def adapter_numpy(
    pooled: np.ndarray, w1: np.ndarray, b1: np.ndarray, w2: np.ndarray, b2: np.ndarray
) -> np.ndarray:
    """NumPy reference of the adapter (eval mode: dropout is the identity)."""
    hidden = np.maximum(pooled.astype(np.float64) @ w1.T + b1, 0.0)
    return (hidden @ w2.T + b2).astype(np.float32)


def export_static_router_graph(
    path: Path,
    table: np.ndarray,
    adapter: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    *,
    table_dtype: str = "float16",
    input_names: Sequence[str] = ("input_ids", "attention_mask"),
    output_name: str = "question_vectors",
    feature_output: str = "features",
) -> Path:
    """Write the ONNX graph: Gather → masked mean → L2 normalise → Gemm → Relu → Gemm. The normalised mean (the
    encoder's features, before the adapter) is a second output, `feature_output`, for onboarding corrections.

    The table may be stored as float16 (half the file; the rows are cast to float32 right after the lookup, and
    the rounding is below 1e-3 relative, far under the distillation's own error).
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w1, b1, w2, b2 = adapter
    stored = table.astype(np.float16 if table_dtype == "float16" else np.float32)
    ids_name, mask_name = input_names
    nodes = [
        helper.make_node("Gather", ["table", ids_name], ["rows_stored"], axis=0),
        helper.make_node("Cast", ["rows_stored"], ["rows"], to=TensorProto.FLOAT),
        helper.make_node("Cast", [mask_name], ["mask"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["mask", "axis_1"], ["mask_row"]),  # (N, 1, L)
        helper.make_node("MatMul", ["mask_row", "rows"], ["summed3"]),  # (N, 1, D): masked sum in one kernel
        helper.make_node("Squeeze", ["summed3", "axis_1"], ["summed"]),
        helper.make_node("ReduceSum", ["mask", "axis_1"], ["count_raw"], keepdims=1),
        helper.make_node("Max", ["count_raw", "count_eps"], ["count"]),
        helper.make_node("Div", ["summed", "count"], ["pooled_raw"]),
        helper.make_node("ReduceL2", ["pooled_raw"], ["norm_raw"], axes=[1], keepdims=1),
        helper.make_node("Max", ["norm_raw", "norm_eps"], ["norm"]),
        helper.make_node("Div", ["pooled_raw", "norm"], ["pooled"]),
        helper.make_node("Gemm", ["pooled", "w1", "b1"], ["hidden_raw"], transB=1),
        helper.make_node("Relu", ["hidden_raw"], ["hidden"]),
        helper.make_node("Gemm", ["hidden", "w2", "b2"], [output_name], transB=1),
        helper.make_node("Identity", ["pooled"], [feature_output]),
    ]
    initializers = [
        numpy_helper.from_array(stored, "table"),
        numpy_helper.from_array(np.array([1], dtype=np.int64), "axis_1"),
        numpy_helper.from_array(np.array(1e-9, dtype=np.float32), "count_eps"),
        numpy_helper.from_array(np.array(NORM_EPS, dtype=np.float32), "norm_eps"),
        numpy_helper.from_array(w1, "w1"),
        numpy_helper.from_array(b1, "b1"),
        numpy_helper.from_array(w2, "w2"),
        numpy_helper.from_array(b2, "b2"),
    ]
    graph = helper.make_graph(
        nodes,
        "static_question_vectors",
        [
            helper.make_tensor_value_info(ids_name, TensorProto.INT64, ["batch", "sequence"]),
            helper.make_tensor_value_info(mask_name, TensorProto.INT64, ["batch", "sequence"]),
        ],
        [
            helper.make_tensor_value_info(output_name, TensorProto.FLOAT, ["batch", int(w2.shape[0])]),
            helper.make_tensor_value_info(feature_output, TensorProto.FLOAT, ["batch", int(table.shape[1])]),
        ],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="jeirt-lite")
    model.ir_version = 8  # readable by every onnxruntime the package supports (>= 1.17)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def save_table(path: Path, static: StaticTable) -> Path:
    """The distilled table as safetensors (tensor "table") for reuse without re-running the transformer."""
    from safetensors.numpy import save

    path.write_bytes(
        save({"table": static.table}, metadata={"sif_a": str(static.sif_a), "source": static.source})
    )
    return path


def load_table(path: Path) -> StaticTable:
    from safetensors import safe_open

    with safe_open(str(path), framework="numpy") as handle:
        meta = handle.metadata() or {}
        table = handle.get_tensor("table")
    return StaticTable(table=table, sif_a=float(meta.get("sif_a", "nan")), source=meta.get("source", ""))
