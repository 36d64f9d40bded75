"""How close `score --forecast` and `--forecast-by` come to the accuracy LLMs then show on a bank of
questions.

    python -m experiments.forecast_eval --data data/zeroeval_crux_gsm_math --reference data/mmlu_pro \
        --router shipped --json docs/results/forecast_zeroeval.json

For each LLM the router and `--data` share (matched as in experiments/shared_llms_eval.py), on the questions
of `--data` it answered: its accuracy there (what an evaluation would find), the router's forecast (the mean
P(correct) over the same questions, as `score --forecast` computes it) and the estimate one has without a
router, its accuracy on `--reference` (the data the router learned from). The same per group of `--data`'s
questions (its benchmark column by default: `--forecast-by benchmark`), where the estimate without a router is
still the reference accuracy, and with `--unseen` on the data the router learned from, also the LLM's accuracy
on the group's questions it learned from.

Scores, over the shared LLMs (and over LLM x group): the mean absolute error against the accuracy found, and
how often a pair of LLMs is put in the order their accuracies have (ties in accuracy left out), which is what
choosing an LLM for a bank needs; and the error a forecast whose every P(correct) were right would still show on
a bank of that size (`noise_floor_mae`).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from experiments.shared_llms_eval import shared_llms


def pair_order_agreement(estimate: Sequence[float], actual: Sequence[float]) -> float:
    """The share of pairs (i, j) with actual[i] != actual[j] that `estimate` orders the same way (a tie in
    the estimate counts a half); NaN when every actual value is equal."""
    agree, pairs = 0.0, 0
    for i, j in itertools.combinations(range(len(actual)), 2):
        if actual[i] == actual[j]:
            continue
        pairs += 1
        same = (estimate[i] - estimate[j]) * (actual[i] - actual[j])
        agree += 1.0 if same > 0 else 0.5 if same == 0 else 0.0
    return agree / pairs if pairs else float("nan")


def llm_accuracy(data: Any, name: str, questions: np.ndarray | None = None) -> tuple[float, np.ndarray]:
    """`name`'s accuracy on its answers in `data` (only to `questions` when given; NaN where it answered none
    of them), and the questions answered."""
    cells = data.responses
    mine = cells.llm == data.llm_names.index(name)
    if questions is not None:
        mine &= np.isin(cells.question, questions)
    accuracy = float(cells.correct[mine].mean()) if mine.any() else float("nan")
    return accuracy, cells.question[mine]


def scores(rows: list[dict[str, Any]]) -> dict[str, float]:
    actual = [row["accuracy"] for row in rows]
    out: dict[str, float] = {"noise_floor_mae": float(np.mean([row["noise_floor"] for row in rows]))}
    for key in ("forecast", "reference_accuracy", "reference_group_accuracy"):
        if key not in rows[0]:
            continue
        estimate = [row[key] for row in rows]
        out[f"{key}_mae"] = float(np.mean(np.abs(np.subtract(estimate, actual))))
        out[f"{key}_pair_order"] = pair_order_agreement(estimate, actual)
    return out


def evaluate(
    router: Any, data: Any, reference: Any, group_column: str, unseen: bool = False
) -> dict[str, Any]:
    """The forecast's rows and scores; `unseen`: the bank is the questions of `data` the router did not learn
    from, and when `reference` is `data` too, the reference accuracy is on the questions it did learn from."""
    pairs = shared_llms(router.llms, data.llm_names)
    if not pairs:
        raise ValueError("the router and the data share no LLM")
    reference_names = shared_llms(router.llms, reference.llm_names)
    bank, learned = np.arange(data.n_questions), None
    if unseen:
        seen = router.learned_from(list(data.texts))
        if seen is None:
            raise ValueError("the router keeps no record of the questions it learned from")
        bank = np.flatnonzero(~seen)
        learned = np.flatnonzero(seen) if reference is data else None
    probabilities = np.full((data.n_questions, len(router.llms)), np.nan)
    probabilities[bank] = router.predict_proba([data.texts[i] for i in bank])
    groups = np.asarray(getattr(data, group_column)).astype(str)
    whole: list[dict[str, Any]] = []
    by_group: dict[str, list[dict[str, Any]]] = {}
    for name, data_name in pairs.items():
        column = probabilities[:, router.llms.index(name)]
        known, _ = llm_accuracy(reference, reference_names[name], learned)
        whole.append(_row(name, data, data_name, bank, column, known))
        for group in sorted(set(groups[bank].tolist())):
            row = _row(name, data, data_name, bank[groups[bank] == group], column, known)
            if row["answers"] == 0:
                continue
            if learned is not None:  # the LLM's accuracy on the group's questions the router learned from
                row["reference_group_accuracy"], _ = llm_accuracy(
                    reference, reference_names[name], learned[groups[learned] == group])
            by_group.setdefault(group, []).append(row)
    every_cell = [row for rows in by_group.values() for row in rows]
    return {"questions": int(bank.size), "llms": whole, "scores": scores(whole), "groups": by_group,
            "group_scores": {group: scores(rows) for group, rows in by_group.items()},
            "llm_x_group_scores": scores(every_cell)}


def _row(
    name: str, data: Any, data_name: str, questions: np.ndarray, column: np.ndarray, known: float
) -> dict[str, Any]:
    accuracy, answered = llm_accuracy(data, data_name, questions)
    p = column[answered]
    forecast = float(p.mean()) if answered.size else float("nan")
    # The mean |accuracy found - forecast| of a forecast whose every P(correct) is right: what the bank's finite
    # size alone leaves (a normal's mean absolute value, its variance the answers' sum of p(1 - p) / n^2).
    noise = float(np.sqrt(np.sum(p * (1 - p)) * 2 / np.pi) / answered.size) if answered.size else float("nan")
    return {"llm": name, "answers": int(answered.size), "accuracy": accuracy, "forecast": forecast,
            "reference_accuracy": known, "noise_floor": noise}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.forecast_eval",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="data folder of the bank, with its LLMs' answers")
    ap.add_argument("--reference", required=True, help="data folder the router learned from")
    ap.add_argument("--router", default="shipped", help="'shipped' or a router folder")
    ap.add_argument("--group-column", default="benchmarks",
                    help="the data's attribute naming each question's group (benchmarks, subjects)")
    ap.add_argument("--unseen", action="store_true",
                    help="the bank is the questions of --data the router did not learn from (a --holdout "
                    "build); with --reference the same folder, the reference accuracy is on those it "
                    "learned from")
    ap.add_argument("--json", type=Path, default=None, help="write the results here")
    args = ap.parse_args(argv)
    from jeirt_lite import Router
    from jeirt_lite_training.data import load_dataset

    router = Router.load(None if args.router == "shipped" else args.router)
    data = load_dataset(args.data)
    same = Path(args.reference).resolve() == Path(args.data).resolve()
    reference = data if same else load_dataset(args.reference)
    result = evaluate(router, data, reference, args.group_column, args.unseen)
    for row in result["llms"]:
        print(f"{row['llm']:32s} accuracy {row['accuracy']:.3f}  forecast {row['forecast']:.3f}  "
              f"reference {row['reference_accuracy']:.3f}  ({row['answers']} answers)")
    named = [("whole bank", result["scores"]), ("LLM x group", result["llm_x_group_scores"]),
             *((f"group {group}", values) for group, values in result["group_scores"].items())]
    for name, values in named:
        print(f"{name}: " + ", ".join(f"{key} {value:.4f}" for key, value in values.items()))
    if args.json is not None:
        router_name = args.router if args.router == "shipped" else Path(args.router).name  # no machine's path
        out = {"data": Path(args.data).name, "reference": Path(args.reference).name, "router": router_name,
               **result}
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
