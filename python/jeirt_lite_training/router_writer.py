"""Writing a trained predictor as a router folder, for whichever encoder it read, with the record router.json keeps of
how it was trained."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from ._runtime import bytes_escaped
from .encoders import get_spec
from .model import JeirtPredictor
from .prepared import Prepared


def _display_path(source: str) -> str:
    """Relative to the working folder when the data lies under it (a repository's own data, trained from its
    root), so a router written there does not record a machine's paths; else as given. A byte of the path that
    is not UTF-8 is recorded escaped, as `\\xff` (_text.bytes_escaped): the record names the data for a
    reader, nothing opens it."""
    try:
        shown = str(Path(source).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        shown = str(source)
    return bytes_escaped(shown)


def training_summary(prep: Prepared, predictor: JeirtPredictor) -> dict[str, Any]:
    return {
        "method": "JE-IRT (frozen encoder + 2-layer MLP adapter, LLM vectors; logit = q·m/|q| - |q|)",
        "data": _display_path(prep.source),
        "dataset": bytes_escaped(prep.data.name),  # the data's folder or file name, as --data gave it
        "n_questions": prep.data.n_questions,
        "n_llms": prep.data.n_llms,
        "split": {
            "seed": prep.split_seed,
            "n_train_questions": len(prep.split.train),
            "n_val_questions": len(prep.split.val),
            "n_test_questions": len(prep.split.test),
            "n_train_cells": len(prep.train),
            "n_val_cells": len(prep.val),
            "n_test_cells": len(prep.test),
            # the targets of the draw: with the seed and the data, they draw the same parts again (the report)
            **{name: value for name, value in (("val_fraction", prep.split.val_fraction),
                                               ("test_fraction", prep.split.test_fraction)) if value is not None},
        },
        "hyper_parameters": predictor.config.to_dict(),
        "best_epoch": predictor.best_epoch,
        "best_val_loss": predictor.best_val_loss,
        "train_seconds": round(predictor.train_seconds, 1),
        "encoder_source": get_spec(prep.encoder).source(),
        "trained_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **({"unanswered_benchmarks": missing} if (missing := learned_benchmarks_missing(prep)) else {}),
    }


def learned_benchmarks_missing(prep: Prepared) -> dict[str, list[str]]:
    """The LLMs that answered none of some benchmark's questions among those the router learns from (the training
    and validation parts: the refit reads both), with those benchmarks."""
    from .coverage import unanswered_benchmarks
    from .types import Responses

    return unanswered_benchmarks(prep.data, Responses.concatenate([prep.train, prep.val]))


def parity_texts(prep: Prepared, n: int = 4) -> list[str]:
    """Short, middle and long real questions for the export's parity check: from the test part, or from all
    questions when there is none."""
    rows = prep.split.test if len(prep.split.test) else np.arange(prep.data.n_questions)
    by_len = sorted((prep.data.texts[i] for i in rows), key=len)
    mid = len(by_len) // 2
    return by_len[:n] + by_len[mid : mid + n] + by_len[-n:]


def export_trained(
    prep: Prepared,
    predictor: JeirtPredictor,
    out_dir: Path,
    *,
    metrics: dict[str, Any],
    training: dict[str, Any],
    reference_parts: tuple[np.ndarray, np.ndarray],
    learned_from: np.ndarray,
    label: str | None = None,
) -> tuple[Path, float | None]:
    """Write the router folder for whichever encoder `prep` used at `out_dir`, a path nothing holds yet (fit's is
    staging.staged_router's); returns (path, ONNX parity or None).

    reference_parts: (questions whose vectors are the alignment reference, questions that set its threshold).
    learned_from: the questions whose answers the predictor was trained on (training_questions.npy records their
    texts' hashes; add_llm reads it).
    label: --label, recorded with a byte that is not UTF-8 escaped, as the data's path is."""
    from ._runtime import training_question_set
    from .reference import alignment_reference

    label = None if label is None else bytes_escaped(label)

    reference, center, alignment = alignment_reference(
        predictor.question_vectors(prep.embeddings[reference_parts[0]]),
        predictor.question_vectors(prep.embeddings[reference_parts[1]]),
    )
    extras = {"reference_directions": reference, "reference_center": center, "alignment": alignment,
              "training_questions": training_question_set(prep.data.texts[i] for i in learned_from)}
    if prep.static is not None:
        from .static_router import export_static_router

        path = export_static_router(
            prep.static, predictor, out_dir, prep.data.llm_names, max_length=prep.max_length, training=training,
            metrics=metrics, label=label, overwrite=False, **extras,
        )
        return path, None
    from .export import export_router

    return export_router(
        predictor, out_dir, prep.data.llm_names, encoder=prep.encoder, max_length=prep.max_length,
        parity_texts=parity_texts(prep), training=training, metrics=metrics, label=label,
        **extras,
    )


def folder_size_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6
