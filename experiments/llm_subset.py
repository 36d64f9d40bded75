"""A data folder with fewer LLMs: n of a folder's LLMs that answered every benchmark, spread evenly over accuracy.

The kept-back routing benchmark of issue #30 has 11 LLMs; this gives the comparison a folder of that size from a
dataset here, so that the methods can be compared where few LLMs share the answers (same three files, the
questions unchanged, only the chosen LLMs' rows of models.csv and responses.csv):

    python -m experiments.llm_subset data/zeroeval_crux_gsm_math zeroeval_11 --llms 11
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd


def spread_by_accuracy(responses: pd.DataFrame, questions: pd.DataFrame, n: int) -> list[int]:
    """Model ids of n LLMs with answers on every benchmark, at evenly spaced ranks of overall accuracy."""
    benchmark_of = questions.set_index("question_id")["benchmark"]
    answered = responses.assign(benchmark=responses["question_id"].map(benchmark_of))
    benchmarks = answered.groupby("model_id")["benchmark"].nunique()
    complete = benchmarks[benchmarks == questions["benchmark"].nunique()].index
    if len(complete) < n:
        raise ValueError(f"only {len(complete)} LLMs answered every benchmark; asked for {n}")
    accuracy = answered[answered["model_id"].isin(complete)].groupby("model_id")["correct"].mean().sort_values()
    ranks = np.round(np.linspace(0, len(accuracy) - 1, n)).astype(int)
    return [int(i) for i in accuracy.index[ranks]]


def write_subset(source: Path, out: Path, n: int) -> list[int]:
    questions = pd.read_csv(source / "questions.csv")
    responses = pd.read_csv(source / "responses.csv")
    models = pd.read_csv(source / "models.csv")
    keep = spread_by_accuracy(responses, questions, n)
    out.mkdir(parents=True, exist_ok=False)
    (out / "questions.csv").write_bytes((source / "questions.csv").read_bytes())
    models[models["model_id"].isin(keep)].to_csv(out / "models.csv", index=False)
    responses[responses["model_id"].isin(keep)].to_csv(out / "responses.csv", index=False)
    return keep


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("source", type=Path, help="data folder (questions.csv, models.csv, responses.csv)")
    parser.add_argument("out", type=Path, help="new folder to write (must not exist)")
    parser.add_argument("--llms", type=int, default=11, help="how many LLMs to keep")
    args = parser.parse_args(argv)
    keep = write_subset(args.source, args.out, args.llms)
    print(f"{args.out}: {len(keep)} LLMs (model ids {keep})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
