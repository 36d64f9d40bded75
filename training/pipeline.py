"""One JE-IRT run end to end: load data, split, embed (cached), train with early stopping, evaluate, export.

Shared by the CLI (`python -m training fit|sweep`) and `build_default_router.py`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .data import load_dataset
from .embeddings import embed_dataset
from .encoders import DEFAULT_ENCODER, DEFAULT_MAX_LENGTH, get_spec
from .fit import llm_accuracies
from .metrics import all_metrics
from .model import JeirtPredictor
from .splits import make_split
from .types import Dataset, Responses, Split


@dataclass
class Prepared:
    """A dataset with its split, cells per part and frozen embeddings: everything a fit needs."""

    data: Dataset
    split: Split
    split_seed: int
    train: Responses
    val: Responses
    test: Responses
    embeddings: np.ndarray
    encoder: str
    max_length: int
    source: str = ""


def prepare(
    data_dir: Path | str,
    *,
    split_seed: int = 0,
    val_fraction: float = 0.1,
    test_fraction: float = 0.2,
    encoder: str = DEFAULT_ENCODER,
    max_length: int = DEFAULT_MAX_LENGTH,
    progress: bool = True,
) -> Prepared:
    data = load_dataset(data_dir)
    split = make_split(data, seed=split_seed, val_fraction=val_fraction, test_fraction=test_fraction)
    emb = embed_dataset(data, encoder=encoder, max_length=max_length, progress=progress)
    return Prepared(
        data=data,
        split=split,
        split_seed=split_seed,
        train=split.responses(data, "train"),
        val=split.responses(data, "val"),
        test=split.responses(data, "test"),
        embeddings=emb,
        encoder=encoder,
        max_length=max_length,
        source=str(data_dir),
    )


def evaluate(predictor: Any, prep: Prepared, part: str) -> dict[str, float]:
    cells: Responses = getattr(prep, part)
    p = predictor.predict_proba(prep.embeddings, cells.question, cells.llm)
    return all_metrics(cells.correct, p)


def per_llm_accuracy_floor(prep: Prepared, part: str) -> dict[str, float]:
    """The floor to beat: P(correct) = the LLM's smoothed training accuracy, whatever the question."""
    cells: Responses = getattr(prep, part)
    acc = llm_accuracies(prep.train, prep.data.n_llms)
    return all_metrics(cells.correct, acc[cells.llm])


@dataclass
class FitResult:
    predictor: JeirtPredictor
    val: dict[str, float]
    test: dict[str, float]
    floor_test: dict[str, float]
    router_path: Path | None = None
    parity: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _display_path(source: str) -> str:
    """Repo-relative when the data lives in this repository, so a manifest does not leak a machine's paths."""
    root = Path(__file__).resolve().parent.parent
    try:
        return str(Path(source).resolve().relative_to(root))
    except ValueError:
        return str(source)


def training_summary(prep: Prepared, predictor: JeirtPredictor) -> dict[str, Any]:
    return {
        "method": "JE-IRT (frozen encoder + 2-layer MLP adapter, LLM vectors; logit = q·m/|q| - |q|)",
        "data": _display_path(prep.source),
        "dataset": prep.data.name,
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
        },
        "hyper_parameters": predictor.config.to_dict(),
        "best_epoch": predictor.best_epoch,
        "best_val_loss": predictor.best_val_loss,
        "train_seconds": round(predictor.train_seconds, 1),
        "encoder_source": get_spec(prep.encoder).source(),
        "trained_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def fit_and_export(
    prep: Prepared,
    out_dir: Path | None,
    *,
    label: str | None = None,
    progress: bool = True,
    overwrite: bool = False,
    **hyper: Any,
) -> FitResult:
    predictor = JeirtPredictor(**hyper).fit(
        prep.embeddings, prep.train, prep.val, prep.data.n_llms, progress=progress
    )
    result = FitResult(
        predictor=predictor,
        val=evaluate(predictor, prep, "val"),
        test=evaluate(predictor, prep, "test"),
        floor_test=per_llm_accuracy_floor(prep, "test"),
    )
    if out_dir is not None:
        from .export import export_router

        # Parity on real questions of the test part: short and long ones (some longer than max_length).
        test_texts = [prep.data.texts[i] for i in prep.split.test]
        by_len = sorted(test_texts, key=len)
        parity_texts = by_len[:4] + by_len[len(by_len) // 2 : len(by_len) // 2 + 4] + by_len[-4:]
        metrics = {
            "test": result.test,
            "val": result.val,
            "test_per_llm_accuracy_baseline": result.floor_test,
        }
        from .reference import alignment_reference

        reference, center, alignment = alignment_reference(
            predictor.question_vectors(prep.embeddings[prep.split.train]),
            predictor.question_vectors(prep.embeddings[prep.split.val]),
        )
        result.router_path, result.parity = export_router(
            predictor,
            out_dir,
            prep.data.llm_names,
            encoder=prep.encoder,
            max_length=prep.max_length,
            parity_texts=parity_texts,
            training=training_summary(prep, predictor),
            metrics=metrics,
            label=label,
            overwrite=overwrite,
            reference_directions=reference,
            reference_center=center,
            alignment=alignment,
        )
    return result


def folder_size_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6
