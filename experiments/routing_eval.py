"""Routing on the test split: accuracy of the routed LLM against fixed choices, and the quality–cost curve.

    python -m experiments.routing_eval        # needs experiments.onboarding_runs' joint run

Protocol (data/mmlu_pro, split seed 0, the default JE-IRT recipe): for each test question the candidates are
the LLMs with an observed answer to it (almost all 32; the matrix is nearly dense). Every rule picks one
candidate and scores its real answer:

* router: the candidate with the highest predicted P(correct);
* best single LLM: the candidate ranked highest by training accuracy;
* best LLM per subject: the candidate ranked highest by training accuracy within the question's subject;
* oracle: correct if any candidate answered correctly.

Quality–cost: maximise P − λ·cost over a grid of λ, and "cheapest with P ≥ t" over a grid of t. The cost proxy
is the parameter count in billions parsed from the model name (Mixtral-8x7B = 56) or published for it
(scripts.cost_proxies). API models whose size is not public get no cost: the quality–cost rules route only among the
LLMs with one (the other rules among all).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from jeirt_lite import kernels

from scripts.cost_proxies import cost_proxies, has_size

from .onboarding_runs import DEFAULT_DATA, REPO_ROOT


def answer_matrix(
    question: np.ndarray, llm: np.ndarray, correct: np.ndarray, rows: np.ndarray, k: int
) -> np.ndarray:
    """(len(rows), K) float matrix of answers to the questions `rows`, NaN where not observed."""
    position = np.full(int(max(rows.max(), question.max())) + 1, -1, dtype=np.int64)
    position[rows] = np.arange(len(rows))
    keep = position[question] >= 0
    y = np.full((len(rows), k), np.nan)
    y[position[question[keep]], llm[keep]] = correct[keep]
    return y


def pick(scores: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """Per row, the observed column with the highest score (ties: lower index)."""
    return np.argmax(np.where(observed, scores, -np.inf), axis=1)


def accuracy_of(choice: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(y[np.arange(len(y)), choice]))


def evaluate(prep, question_vectors: np.ndarray, llm_vectors: np.ndarray, open_only: bool = False) -> dict:  # type: ignore[no-untyped-def]
    """All rules on the test split; `open_only` restricts every rule's candidates to open-weights LLMs."""
    k = prep.data.n_llms
    test_rows = np.unique(prep.test.question)
    y = answer_matrix(prep.test.question, prep.test.llm, prep.test.correct, test_rows, k)
    allowed = np.array([has_size(n) or not open_only for n in prep.data.llm_names])
    y[:, ~allowed] = np.nan
    observed = ~np.isnan(y)
    p = kernels.probabilities(question_vectors[test_rows], llm_vectors).astype(np.float64)
    hits = np.bincount(prep.train.llm, prep.train.correct, k)
    counts = np.bincount(prep.train.llm, minlength=k)
    train_acc = np.where(allowed, hits / np.maximum(counts, 1), -1.0)
    subjects = np.asarray(prep.data.subjects)
    per_subject = {}
    train_subject = subjects[prep.train.question]
    for s in np.unique(subjects[test_rows]):
        mask = train_subject == s
        h = np.bincount(prep.train.llm[mask], prep.train.correct[mask], k)
        c = np.bincount(prep.train.llm[mask], minlength=k)
        per_subject[s] = np.where(c > 0, h / np.maximum(c, 1), -1.0)
    subject_scores = np.stack([per_subject[s] for s in subjects[test_rows]])
    known = cost_proxies(list(prep.data.llm_names))
    costs = np.array([known.get(name, np.nan) for name in prep.data.llm_names])  # NaN: no public size
    best_single = int(np.argmax(train_acc))
    keep = observed.any(axis=1)
    y, observed, p, subject_scores, test_rows = (
        y[keep],
        observed[keep],
        p[keep],
        subject_scores[keep],
        test_rows[keep],
    )
    result = {
        "n_questions": len(test_rows),
        "mean_candidates": float(observed.sum(axis=1).mean()),
        "router": accuracy_of(pick(p, observed), y),
        "best_single": accuracy_of(pick(np.broadcast_to(train_acc, y.shape), observed), y),
        "best_single_name": prep.data.llm_names[best_single],
        "best_single_cost": float(costs[best_single]),
        "best_per_subject": accuracy_of(pick(subject_scores, observed), y),
        "oracle": float(np.mean(np.nansum(y, axis=1) > 0)),
        "mean_llm": float(np.nanmean(y)),
        "router_mean_cost": float(costs[pick(p, observed)].mean()),
    }
    # The cost rules route among the LLMs with a cost only (an unknown cost is never filled in).
    priced = observed & ~np.isnan(costs)
    rows = priced.any(axis=1)
    py, pp, pprice, pcost = y[rows], p[rows], priced[rows], np.nan_to_num(costs)
    result["n_priced_llms"] = int((~np.isnan(costs)).sum())
    curve = []
    for lam in (0.0, 1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 1e-2):
        choice = pick(pp - lam * pcost, pprice)
        curve.append(("λ", lam, accuracy_of(choice, py), float(pcost[choice].mean())))
    for t in (0.5, 0.6, 0.7, 0.8, 0.9):
        clear = (pp >= t) & pprice
        cheapest = pick(np.where(clear, -pcost, -np.inf), clear)
        choice = np.where(clear.any(axis=1), cheapest, pick(pp, pprice))
        curve.append(("t", t, accuracy_of(choice, py), float(pcost[choice].mean())))
    result["curve"] = curve
    result["costs"] = known
    return result


def main(argv: list[str] | None = None) -> int:
    from jeirt_lite_training.prepared import prepare

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--runs", type=Path, default=REPO_ROOT / ".scratch" / "runs")
    args = parser.parse_args(argv)
    prep = prepare(args.data, split_seed=0, progress=False)
    run = np.load(args.runs / "joint.npz")
    for open_only in (False, True):
        print(f"\n### {'open-weights LLMs only' if open_only else 'all LLMs'}\n")
        report(evaluate(prep, run["question_vectors"], run["llm_vectors"], open_only=open_only))
    return 0


def report(r: dict) -> None:  # type: ignore[type-arg]
    print(f"test questions: {r['n_questions']}, candidates per question: {r['mean_candidates']:.1f}\n")
    print("| rule | accuracy | mean cost (B params) |\n|---|---:|---:|")
    print(f"| oracle (any candidate correct) | {r['oracle']:.3f} | |")
    print(f"| JE-IRT router (most likely) | {r['router']:.3f} | {r['router_mean_cost']:.0f} |")
    print(f"| best LLM per subject (train) | {r['best_per_subject']:.3f} | |")
    print(
        f"| best single LLM (train): {r['best_single_name']} | {r['best_single']:.3f} | "
        f"{r['best_single_cost']:.0f} |"
    )
    print(f"| average LLM | {r['mean_llm']:.3f} | |")
    print(f"\nquality–cost rules among the {r['n_priced_llms']} LLMs with a public parameter count:\n")
    print("| rule | setting | accuracy | mean cost (B params) |\n|---|---:|---:|---:|")
    for kind, value, acc, cost in r["curve"]:
        rule = "max P − λ·cost" if kind == "λ" else "cheapest with P ≥ t"
        print(f"| {rule} | {kind} = {value:g} | {acc:.3f} | {cost:.1f} |")
    print("\ncost proxy:", ", ".join(f"{n} {c:g}" for n, c in r["costs"].items()))


if __name__ == "__main__":
    sys.exit(main())
