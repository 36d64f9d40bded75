"""A smaller data folder: the questions of some subjects, or n LLMs spread evenly over accuracy.

Issue #30's kept-back sets are smaller than the data here: a chemistry benchmark answered by 32 LLM setups, a
routing benchmark of 11 LLMs. This cuts folders of those shapes from the data here, so that the methods can be
compared where few questions or few LLMs share the answers (the same three files; only the kept questions' and
LLMs' rows):

    python -m experiments.data_subset data/zeroeval_crux_gsm_math zeroeval_11 --llms 11
    python -m experiments.data_subset data/mmlu_pro mmlu_pro_chemistry --subjects chemistry
    python -m experiments.data_subset data/mmlu_pro mmlu_pro_chem_answers --subjects chemistry --answers-only
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


def write_subset(source: Path, out: Path, n_llms: int | None = None, subjects: list[str] | None = None,
                 answers_only: bool = False) -> list[int]:
    """`out` gets `source`'s questions of `subjects` (None: all) and, of those questions' answers, the ones of
    n_llms LLMs spread over accuracy (None: every LLM); returns the model ids kept. answers_only: every question
    stays, the others unanswered (their texts are still there for a static table to read)."""
    questions = pd.read_csv(source / "questions.csv")
    responses = pd.read_csv(source / "responses.csv")
    models = pd.read_csv(source / "models.csv")
    if subjects is not None:
        unknown = sorted(set(subjects) - set(questions["subject"]))
        if unknown:
            raise ValueError(f"no questions of subject(s) {unknown}; the folder has {sorted(set(questions['subject']))}")
        chosen = questions[questions["subject"].isin(subjects)]
        responses = responses[responses["question_id"].isin(chosen["question_id"])]
        questions = questions if answers_only else chosen
    keep = spread_by_accuracy(responses, questions, n_llms) if n_llms is not None else sorted(
        int(i) for i in responses["model_id"].unique())
    out.mkdir(parents=True, exist_ok=False)
    if subjects is None or answers_only:  # the file as it is, byte for byte
        (out / "questions.csv").write_bytes((source / "questions.csv").read_bytes())
    else:
        questions.to_csv(out / "questions.csv", index=False)
    models[models["model_id"].isin(keep)].to_csv(out / "models.csv", index=False)
    responses[responses["model_id"].isin(keep)].to_csv(out / "responses.csv", index=False)
    return keep


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("source", type=Path, help="data folder (questions.csv, models.csv, responses.csv)")
    parser.add_argument("out", type=Path, help="new folder to write (must not exist)")
    parser.add_argument("--llms", type=int, default=None, help="how many LLMs to keep (default: all)")
    parser.add_argument("--subjects", default=None, help="comma list of the subjects whose questions to keep")
    parser.add_argument("--answers-only", action="store_true",
                        help="with --subjects: keep every question, but only the answers to those subjects' questions")
    args = parser.parse_args(argv)
    subjects = [s for s in args.subjects.split(",") if s] if args.subjects else None
    if args.answers_only and subjects is None:
        parser.error("--answers-only needs --subjects")
    keep = write_subset(args.source, args.out, args.llms, subjects, args.answers_only)
    print(f"{args.out}: {len(keep)} LLMs (model ids {keep})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
