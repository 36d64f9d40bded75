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

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

# The student: the tokenizer (and so the vocabulary) of every static table, whichever teacher it was distilled from;
# the runtime's Rust fast path reads BERT WordPiece tokenizers like this one.
DEFAULT_STUDENT = "all-MiniLM-L6-v2"
DEFAULT_STATIC_DIM = 256
DEFAULT_SIF_A = 1e-3
NORM_EPS = 1e-12


@dataclass(frozen=True)
class StaticTable:
    """The distilled table (V, dim) float32, SIF weights already multiplied in, plus how it was made."""

    table: np.ndarray
    sif_a: float
    source: str


def special_tokens(tok: Any) -> dict[str, str]:
    """A tokenizer's special tokens by role: the start and end it wraps every text in (BERT's [CLS] ... [SEP],
    RoBERTa/MPNet's <s> ... </s>), its padding and unknown tokens, and its mask token when it has one."""
    vocab = tok.get_vocab()
    by_id = {i: t for t, i in vocab.items()}
    wrapped = tok.encode("").ids  # an empty text is exactly the start and end tokens
    roles = {"start": by_id[wrapped[0]], "end": by_id[wrapped[-1]]}
    if tok.padding:
        roles["pad"] = tok.padding["pad_token"]
    spec = json.loads(tok.to_str())
    unk = spec["model"].get("unk_token")  # what the model emits for an unknown word (MPNet's is "[UNK]")
    if unk in vocab:
        roles["unk"] = unk
    added = [t["content"] for t in spec.get("added_tokens", []) if t.get("special")]
    mask = next((t for t in added if "mask" in t.lower()), None)
    if mask is not None:
        roles["mask"] = mask
    return roles


@dataclass(frozen=True)
class VocabularyMap:
    """For each student token id, the teacher's token ids that spell it (without the teacher's start/end)."""

    teacher_ids: list[list[int]]
    start: int  # the teacher's start and end tokens, wrapped around every student token
    end: int
    by_role: int  # student special tokens mapped to the teacher's token of the same role
    spelled: int  # student tokens with no exact match, spelled with the teacher's own tokenizer


def map_vocabulary(student: Any, teacher: Any) -> VocabularyMap:
    """Student token -> teacher ids: the same role for special tokens, else the same string, else the teacher's
    tokenization of the string (a WordPiece continuation "##x" spelled as "x")."""
    s_roles, t_roles = special_tokens(student), special_tokens(teacher)
    t_vocab = teacher.get_vocab()
    role_of = {token: role for role, token in s_roles.items() if role in t_roles}
    by_id = {i: t for t, i in student.get_vocab().items()}
    out: list[list[int]] = []
    by_role = spelled = 0
    for index in range(student.get_vocab_size()):
        token = by_id[index]
        if token in role_of:
            out.append([t_vocab[t_roles[role_of[token]]]])
            by_role += 1
        elif token in t_vocab:
            out.append([t_vocab[token]])
        else:
            ids = teacher.encode(token.removeprefix("##"), add_special_tokens=False).ids
            out.append(ids or [t_vocab[t_roles["unk"]]])
            spelled += 1
    return VocabularyMap(out, t_vocab[t_roles["start"]], t_vocab[t_roles["end"]], by_role, spelled)


def token_vectors(
    teacher: str, student: str = DEFAULT_STUDENT, *, batch_size: int = 1024, rows: Sequence[int] | None = None
) -> np.ndarray:
    """(V, D) float32, one row per token of the student's vocabulary (or per id in `rows`): the teacher's
    mean-pooled last hidden states over its start token, the token's teacher ids (map_vocabulary) and its end
    token, e.g. [CLS] t [SEP] when teacher and student are one model. D is the teacher's width."""
    import torch

    from .encoders import load_encoder, load_tokenizer

    mapping = map_vocabulary(load_tokenizer(student, 64), load_tokenizer(teacher, 64))
    wanted = np.arange(len(mapping.teacher_ids)) if rows is None else np.asarray(rows, dtype=np.int64)
    encoder = load_encoder(teacher)
    out = np.empty((len(wanted), encoder.transformer.config.hidden_size), dtype=np.float32)
    sequences = [[mapping.start, *mapping.teacher_ids[i], mapping.end] for i in wanted]
    lengths = np.array([len(seq) for seq in sequences])
    with torch.inference_mode():
        for length in np.unique(lengths):  # one length per batch: no padding (all 3 for a vocabulary map)
            where = np.flatnonzero(lengths == length)
            for start in range(0, len(where), batch_size):
                pick = where[start : start + batch_size]
                batch = torch.tensor([sequences[i] for i in pick], dtype=torch.int64)
                extra = {"token_type_ids": torch.zeros_like(batch)} if encoder.takes_token_types else {}
                hidden = encoder.transformer(
                    input_ids=batch, attention_mask=torch.ones_like(batch), **extra
                ).last_hidden_state
                out[pick] = hidden.mean(dim=1).numpy()
    return out


def cached_token_vectors(teacher: str, student: str = DEFAULT_STUDENT) -> np.ndarray:
    """token_vectors(teacher, student), kept in the embedding cache folder ($JEIRT_CACHE): they depend on
    nothing else."""
    from .embeddings import cache_root

    name = teacher if teacher == student else f"{teacher}__for__{student}"
    path = cache_root() / f"{name}__token_vectors.npy"
    if path.is_file():
        return np.load(path)
    vectors = token_vectors(teacher, student)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, vectors)
    tmp.replace(path)
    return vectors


def teacher_names(teacher: str) -> list[str]:
    """"A" or "A+B" (several teachers, their token vectors joined) -> the registered encoder names."""
    from .encoders import ENCODERS

    names = [name.strip() for name in teacher.split("+")]
    unknown = [name for name in names if name not in ENCODERS]
    if unknown or len(set(names)) != len(names):
        raise ValueError(f"teacher {teacher!r}: give one or more of {sorted(ENCODERS)} joined by '+', each once")
    return names


def teacher_vectors(teacher: str, student: str = DEFAULT_STUDENT) -> np.ndarray:
    """The token vectors of one teacher, or of several side by side: each centred and scaled to a mean squared
    row norm of 1 first, so that every teacher weighs the same in the PCA whatever its width and scale."""
    names = teacher_names(teacher)
    if len(names) == 1:
        return cached_token_vectors(names[0], student)
    blocks = []
    for name in names:
        block = cached_token_vectors(name, student).astype(np.float64)
        block -= block.mean(axis=0)
        blocks.append(block / np.sqrt((block**2).sum(axis=1).mean()))
    return np.concatenate(blocks, axis=1).astype(np.float32)


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
    teacher: str,
    train_texts: Sequence[str],
    *,
    max_length: int,
    dim: int = DEFAULT_STATIC_DIM,
    sif_a: float = DEFAULT_SIF_A,
    student: str = DEFAULT_STUDENT,
) -> StaticTable:
    """Distil `teacher` ("A" or "A+B", teacher_vectors) into a static table over the student's vocabulary; token
    frequencies come from `train_texts` only, tokenised by the student."""
    table = sif_weighted(pca(teacher_vectors(teacher, student), dim), train_texts, max_length=max_length,
                         sif_a=sif_a, student=student)
    return StaticTable(table=table, sif_a=sif_a, source=f"distilled from {teacher_sources(teacher)}")


def teacher_sources(teacher: str) -> str:
    from .encoders import get_spec

    return " + ".join(get_spec(name).source() for name in teacher_names(teacher))


def sif_weighted(
    vectors: np.ndarray, train_texts: Sequence[str], *, max_length: int, sif_a: float = DEFAULT_SIF_A,
    student: str = DEFAULT_STUDENT,
) -> np.ndarray:
    """Each token's row times its SIF weight, the frequencies read from `train_texts` tokenised by the student."""
    from .encoders import load_tokenizer

    tok = load_tokenizer(student, max_length)
    ids = [e.ids for e in tok.encode_batch(list(train_texts))]  # padding ids are [PAD]: counted, never used
    weights = sif_weights(token_frequencies(ids, vectors.shape[0]), sif_a)
    return np.ascontiguousarray(vectors * weights[:, None], dtype=np.float32)


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

