"""Real-data checks of the geometry on one dataset (mmlu_pro by default), learned directions vs raw embeddings:

* difficulty: Spearman between ‖q‖ and the observed error rate on TEST questions, overall and per subject;
* taxonomy: k-means on unit directions of test questions (k by silhouette), ARI/NMI against the subjects, for the
  learned question vectors and for the raw encoder embeddings (also at k = number of subjects for both);
* probe: an arithmetic axis (rule `needs_calculation`), fitted on TRAIN questions, AUC on TEST questions outside
  the math subject, learned vs raw;
* scalar IRT: a plain 2PL on the training matrix (experiments.baselines.irt2pl).

    python -m experiments.geometry_eval --data data/mmlu_pro --json docs/research/analysis_geometry.json
    python -m experiments.geometry_eval --only-2pl --json docs/research/analysis_2pl.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from jeirt_lite.analysis import difficulty_vs_error, needs_calculation, probe_vectors, taxonomy
from jeirt_lite.analysis._stats import roc_auc
from jeirt_lite_training.model import JeirtPredictor
from jeirt_lite_training.prepared import prepare

from scripts.shipped import PUBLISHED_SCHEDULE

from .baselines.irt2pl import two_pl_diagnostic


def error_rates(question: np.ndarray, correct: np.ndarray, n: int) -> np.ndarray:
    counts = np.bincount(question, minlength=n)
    right = np.bincount(question, weights=correct, minlength=n)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, 1.0 - right / np.maximum(counts, 1), np.nan)


def taxonomy_summary(vectors: np.ndarray, subjects: list[str], texts: list[str], k: int | None) -> dict[str, Any]:
    tax = taxonomy(vectors, subjects, k=k)
    return {"k": tax.k, "ari": tax.ari, "nmi": tax.nmi, "silhouette_by_k": tax.silhouette_by_k,
            "clusters": tax.describe(texts, width=80)}


def run_2pl(data_dir: Path) -> dict[str, Any]:
    """Only the scalar-IRT diagnostic (eval's 2PL) on the training matrix of the seed-0 split."""
    prep = prepare(data_dir, progress=False)
    t0 = time.perf_counter()
    out = two_pl_diagnostic(prep.data, prep.train)
    out["seconds"] = round(time.perf_counter() - t0, 1)
    return out


def run(data_dir: Path, max_epochs: int, skip_2pl: bool) -> dict[str, Any]:
    prep = prepare(data_dir, progress=False)
    data, split = prep.data, prep.split
    t0 = time.perf_counter()
    # The schedule of the published docs/research/analysis_geometry.json.
    predictor = JeirtPredictor(max_epochs=max_epochs, **PUBLISHED_SCHEDULE)
    predictor.fit(prep.embeddings, prep.train, prep.val, data.n_llms)
    out: dict[str, Any] = {"data": str(data_dir), "train_seconds": round(time.perf_counter() - t0, 1),
                           "best_epoch": predictor.best_epoch, "max_epochs": max_epochs}
    learned = predictor.question_vectors(prep.embeddings)
    raw = prep.embeddings
    test = split.test
    subjects = np.asarray(data.subjects).astype(str)
    texts = [data.texts[i] for i in test]

    errors = error_rates(data.responses.question, data.responses.correct, data.n_questions)
    norms = np.linalg.norm(learned, axis=1)
    diff = difficulty_vs_error(norms[test], errors[test], list(subjects[test]))
    out["difficulty"] = diff.to_dict()

    out["taxonomy"] = {}
    for name, vecs in (("learned", learned), ("raw", raw)):
        out["taxonomy"][name] = taxonomy_summary(vecs[test], list(subjects[test]), texts, None)
        fixed = taxonomy(vecs[test], list(subjects[test]), k=len(set(subjects.tolist())))
        out["taxonomy"][name]["at_k_subjects"] = {"k": fixed.k, "ari": fixed.ari, "nmi": fixed.nmi}

    labels = np.asarray([needs_calculation(t) for t in data.texts])
    held = test[subjects[test] != "math"]
    out["probe"] = {"rule": needs_calculation.__doc__, "labelled_share": float(labels.mean()),
                    "fit_questions": len(split.train), "held_out_non_math": len(held),
                    "held_out_positive": int(labels[held].sum())}
    for name, vecs in (("learned", learned), ("raw", raw)):
        fitted = probe_vectors(vecs[split.train][labels[split.train]], vecs[split.train][~labels[split.train]])
        out["probe"][f"auc_{name}"] = roc_auc(labels[held], fitted.score(vecs[held]))
    if not skip_2pl:
        t1 = time.perf_counter()
        out["two_pl"] = two_pl_diagnostic(data, prep.train)
        out["two_pl"]["seconds"] = round(time.perf_counter() - t1, 1)
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path("data/mmlu_pro"))
    parser.add_argument("--max-epochs", type=int, default=200)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--skip-2pl", action="store_true")
    parser.add_argument("--only-2pl", action="store_true", help="only the 2PL diagnostic (no JE-IRT training)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    result = run_2pl(args.data) if args.only_2pl else run(args.data, args.max_epochs, args.skip_2pl)
    text = json.dumps(result, indent=2, default=float)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
