"""Whether a question's length or its MMLU-Pro source says more about its answers than the router already does.

    python -m experiments.residual_features --data data/mmlu_pro --router DIR [--halvings 3] [--json OUT]

DIR: a router built with a test part kept out (`python -m scripts.build_default_router --holdout 0.2 --out DIR`).
On its test questions, each answer is regressed (logistic, L2) on the router's logit plus one group of features,
fitted on a random half of the test questions and scored on the other half, both ways, for several halvings:

- `logit`: the logit alone (what refitting the calibration on these questions gains, the reference of the rest);
- `length`: the question's token count (log, centred) and its square, and the log count per LLM;
- `source`: the question's source (`questions.csv`'s `source` up to its first "-": ori_mmlu, stemez, theoremQA,
  scibench) per LLM, metadata the router never reads;
- `source_predicted`: the same from the source's probabilities predicted from the router's features by a logistic
  regression fitted on the router's training questions (what a router could learn of it from the text).

A group that beats `logit` says what the router leaves on the table (docs/research/shipped-router.md).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Callable

import numpy as np

SOURCE_COLUMN = "source"
Metrics = Callable[[np.ndarray, np.ndarray], dict[str, float]]


def per_llm(values: np.ndarray, llm: np.ndarray, n_llms: int) -> np.ndarray:
    """(cells, n_llms * groups): each cell's `values` (cells,) or (cells, groups) in its LLM's columns, zeros elsewhere."""
    columns = values.reshape(len(values), -1)
    out = np.zeros((len(values), n_llms * columns.shape[1]))
    for g in range(columns.shape[1]):
        out[np.arange(len(values)), g * n_llms + llm] = columns[:, g]
    return out


def source_groups(sources: Sequence[str]) -> list[str]:
    """A source's group: its name up to the first "-" ("ori_mmlu-business_ethics" -> "ori_mmlu")."""
    return [source.split("-", 1)[0] for source in sources]


def cross_fitted(features: np.ndarray, y: np.ndarray, question: np.ndarray, halvings: int,
                 metrics: Metrics, c: float = 1.0) -> list[dict[str, float]]:
    """Per halving of the questions: a logistic regression fitted on one half's cells scores the other half's, both
    ways; the metrics of all cells' out-of-half predictions."""
    from sklearn.linear_model import LogisticRegression

    questions = int(question.max()) + 1
    out = []
    for seed in range(halvings):
        first = (np.random.default_rng(seed).random(questions) < 0.5)[question]
        p = np.empty(len(y))
        for fit_on in (first, ~first):
            model = LogisticRegression(C=c, max_iter=3000).fit(features[fit_on], y[fit_on])
            p[~fit_on] = model.predict_proba(features[~fit_on])[:, 1]
        out.append(metrics(y, p))
    return out


def predicted_sources(features: np.ndarray, groups: Sequence[str],
                      learned: np.ndarray) -> tuple[list[str], np.ndarray]:
    """The sources, and the (questions, sources) probabilities of each, from a classifier fitted on the learned
    questions only."""
    from sklearn.linear_model import LogisticRegression

    labels = np.asarray(groups)
    model = LogisticRegression(C=10.0, max_iter=3000).fit(features[learned], labels[learned])
    return [str(name) for name in model.classes_], model.predict_proba(features)


def headline_metrics(y: np.ndarray, p: np.ndarray) -> dict[str, float]:
    """AUC, accuracy and log-loss: the three issue #30 sets its bars in."""
    from jeirt_lite._metrics import accuracy, log_loss, roc_auc

    return {"auc": roc_auc(y, p), "accuracy": accuracy(y, p), "log_loss": log_loss(y, p)}


def _sources(data_dir: Path, question_ids: Sequence[str]) -> list[str]:
    csv.field_size_limit(1 << 30)
    with open(data_dir / "questions.csv", newline="", encoding="utf-8") as handle:
        by_id = {row["question_id"]: row.get(SOURCE_COLUMN) or "" for row in csv.DictReader(handle)}
    return [by_id[qid] for qid in question_ids]


def _token_counts(router_dir: Path, texts: Sequence[str]) -> np.ndarray:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(router_dir / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return np.array([len(encoding.ids) for encoding in tokenizer.encode_batch(list(texts))], dtype=np.float64)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.residual_features", description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, type=Path, help="the data folder the router was built on")
    ap.add_argument("--router", required=True, type=Path, help="a router folder built with a test part kept out")
    ap.add_argument("--halvings", type=int, default=3, help="random halvings of the test questions")
    ap.add_argument("--json", type=Path, default=None, help="write the results here")
    args = ap.parse_args(argv)
    from jeirt_lite import Router
    from jeirt_lite_training.data import load_dataset

    data = load_dataset(args.data)
    router = Router.load(args.router)
    texts = list(data.texts)
    learned = router.learned_from(texts)
    if learned is None or learned.all() or not learned.any():
        raise SystemExit("the router must record its training questions and have some of the data's kept out")
    encoded = router.encode(texts, features=True)
    if encoded.features is None:
        raise SystemExit("the router's encoder gives no features")
    test = np.flatnonzero(~learned)
    position = np.full(data.n_questions, -1)
    position[test] = np.arange(len(test))
    cells = data.responses
    keep = position[cells.question] >= 0
    question, y = position[cells.question[keep]], cells.correct[keep].astype(np.float64)
    llm = np.array([router.llms.index(name) for name in data.llm_names])[cells.llm[keep]]
    p = np.clip(router.predict_proba(encoded.rows(test))[question, llm], 1e-6, 1 - 1e-6)
    logit = np.log(p / (1 - p))[:, None]
    k = len(router.llms)
    length = np.log(_token_counts(args.router, [texts[i] for i in test]))
    length = (length - length.mean())[question]
    groups = source_groups(_sources(args.data, data.question_ids))
    names, guessed = predicted_sources(np.asarray(encoded.features, dtype=np.float64), groups, learned)
    guessed = guessed[test]
    onehot = (np.asarray(groups)[test][:, None] == np.asarray(names)[None, :]).astype(np.float64)
    source_accuracy = float(np.mean(np.asarray(names)[guessed.argmax(axis=1)] == np.asarray(groups)[test]))
    feature_sets = {
        "logit": logit,
        "length": np.hstack([logit, length[:, None], length[:, None] ** 2, per_llm(length, llm, k)]),
        "source": np.hstack([logit, per_llm(onehot[question], llm, k)]),
        "source_predicted": np.hstack([logit, per_llm(guessed[question], llm, k)]),
    }
    out: dict[str, Any] = {"data": args.data.name, "router": args.router.name, "test_questions": len(test),
                           "answers": len(y), "sources": names,
                           "source_classifier_accuracy": source_accuracy, "router_alone": headline_metrics(y, p), "groups": {}}
    print(f"router alone on {len(test)} test questions ({len(y)} answers): "
          + ", ".join(f"{key} {value:.4f}" for key, value in out["router_alone"].items()))
    print(f"source predicted right for {source_accuracy:.1%} of the test questions")
    for name, features in feature_sets.items():
        runs = cross_fitted(features, y, question, args.halvings, headline_metrics, c=0.1 if name.startswith("source") else 1.0)
        out["groups"][name] = runs
        means = {key: float(np.mean([run[key] for run in runs])) for key in runs[0]}
        print(f"{name:>16}: " + ", ".join(f"{key} {value:.4f}" for key, value in means.items())
              + f" (mean of {len(runs)} halvings)")
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
