"""experiments.parse_failures: unparsed answers counted by LLM, by question and by subject."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.parse_failures import parse_failure_summary


def test_failures_that_follow_the_question_show_a_variance_far_above_the_llms_rates() -> None:
    # 4 questions x 4 LLMs: questions 0 and 1 fail for every LLM, 2 and 3 for none (each LLM's rate is 1/2)
    question, llm = np.repeat(np.arange(4), 4), np.tile(np.arange(4), 4)
    parsed = (question >= 2).astype(int)
    correct = np.where(parsed == 1, llm % 2, 0)
    out = parse_failure_summary(question, llm, correct, parsed, np.array(["a", "a", "b", "b"]))
    assert out["per_llm_rate"] == [0.5] * 4 and out["failed_share"] == 0.5 and out["failed_always_wrong"]
    assert out["variance_of_failures_per_question"] == 4.0  # counts 4, 4, 0, 0
    assert out["variance_if_independent_of_the_question"] == 1.0  # 4 x 0.5 x 0.5
    assert out["mean_failures_per_question_by_subject"] == {"a": 4.0, "b": 0.0}
    bands = out["accuracy_of_parsed_by_failures_on_the_question"]
    none, four = bands[0], bands[3]
    assert (none["questions"], none["parsed_answers"], none["accuracy_of_parsed"]) == (2, 8, 0.5)
    assert (four["failed_llms"], four["questions"], four["accuracy_of_parsed"]) == ([3, 4], 2, None)


def test_failures_at_each_llms_own_rate_show_a_variance_near_it() -> None:
    rng = np.random.default_rng(0)
    question, llm = np.repeat(np.arange(3000), 8), np.tile(np.arange(8), 3000)
    parsed = (rng.random(len(question)) >= 0.05 * (1 + llm)).astype(int)
    out = parse_failure_summary(question, llm, parsed.copy(), parsed, np.array(["s"] * 3000))
    ratio = out["variance_of_failures_per_question"] / out["variance_if_independent_of_the_question"]
    assert ratio == pytest.approx(1.0, abs=0.1)
