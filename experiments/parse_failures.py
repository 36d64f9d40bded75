"""How MMLU-Pro's unparsed answers fall: by LLM, by question, by subject. Would a per-LLM ceiling on P(correct) help?

    python -m experiments.parse_failures --data data/mmlu_pro [--json OUT]

A cell whose output held no answer the scorer could extract (`parsed` 0 in responses.csv) is scored wrong. If those
failures struck each LLM at its own rate whatever the question, P(correct) would be capped at 1 minus that rate, a
per-LLM ceiling (a 4PL's upper asymptote) that JE-IRT's sigmoid cannot express. This measures whether they do: the
variance of the per-question count of failures against the variance the per-LLM rates alone would give (a ratio
near 1: independent of the question, a ceiling fits; far above 1: they follow the question, which the router's
direction and norm already read), their rate by subject, and the accuracy of parsed answers by how many LLMs failed
on the question (docs/research/shipped-router.md, "What its predictions leave").
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

COUNT_BANDS = ((0, 0), (1, 1), (2, 2), (3, 4), (5, 8), (9, 1_000_000))


def parse_failure_summary(question: np.ndarray, llm: np.ndarray, correct: np.ndarray, parsed: np.ndarray,
                          subjects: np.ndarray) -> dict[str, Any]:
    """question, llm: int per cell; correct, parsed: 0/1 per cell; subjects: one per question (indexed by question)."""
    failed = 1.0 - np.asarray(parsed, dtype=np.float64)
    n_questions, n_llms = int(question.max()) + 1, int(llm.max()) + 1
    rate = np.bincount(llm, weights=failed, minlength=n_llms) / np.bincount(llm, minlength=n_llms)
    expected = rate[llm]
    observed_count = np.bincount(question, weights=failed, minlength=n_questions)
    independent_variance = np.bincount(question, weights=expected * (1 - expected), minlength=n_questions)
    answered = np.bincount(question, minlength=n_questions) > 0
    by_subject = {str(s): float(observed_count[answered & (subjects == s)].mean())
                  for s in sorted(set(subjects[answered].tolist()))}
    bands = []
    for low, high in COUNT_BANDS:
        in_band = (observed_count >= low) & (observed_count <= high) & answered
        cells = in_band[question] & (parsed == 1)
        bands.append({"failed_llms": [low, high], "questions": int(in_band.sum()), "parsed_answers": int(cells.sum()),
                      "accuracy_of_parsed": float(correct[cells].mean()) if cells.any() else None})
    return {
        "cells": int(len(question)), "failed_share": float(failed.mean()),
        "failed_always_wrong": bool(np.all(correct[failed == 1] == 0)),
        "per_llm_rate": rate.tolist(),
        "variance_of_failures_per_question": float(observed_count[answered].var()),
        "variance_if_independent_of_the_question": float(independent_variance[answered].mean()),
        "mean_failures_per_question_by_subject": by_subject,
        "accuracy_of_parsed_by_failures_on_the_question": bands,
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.parse_failures", description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, type=Path, help="a data folder whose responses.csv has a parsed column")
    ap.add_argument("--json", type=Path, default=None, help="write the summary here")
    args = ap.parse_args(argv)
    import pandas as pd

    responses = pd.read_csv(args.data / "responses.csv")
    if "parsed" not in responses.columns:
        raise SystemExit(f"{args.data / 'responses.csv'}: no parsed column")
    questions = pd.read_csv(args.data / "questions.csv", usecols=["question_id", "subject"])
    models = pd.read_csv(args.data / "models.csv", usecols=["model_id", "name"])
    q_index = {qid: i for i, qid in enumerate(questions.question_id)}
    m_index = {mid: i for i, mid in enumerate(models.model_id)}
    out = parse_failure_summary(responses.question_id.map(q_index).to_numpy(), responses.model_id.map(m_index).to_numpy(),
                                responses.correct.to_numpy(), responses.parsed.to_numpy(), questions.subject.to_numpy())
    out["per_llm_rate"] = dict(zip(models.name, out["per_llm_rate"]))
    out["data"] = args.data.name
    ratio = out["variance_of_failures_per_question"] / out["variance_if_independent_of_the_question"]
    print(f"{out['failed_share']:.1%} of {out['cells']} answers unparsed (always scored wrong: "
          f"{out['failed_always_wrong']}); per LLM {min(out['per_llm_rate'].values()):.1%} to "
          f"{max(out['per_llm_rate'].values()):.1%}; per-question count variance {ratio:.1f}x what the LLMs' "
          f"rates alone give")
    for band in out["accuracy_of_parsed_by_failures_on_the_question"]:
        right = "none parsed" if band["accuracy_of_parsed"] is None else f"{band['accuracy_of_parsed']:.3f}"
        print(f"  {band['failed_llms']} LLMs failed: {band['questions']} questions, parsed answers right {right}")
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
