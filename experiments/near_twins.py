"""Whether an LLM's answer on a training question's twin says more than the router about a new question.

    python -m experiments.near_twins --data data/mmlu_pro --router DIR [--json OUT]

DIR: a router built with a test part kept out (`python -m scripts.build_default_router --holdout 0.2 --out DIR`).
Each test question is paired with its most similar training question (cosine on the router's features); in bands of
that similarity, how often an LLM answered the two alike, against the router's accuracy on the same answers. Then
the exact repeats within the data folder (questions of identical text, which a split keeps on one side): how often
an LLM answered both copies alike. A vote read from the twin alone could only help where the first number beats the
second (docs/research/neighbours.md, "Near twins").
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from jeirt_lite._alignment import unit_rows

from .routing_eval import answer_matrix

BANDS = ((0.99, 1.01), (0.97, 0.99), (0.95, 0.97), (0.90, 0.95), (0.80, 0.90), (-1.01, 0.80))


def nearest_training(features: np.ndarray, learned: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(test rows, each one's most similar training row, that cosine similarity)."""
    unit = unit_rows(features)
    test, train = np.flatnonzero(~learned), np.flatnonzero(learned)
    if not len(test) or not len(train):
        raise ValueError("the router must have learned from some of the data's questions and not from others")
    sim = unit[test] @ unit[train].T
    return test, train[sim.argmax(axis=1)], sim.max(axis=1)


def band_rows(answers: np.ndarray, probabilities: np.ndarray, test: np.ndarray, twin: np.ndarray,
              similarity: np.ndarray) -> list[dict[str, Any]]:
    """Per similarity band: test questions, answers on both, how often the twin's answer equals the test one, and the
    router's accuracy (P > 0.5) on the answers that agreement counts. `probabilities`: (len(test), LLMs)."""
    rows = []
    for low, high in BANDS:
        inside = (similarity >= low) & (similarity < high)
        mine, theirs = answers[test[inside]], answers[twin[inside]]
        both = ~np.isnan(mine) & ~np.isnan(theirs)
        if not both.any():
            continue
        router_right = (probabilities[inside] > 0.5) == (mine == 1)
        rows.append({"similarity": [max(low, -1.0), min(high, 1.0)], "questions": int(inside.sum()),
                     "answers": int(both.sum()), "twin_agreement": float((mine[both] == theirs[both]).mean()),
                     "router_accuracy": float(router_right[both].mean())})
    return rows


def exact_repeats(texts: Sequence[str], answers: np.ndarray) -> dict[str, Any]:
    """Groups of identical text: how many, and how often an LLM answered two copies alike (every pair in a group)."""
    groups: dict[str, list[int]] = defaultdict(list)
    for row, text in enumerate(texts):
        groups[text].append(row)
    same, pairs = 0, 0
    repeated = [rows for rows in groups.values() if len(rows) > 1]
    for rows in repeated:
        for i, a in enumerate(rows):
            for b in rows[i + 1:]:
                both = ~np.isnan(answers[a]) & ~np.isnan(answers[b])
                same += int((answers[a][both] == answers[b][both]).sum())
                pairs += int(both.sum())
    return {"groups": len(repeated), "questions": sum(len(r) for r in repeated), "answer_pairs": pairs,
            "agreement": same / pairs if pairs else float("nan")}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.near_twins", description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="the data folder the router was built on")
    ap.add_argument("--router", required=True, help="a router folder built with a test part kept out")
    ap.add_argument("--json", type=Path, default=None, help="write the results here")
    args = ap.parse_args(argv)
    from jeirt_lite import Router
    from jeirt_lite_training.data import load_dataset

    data = load_dataset(args.data)
    router = Router.load(args.router)
    missing = [name for name in data.llm_names if name not in router.llms]
    if missing:
        raise SystemExit(f"the router lacks LLMs of the data: {missing[:5]}")
    texts = list(data.texts)
    encoded = router.encode(texts, features=True)
    if encoded.features is None:
        raise SystemExit("the router's encoder gives no features")
    learned = router.learned_from(texts)
    if learned is None:
        raise SystemExit("the router does not record the questions it learned from")
    cells = data.responses
    answers = answer_matrix(cells.question, cells.llm, cells.correct, np.arange(data.n_questions), data.n_llms)
    test, twin, similarity = nearest_training(np.asarray(encoded.features, dtype=np.float64), learned)
    order = [router.llms.index(name) for name in data.llm_names]
    probabilities = router.predict_proba(encoded)[test][:, order]
    out = {"data": Path(args.data).name, "router": Path(args.router).name,
           "bands": band_rows(answers, probabilities, test, twin, similarity),
           "exact_repeats": exact_repeats(texts, answers)}
    for row in out["bands"]:
        low, high = row["similarity"]
        print(f"similarity {low:.2f}-{high:.2f}: {row['questions']} test questions, {row['answers']} answers; "
              f"twin agreement {row['twin_agreement']:.3f}, router accuracy {row['router_accuracy']:.3f}")
    rep = out["exact_repeats"]
    print(f"exact repeats: {rep['groups']} groups, {rep['questions']} questions, {rep['answer_pairs']} answer pairs, "
          f"agreement {rep['agreement']:.3f}")
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
