"""The ways to onboard one new LLM from some of its answers, compared in experiments.onboarding_ood, and the features
they read: a router encoder's question vectors and features, or the MiniLM transformer's embeddings (both cached).

Each method gets the answered questions (their router vectors q and encoder features f, and the 0/1 answers) and
returns a function that scores other questions:

* `vector`: today's add_llm before the correction existed: the LLM's vector alone (`fit_llm_vector`);
* `add_llm`: the vector and the feature correction with its strength chosen by cross-validation (`fit_onboarding`);
* `logistic`: a per-LLM ridge logistic regression on the features, strength by 5-fold CV log-loss;
* `knn`: cosine k-nearest neighbours on the features (smoothed vote), k by 5-fold CV log-loss.

The baselines (`fit_baseline`) may read other features than add_llm's correction (experiments.onboarding_ood's
`--baseline-features`), and the logistic regression comes with three levels of care (LOGISTIC_CARES):
`published` (the rows of docs/research/onboarding.md: the strengths LOGISTIC_STRENGTHS on unit-norm features times
√p, the intercept penalised like every weight), `same` (what add_llm's correction gets and more: its ridge grid and
the published one together, the intercept all but free, a choice of global or per-feature standardisation, the
single best by the same 5 folds) and `same_average` (the same grid weighted by cross-validated evidence, add_llm's
rule out of the router's domain).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from jeirt_lite import Router
from jeirt_lite._correction_grid import (
    base_logits,
    evidence_weights,
    feature_design,
    standardised_design,
    stratified_folds,
)
from jeirt_lite._corrections import fit_onboarding
from jeirt_lite._metrics import log_loss
from jeirt_lite._onboarding import fit_llm_vector
from jeirt_lite._ridge import ridge_logistic, ridge_path, sigmoid

Scorer = Callable[[np.ndarray, np.ndarray], np.ndarray]  # (q, f) of new questions -> P(correct)
METHODS = ("vector", "add_llm", "logistic", "knn")
LOGISTIC_STRENGTHS = (1000.0, 300.0, 100.0, 30.0, 10.0, 3.0, 1.0, 0.3)
KNN_K = (5, 10, 20, 40, 80)
FOLDS = 5
LOGISTIC_CARES = ("published", "same", "same_average")
# add_llm's finite strengths and the published logistic regression's together. No infinite strength: the
# intercept alone ranks nothing, so it could only lower the baseline's AUC.
SAME_CARE_STRENGTHS = (3000.0, 1000.0, 300.0, 100.0, 30.0, 10.0, 3.0, 1.0, 0.3)
# global: add_llm's standardisation (centred, one scale for all features); per_feature: each feature to unit variance.
SCALINGS = ("global", "per_feature")
Chosen = dict[str, object]  # the setting a baseline chose, as the results JSON records it


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

    embeddings: np.ndarray = embed_texts(texts, DEFAULT_ENCODER, DEFAULT_MAX_LENGTH)
    return embeddings


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
    if method in ("logistic", "knn"):
        return fit_baseline(method, f, y, seed)[0]
    raise ValueError(f"unknown method {method!r}")


def fit_baseline(method: str, f: np.ndarray, y: np.ndarray, seed: int, care: str = "published") -> tuple[Scorer, Chosen]:
    """A baseline (`logistic` with `care` from LOGISTIC_CARES, or `knn`) fitted on the features `f` of the answered
    questions alone, and the setting its cross-validation chose. The scorer reads the second argument (features)."""
    f, y = f.astype(np.float64), y.astype(np.float64)
    if method == "knn":
        return _knn(f, y, seed)
    if method != "logistic":
        raise ValueError(f"unknown baseline {method!r}; choose logistic or knn")
    if care == "published":
        return _logistic(f, y, seed)
    if care in ("same", "same_average"):
        return _logistic_same_care(f, y, seed, average=care == "same_average")
    raise ValueError(f"unknown logistic care {care!r}; choose from {', '.join(LOGISTIC_CARES)}")


def _logistic(f: np.ndarray, y: np.ndarray, seed: int) -> tuple[Scorer, Chosen]:
    x = _standardised(f)
    fold = stratified_folds(y, FOLDS, seed)
    held = {s: np.empty(len(y)) for s in LOGISTIC_STRENGTHS}
    for k in range(FOLDS):
        train, test = fold != k, fold == k
        for strength, w in ridge_path(x[train], y[train], np.zeros(int(train.sum())), list(LOGISTIC_STRENGTHS)).items():
            held[strength][test] = sigmoid(x[test] @ w)
    best = min(LOGISTIC_STRENGTHS, key=lambda s: log_loss(y, held[s]))
    w = ridge_logistic(x, y, np.zeros(len(y)), best)
    return (lambda q2, f2: sigmoid(_standardised(f2.astype(np.float64)) @ w)), {"strength": best}


Scaling = tuple[np.ndarray, np.ndarray]  # (center, scale) per feature


def _scaling(f: np.ndarray, kind: str) -> Scaling:
    """Both kinds centre the features and give them a mean squared norm of p: `global` is add_llm's own
    standardisation; `per_feature` gives each feature unit variance, a constant one scale 0 (it carries nothing the
    intercept does not)."""
    if kind == "global":
        _, center, scale = standardised_design(f, len(f))
        return center, np.full(f.shape[1], scale)
    sd = f.std(axis=0)
    return f.mean(axis=0), np.divide(1.0, sd, out=np.zeros_like(sd), where=sd > 0)


def _free_intercept_design(f: np.ndarray, scaling: Scaling) -> np.ndarray:
    """add_llm's design (its large constant column makes the ridge penalty on the intercept negligible)."""
    return feature_design(f, *scaling)


def _logistic_same_care(f: np.ndarray, y: np.ndarray, seed: int, average: bool) -> tuple[Scorer, Chosen]:
    """The widened grid (SCALINGS × SAME_CARE_STRENGTHS) cross-validated on add_llm's folds (the same seed), then the
    single best by held-out log-loss, or (`average`) every fit weighted by its evidence, as add_llm weighs its own.
    The standardisation reads the answered questions' features only, as add_llm's does."""
    scalings = {kind: _scaling(f, kind) for kind in SCALINGS}
    designs = {kind: _free_intercept_design(f, scalings[kind]) for kind in SCALINGS}
    fold = stratified_folds(y, FOLDS, seed)
    # Keyed by (scaling, strength); evidence_weights needs only hashable keys.
    held: dict[Any, np.ndarray] = {(kind, s): np.empty(len(y)) for kind in SCALINGS for s in SAME_CARE_STRENGTHS}
    for k in range(FOLDS):
        train, test = fold != k, fold == k
        for kind, x in designs.items():
            path = ridge_path(x[train], y[train], np.zeros(int(train.sum())), list(SAME_CARE_STRENGTHS))
            for strength, w in path.items():
                held[(kind, strength)][test] = x[test] @ w
    weights: dict[Any, float] = (
        evidence_weights(y, held) if average else {min(held, key=lambda c: log_loss(y, sigmoid(held[c]))): 1.0}
    )
    fits = [(kind, strength, weight, ridge_logistic(designs[kind], y, np.zeros(len(y)), strength))
            for (kind, strength), weight in weights.items()]

    def scorer(q2: np.ndarray, f2: np.ndarray) -> np.ndarray:
        logits = np.zeros(len(f2))
        for kind, _, weight, w in fits:
            logits += weight * (_free_intercept_design(f2.astype(np.float64), scalings[kind]) @ w)
        return sigmoid(logits)

    ranked = sorted(fits, key=lambda fit: -fit[2])
    chosen: Chosen = {"scaling": ranked[0][0], "strength": ranked[0][1]}
    if average:
        chosen["fits"] = [{"scaling": kind, "strength": s, "weight": round(weight, 4)} for kind, s, weight, _ in ranked]
    return scorer, chosen


def _unit(f: np.ndarray) -> np.ndarray:
    unit: np.ndarray = f / np.maximum(np.linalg.norm(f, axis=1, keepdims=True), 1e-12)
    return unit


def _vote(reference: np.ndarray, labels: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    k = min(k, len(labels))
    nearest = np.argpartition(-(queries @ reference.T), k - 1, axis=1)[:, :k]
    votes: np.ndarray = (labels[nearest].sum(axis=1) + 1.0) / (k + 2.0)
    return votes


def _knn(f: np.ndarray, y: np.ndarray, seed: int) -> tuple[Scorer, Chosen]:
    u = _unit(f)
    fold = stratified_folds(y, FOLDS, seed)
    losses = []
    for k in KNN_K:
        p = np.empty(len(y))
        for part in range(FOLDS):
            train, test = fold != part, fold == part
            p[test] = _vote(u[train], y[train], u[test], k)
        losses.append(log_loss(y, p))
    best = KNN_K[int(np.argmin(losses))]
    return (lambda q2, f2: _vote(u, y, _unit(f2.astype(np.float64)), best)), {"k": best}
