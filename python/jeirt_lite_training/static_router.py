"""The static router: a token table distilled from the transformer encoder, its own JE-IRT adapter trained on
the static embeddings, and a small ONNX graph (Gather + masked mean + normalise + adapter); see static_encoder.py.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .config import FIT_SENTENCES
from .encoders import DEFAULT_ENCODER, load_tokenizer

# Texts per encoder call, written into the router's manifest (encoder.batch_size), from benches/bench_encoders.py:
# the static graph costs little per token, so a few texts per call amortise the call.
STATIC_BATCH_SIZE = 8
# A lookup costs nothing per token, so the static router reads (almost) whole questions.
STATIC_MAX_LENGTH = 512


def fits_sentences(teacher: str, fit_sentences: bool) -> bool:
    """Whether static_embeddings fits the table to the teacher's sentence embeddings: several teachers have no one
    sentence embedding, so their table stays distilled."""
    from .static_encoder import teacher_names

    return fit_sentences and len(teacher_names(teacher)) == 1


def static_embeddings(
    data: Any, learn_from: np.ndarray, max_length: int = STATIC_MAX_LENGTH, teacher: str = DEFAULT_ENCODER,
    fit_sentences: bool = FIT_SENTENCES, log: Callable[[str], None] = lambda _: None,
    fit_on: np.ndarray | None = None,
) -> tuple[Any, np.ndarray]:
    """(StaticTable, (n_questions, dim) embeddings): the table distilled from `teacher` over the default
    transformer's vocabulary (static_encoder.distil), SIF frequencies from the texts of the questions `learn_from`
    only; or (fit_sentences, one teacher) the table whose SIF frequencies and fit to the teacher's sentence
    embeddings (static_sentences) read the texts of the questions `fit_on` only (None: `learn_from`); embeddings as
    the float16 graph computes them."""
    from .static_encoder import distil, embed_texts

    fitted = fits_sentences(teacher, fit_sentences)
    texts = [data.texts[i] for i in (fit_on if fitted and fit_on is not None else learn_from)]
    if fitted:
        from .embeddings import embed_texts as sentence_embeddings
        from .static_sentences import distil_to_sentences

        log(f"fitting the static table to {teacher}'s sentence embeddings of {len(texts)} texts ...")
        static, _ = distil_to_sentences(teacher, texts, sentence_embeddings(texts, teacher), max_length=max_length,
                                        log=log)
    else:
        static = distil(teacher, texts, max_length=max_length)
    table16 = static.table.astype(np.float16).astype(np.float32)  # what the graph stores
    return static, embed_texts(table16, load_tokenizer(DEFAULT_ENCODER, max_length), data.texts)


def export_static_router(
    static: Any, predictor: Any, out: Path, llm_names: list[str], *, max_length: int, training: dict[str, Any],
    metrics: dict[str, Any], label: str | None, overwrite: bool, **alignment_extras: Any,
) -> Path:
    """The router folder of a static encoder: its graph (table + adapter) reading its tensors from the Rust fast
    path's file of them, tokenizer, LLM table and manifest; saved under `out` only once the fast path has passed its
    check against the graph."""
    from ._runtime import save_artifact
    from .add_static_encoder import check_parity, static_encoder_files
    from .export import FEATURE_OUTPUT, INPUT_NAMES, OUTPUT_NAME, write_tokenizer
    from .staging import staged_router
    from .static_encoder import adapter_weights, export_static_router_graph

    training = dict(training)
    training["static_encoder"] = {
        "method": "model2vec-style: per-token [CLS] t [SEP] mean-pooled MiniLM outputs, PCA, SIF weights "
        "from the token frequencies of the texts it learned from",
        "dim": int(static.table.shape[1]),
        "sif_a": static.sif_a,
        "table_dtype": "float16",
    }
    with tempfile.TemporaryDirectory() as tmp_name, staged_router(out, overwrite=overwrite) as staged:
        tmp = Path(tmp_name)
        graph = export_static_router_graph(tmp / "graph.onnx", static.table, adapter_weights(predictor.adapter))
        static_file, linked_graph = static_encoder_files(graph, tmp)  # beside graph.onnx, as encoder.onnx
        save_artifact(
            staged,
            llm_names=list(llm_names),
            llm_vectors=predictor.llm_vectors,
            tokenizer_json=write_tokenizer(DEFAULT_ENCODER, max_length, tmp / "tokenizer.json"),
            encoder_onnx=linked_graph,
            static_encoder=static_file,
            encoder={
                "name": f"{DEFAULT_ENCODER}-static",
                "source": static.source,
                "max_seq_length": max_length,
                "pooling": "mean of SIF-weighted distilled token vectors",
                "normalize": True,
                "input_names": INPUT_NAMES,
                "output_name": OUTPUT_NAME,
                "feature_output": FEATURE_OUTPUT,
                "feature_dim": int(static.table.shape[1]),
                "embedding_dim": int(static.table.shape[1]),
                "batch_size": STATIC_BATCH_SIZE,
            },
            training=training,
            metrics=metrics,
            label=label or f"JE-IRT, static encoder distilled from {DEFAULT_ENCODER}",
            **alignment_extras,
        )
        check_parity(staged, name=Path(out))
    return Path(out)
