"""The ways to onboard one new LLM from some of its answers, compared in experiments.onboarding_ood, and the features
they read: a router encoder's question vectors and features, or the MiniLM transformer's embeddings (both cached).

Each method gets the answered questions (their router vectors q and encoder features f, and the 0/1 answers) and
returns a function that scores other questions:

* `vector`: today's add_llm before the correction existed: the LLM's vector alone (`fit_llm_vector`);
* `add_llm`: the vector and the feature correction with its strength chosen by cross-validation (`fit_onboarding`);
* `logistic`: a per-LLM ridge logistic regression on the features, strength by 5-fold CV log-loss;
* `knn`: cosine k-nearest neighbours on the features (smoothed vote), k by 5-fold CV log-loss.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
from jeirt_lite import Router
from jeirt_lite._corrections import (
    base_logits,
    fit_onboarding,
    mean_log_loss,
    ridge_logistic,
    ridge_path,
    sigmoid,
    stratified_folds,
)
from jeirt_lite._onboarding import fit_llm_vector

Scorer = Callable[[np.ndarray, np.ndarray], np.ndarray]  # (q, f) of new questions -> P(correct)
METHODS = ("vector", "add_llm", "logistic", "knn")
LOGISTIC_STRENGTHS = (1000.0, 300.0, 100.0, 30.0, 10.0, 3.0, 1.0, 0.3)
KNN_K = (5, 10, 20, 40, 80)
FOLDS = 5


def cache_dir() -> Path:
    return Path(os.environ.get("JEIRT_LITE_CACHE", Path.home() / ".cache" / "jeirt-lite")) / "onboarding"


def embed_with_router(router: Router, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(question vectors, features) of `texts`, cached by the router's encoder hash and the texts."""
    key = hashlib.sha256(router.manifest["files"]["encoder"]["sha256"].encode())
    for text in texts:
        key.update(hashlib.sha256(text.encode()).digest())
    path = cache_dir() / f"{key.hexdigest()[:24]}.npz"
    if path.is_file():
        with np.load(path) as cached:
            return cached["q"], cached["f"]
    q, f = router.encode(texts, features=True)
    if f is None:
        raise SystemExit(f"{router.path}: its encoder exposes no features; run python -m scripts.add_feature_output")
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, q=q, f=f)
    return q, f


def minilm_features(texts: list[str]) -> np.ndarray:
    """The MiniLM transformer's embeddings of `texts` (all-MiniLM-L6-v2, 256 tokens; jeirt_lite_training.embeddings' cache):
    what a transformer router's adapter reads, so what its correction would read."""
    from jeirt_lite_training.embeddings import embed_texts
    from jeirt_lite_training.encoders import DEFAULT_ENCODER, DEFAULT_MAX_LENGTH

    return embed_texts(texts, DEFAULT_ENCODER, DEFAULT_MAX_LENGTH)


def alignment_flags(train_vectors: np.ndarray, val_vectors: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """The in-distribution flag of `vectors` for a question side whose training and validation questions have the
    given vectors: what a router exported from it would carry (jeirt_lite_training.reference, as the export computes it)."""
    from jeirt_lite._alignment import align
    from jeirt_lite_training.reference import alignment_reference

    reference, center, block = alignment_reference(train_vectors, val_vectors)
    if reference is None or block is None:
        raise SystemExit("the alignment reference needs the jeirt_lite package")
    flags: np.ndarray = align(vectors, reference, block["threshold"], block["top_k"], center=center).in_distribution
    return flags


def learned_flags(training_texts: list[str], texts: list[str]) -> np.ndarray:
    """(len(texts),) bool: which of `texts` a question side trained on `training_texts` learned from, as a router
    exported from it would record them (training_questions.npy; add_llm reads them)."""
    from jeirt_lite._training_questions import seen_mask, training_question_set

    return seen_mask(training_question_set(training_texts), texts)


def _standardised(f: np.ndarray) -> np.ndarray:
    return np.hstack([f * np.sqrt(f.shape[1]), np.ones((f.shape[0], 1))])


def fit_method(
    method: str, q: np.ndarray, f: np.ndarray, y: np.ndarray, prior: np.ndarray, seed: int,
    in_distribution: np.ndarray | None = None, learned: np.ndarray | None = None,
) -> Scorer:
    """`in_distribution`: the router's flag for each answered question, `learned`: whether the router learned from
    it (add_llm reads both); None when unknown."""
    q, f, y = q.astype(np.float64), f.astype(np.float64), y.astype(np.float64)
    if method == "vector":
        m = fit_llm_vector(q, y, prior_mean=prior).astype(np.float64)
        return lambda q2, f2: sigmoid(base_logits(q2.astype(np.float64), m))
    if method == "add_llm":
        fit = fit_onboarding(
            q, f, y, prior_mean=prior, seed=seed, in_distribution=in_distribution, learned=learned
        )
        m = fit.vector.astype(np.float64)
        w, b = (np.zeros(f.shape[1]), 0.0) if fit.weights is None else (fit.weights.astype(np.float64), fit.bias)
        s = fit.router_scale
        return lambda q2, f2: sigmoid(s * (base_logits(q2.astype(np.float64), m) + f2.astype(np.float64) @ w + b))
    if method == "logistic":
        return _logistic(f, y, seed)
    if method == "knn":
        return _knn(f, y, seed)
    raise ValueError(f"unknown method {method!r}")


def _logistic(f: np.ndarray, y: np.ndarray, seed: int) -> Scorer:
    x = _standardised(f)
    fold = stratified_folds(y, FOLDS, seed)
    held = {s: np.empty(len(y)) for s in LOGISTIC_STRENGTHS}
    for k in range(FOLDS):
        train, test = fold != k, fold == k
        for strength, w in ridge_path(x[train], y[train], np.zeros(int(train.sum())), list(LOGISTIC_STRENGTHS)).items():
            held[strength][test] = sigmoid(x[test] @ w)
    best = min(LOGISTIC_STRENGTHS, key=lambda s: mean_log_loss(y, held[s]))
    w = ridge_logistic(x, y, np.zeros(len(y)), best)
    return lambda q2, f2: sigmoid(_standardised(f2.astype(np.float64)) @ w)


def _unit(f: np.ndarray) -> np.ndarray:
    return f / np.maximum(np.linalg.norm(f, axis=1, keepdims=True), 1e-12)


def _vote(reference: np.ndarray, labels: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    k = min(k, len(labels))
    nearest = np.argpartition(-(queries @ reference.T), k - 1, axis=1)[:, :k]
    return (labels[nearest].sum(axis=1) + 1.0) / (k + 2.0)


def _knn(f: np.ndarray, y: np.ndarray, seed: int) -> Scorer:
    u = _unit(f)
    fold = stratified_folds(y, FOLDS, seed)
    losses = []
    for k in KNN_K:
        p = np.empty(len(y))
        for part in range(FOLDS):
            train, test = fold != part, fold == part
            p[test] = _vote(u[train], y[train], u[test], k)
        losses.append(mean_log_loss(y, p))
    best = KNN_K[int(np.argmin(losses))]
    return lambda q2, f2: _vote(u, y, _unit(f2.astype(np.float64)), best)
