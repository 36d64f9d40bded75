"""The static router: a token table distilled from the transformer encoder, its own JE-IRT adapter trained on
the static embeddings, and a small ONNX graph (Gather + masked mean + normalise + adapter); see static_encoder.py.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from .encoders import DEFAULT_ENCODER, load_tokenizer
from .shipped import DEFAULT_HYPER

# The static router's adapter uses the default router's settings: on the validation split with static embeddings
# no other dropout, learning rate or weight decay tried beat them (docs/hyperparameters.md).
STATIC_HYPER: dict[str, Any] = dict(DEFAULT_HYPER)
# Texts per encoder call, written into the router's manifest (encoder.batch_size), from benches/bench_encoders.py:
# the static graph costs little per token, so a few texts per call amortise the call.
STATIC_BATCH_SIZE = 8
# A lookup costs nothing per token, so the static router reads (almost) whole questions.
STATIC_MAX_LENGTH = 512


def build_static(
    out: Path, data: Path, threads: int, max_length: int = STATIC_MAX_LENGTH, *, folder: str = "static",
    label: str | None = None,
) -> dict[str, Any]:
    """Distil the static encoder, train its adapter, write `out / folder` with the alignment reference, the
    calibration fitted on validation and the parameter-count cost proxy (the same extras as every shipped router)."""
    from jeirt_lite.artifact import save_artifact

    from .add_static_encoder import add_static_encoder
    from .calibration import calibrate_router
    from .data import load_dataset
    from .export import INPUT_NAMES, OUTPUT_NAME, write_tokenizer
    from .model import JeirtPredictor
    from .pipeline import Prepared, evaluate, per_llm_accuracy_floor, training_summary
    from .reference import alignment_reference
    from .routing_eval import cost_proxies
    from .splits import make_split
    from .static_encoder import adapter_weights, distil, embed_texts, export_static_router_graph

    t0 = time.perf_counter()
    dataset = load_dataset(data)
    split = make_split(dataset, seed=0)
    static = distil(DEFAULT_ENCODER, [dataset.texts[i] for i in split.train], max_length=max_length)
    table16 = static.table.astype(np.float16).astype(np.float32)  # what the graph stores
    embeddings = embed_texts(table16, load_tokenizer(DEFAULT_ENCODER, max_length), dataset.texts)
    prep = Prepared(
        data=dataset,
        split=split,
        split_seed=0,
        train=split.responses(dataset, "train"),
        val=split.responses(dataset, "val"),
        test=split.responses(dataset, "test"),
        embeddings=embeddings,
        encoder=DEFAULT_ENCODER,
        max_length=max_length,
        source=str(data),
    )
    predictor = JeirtPredictor(**STATIC_HYPER).fit(embeddings, prep.train, prep.val, dataset.n_llms)
    metrics = {
        "test": evaluate(predictor, prep, "test"),
        "val": evaluate(predictor, prep, "val"),
        "test_per_llm_accuracy_baseline": per_llm_accuracy_floor(prep, "test"),
    }
    reference, center, alignment = alignment_reference(
        predictor.question_vectors(embeddings[split.train]), predictor.question_vectors(embeddings[split.val])
    )
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        graph = export_static_router_graph(
            tmp / "encoder.onnx", static.table, adapter_weights(predictor.adapter)
        )
        tokenizer = write_tokenizer(DEFAULT_ENCODER, max_length, tmp / "tokenizer.json")
        training = training_summary(prep, predictor)
        training["static_encoder"] = {
            "method": "model2vec-style: per-token [CLS] t [SEP] mean-pooled MiniLM outputs, PCA, SIF weights "
            "from train-split token frequencies",
            "dim": int(static.table.shape[1]),
            "sif_a": static.sif_a,
            "table_dtype": "float16",
        }
        router_path = save_artifact(
            out / folder,
            llm_names=dataset.llm_names,
            llm_vectors=predictor.llm_vectors,
            tokenizer_json=tokenizer,
            encoder_onnx=graph,
            encoder={
                "name": f"{DEFAULT_ENCODER}-static",
                "source": static.source,
                "max_seq_length": max_length,
                "pooling": "mean of SIF-weighted distilled token vectors",
                "normalize": True,
                "input_names": INPUT_NAMES,
                "output_name": OUTPUT_NAME,
                "embedding_dim": int(static.table.shape[1]),
                "batch_size": STATIC_BATCH_SIZE,
            },
            training=training,
            metrics=metrics,
            label=label or f"JE-IRT on {dataset.name}, static encoder distilled from {DEFAULT_ENCODER}",
            overwrite=True,
            reference_directions=reference,
            reference_center=center,
            alignment=alignment,
        )
    calibrate_router(router_path, prep, predictor, costs=cost_proxies(dataset.llm_names))
    add_static_encoder(router_path)  # the Rust fast path's table and adapter, checked against the graph
    return {"static": {"test": metrics["test"], "seconds": round(time.perf_counter() - t0, 1)}}
