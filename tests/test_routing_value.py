"""jeirt_lite.analysis routing value: the rules on a hand-made answer matrix and against a plain loop over the
questions on a random one."""

from __future__ import annotations

import numpy as np
import pytest
from jeirt_lite.analysis._routing_value import answer_matrix, cost_frontier, cost_weights, routing_value


def test_rules_on_a_small_matrix() -> None:
    nan = np.nan
    answers = np.array([[1, 0, 0], [0, 1, nan], [0, 0, 1], [1, 1, 0]], dtype=float)
    probabilities = np.array([[0.9, 0.2, 0.1], [0.3, 0.8, 0.5], [0.2, 0.3, 0.7], [0.6, 0.95, 0.1]])
    value = routing_value(probabilities, answers, ["a", "b", "c"], {"a": 1.0, "b": 10.0})
    assert value.n_questions == 4 and value.router == 1.0 and value.oracle == 1.0
    assert value.best_single_name in {"a", "b"} and value.best_single == 0.5
    assert value.n_priced == 2 and set(value.single) == {"a", "b"}  # "c" has no cost: never a candidate
    first = value.curve[0]
    assert first[0] == "max P − λ·cost" and first[1] == 0.0
    assert first[2] == 0.75  # among a and b only, question 3 goes to b (wrong) instead of c
    cheapest = [row for row in value.curve if row[0] == "cheapest with P ≥ t" and row[1] == 0.5][0]
    assert cheapest[3] == np.mean([1.0, 10.0, 10.0, 1.0])  # a where it clears 0.5, else the most likely priced


def test_answer_matrix_places_cells_by_column() -> None:
    y = answer_matrix(np.array([0, 1, 1]), np.array([2, 0, 2]), np.array([1.0, 0.0, 1.0]), 2, [2, -1, 0])
    np.testing.assert_array_equal(np.isnan(y), [[False, True, True], [False, True, False]])
    assert y[0, 0] == 1.0 and y[1, 0] == 1.0 and y[1, 2] == 0.0


def test_cost_weights_are_zero_then_1_2_5_steps_from_2_percent_to_one_unit_per_largest_cost() -> None:
    assert cost_weights(10.0) == [0.0, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1]
    assert cost_weights(0.0) == [0.0, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0]  # no cost at all: as if the largest were 1
    assert cost_weights(2e-6) == [0.0, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5]  # dollars per token: the same seven steps
    assert cost_weights(5e9) == [0.0, 5e-12, 1e-11, 2e-11, 5e-11, 1e-10, 2e-10]


def _first_best(values: list[float]) -> int:
    return max(range(len(values)), key=lambda j: (values[j], -j))  # the highest, ties to the lower index


def test_every_rule_matches_a_plain_loop_over_the_questions() -> None:
    rng = np.random.default_rng(3)
    n, k = 80, 5
    answers = (rng.random((n, k)) < 0.6).astype(float)
    answers[rng.random((n, k)) < 0.3] = np.nan
    answers[0] = np.nan  # a question nobody answered: left out
    answers[1] = [np.nan, np.nan, np.nan, 1.0, 0.0]  # answered by LLMs without a cost only
    probabilities = rng.random((n, k)).round(1)  # ties on purpose
    names = ["a", "b", "c", "d", "e"]
    costs = {"a": 3.0, "b": 0.5, "c": 8.0}
    value = routing_value(probabilities, answers, names, costs)

    asked = [i for i in range(n) if not np.isnan(answers[i]).all()]
    seen = {i: [j for j in range(k) if not np.isnan(answers[i, j])] for i in asked}
    hits = [np.nansum(answers[:, j]) / max((~np.isnan(answers[:, j])).sum(), 1) for j in range(k)]
    answered = [int((~np.isnan(answers[:, j])).sum()) for j in range(k)]
    best = _first_best([hits[j] if answered[j] >= 0.95 * max(answered) else -1.0 for j in range(k)])
    assert value.n_questions == len(asked) and value.best_single_name == names[best]
    assert value.best_single_answered == answered[best]
    router = [answers[i, max(seen[i], key=lambda j: (probabilities[i, j], -j))] for i in asked]
    single = [answers[i, best if best in seen[i] else max(seen[i], key=lambda j: (hits[j], -j))] for i in asked]
    assert value.router == pytest.approx(np.mean(router)) and value.best_single == pytest.approx(np.mean(single))
    assert value.oracle == pytest.approx(np.mean([np.nansum(answers[i]) > 0 for i in asked]))
    assert value.mean_llm == pytest.approx(np.nanmean(answers))

    cost = [costs.get(name, np.nan) for name in names]
    priced = {i: [j for j in seen[i] if not np.isnan(cost[j])] for i in asked}
    rows = [i for i in asked if priced[i]]
    assert value.n_priced == 3 and 1 not in rows
    assert value.single == {names[j]: (pytest.approx(np.nanmean(answers[rows, j])), cost[j]) for j in range(3)}
    want = []
    for weight in cost_weights(8.0):
        picks = [max(priced[i], key=lambda j: (probabilities[i, j] - weight * cost[j], -j)) for i in rows]
        want.append(("max P − λ·cost", weight, np.mean([answers[i, j] for i, j in zip(rows, picks)]),
                     np.mean([cost[j] for j in picks])))
    for t in (0.5, 0.6, 0.7, 0.8, 0.9):
        picks = []
        for i in rows:
            clear = [j for j in priced[i] if probabilities[i, j] >= t]
            picks.append(min(clear, key=lambda j: (cost[j], j)) if clear
                         else max(priced[i], key=lambda j: (probabilities[i, j], -j)))
        want.append(("cheapest with P ≥ t", t, np.mean([answers[i, j] for i, j in zip(rows, picks)]),
                     np.mean([cost[j] for j in picks])))
    assert [(rule, setting) for rule, setting, _, _ in value.curve] == [(rule, setting) for rule, setting, _, _ in want]
    np.testing.assert_allclose([row[2:] for row in value.curve], [row[2:] for row in want])

    # as route chooses: among every LLM (with a cost, for the cost rules), answered or not
    own = [max(range(k), key=lambda j: (probabilities[i, j], -j)) for i in asked]
    assert value.router_unanswered == pytest.approx(np.mean([np.isnan(answers[i, j]) for i, j in zip(asked, own)]))
    unanswered = []
    for weight in cost_weights(8.0):
        picks = [max(range(3), key=lambda j: (probabilities[i, j] - weight * cost[j], -j)) for i in rows]
        unanswered.append(np.mean([np.isnan(answers[i, j]) for i, j in zip(rows, picks)]))
    for t in (0.5, 0.6, 0.7, 0.8, 0.9):
        picks = []
        for i in rows:
            clear = [j for j in range(3) if probabilities[i, j] >= t]
            picks.append(min(clear, key=lambda j: (cost[j], j)) if clear
                         else max(range(3), key=lambda j: (probabilities[i, j], -j)))
        unanswered.append(np.mean([np.isnan(answers[i, j]) for i, j in zip(rows, picks)]))
    np.testing.assert_allclose(value.curve_unanswered, unanswered)


def test_without_a_priced_answer_there_is_no_curve() -> None:
    answers = np.array([[1.0, 0.0], [0.0, np.nan]])
    value = routing_value(np.array([[0.4, 0.6], [0.7, 0.2]]), answers, ["a", "b"], {"c": 1.0})
    assert value.n_priced == 0 and value.single == {} and value.curve == []
    assert value.router == 0.0 and value.best_single == 0.5 and value.best_single_name == "a"


def test_answer_matrix_reads_llms_beyond_the_columns_and_columns_beyond_the_llms() -> None:
    y = answer_matrix(np.array([0, 1, 0]), np.array([9, 1, 1]), np.array([1.0, 0.0, 1.0]), 2, [1, 7])
    np.testing.assert_array_equal(y, [[1.0, np.nan], [0.0, np.nan]])  # LLM 9 is in no column; column 7 has no cell


def test_the_best_single_llm_is_right_most_often_by_share_and_has_answered() -> None:
    answers = np.full((23, 3), np.nan)
    answers[:20, 0] = [1.0] * 18 + [0.0] * 2  # 90% right, 2 wrong
    answers[20:, 1] = [1.0, 1.0, 0.0]  # 67% right, 1 wrong: fewer wrong answers, a lower share
    value = routing_value(np.full((23, 3), 0.5), answers, ["a", "b", "never-asked"], {})
    assert value.best_single_name == "a" and value.n_questions == 23
    assert value.best_single == pytest.approx(20 / 23)  # each question goes to the best LLM that answered it


def test_an_llm_that_answered_only_an_easy_block_is_not_the_best_single_llm() -> None:
    # Block-missing data (zeroeval: an LLM that answered only GSM8K): "easy" answered the 40 easy questions and got
    # them all right, "broad" answered all 100 and got 36 easy and 30 hard ones right. By share "easy" wins (1.0
    # against 0.66), yet it is no single LLM to send every question to: the bound is "broad".
    answers = np.full((100, 3), np.nan)
    answers[:40, 0] = 1.0
    answers[:, 1] = [1.0] * 36 + [0.0] * 4 + [1.0] * 30 + [0.0] * 30
    answers[:, 2] = 0.0  # answered everything, all wrong
    value = routing_value(np.full((100, 3), 0.5), answers, ["easy", "broad", "weak"], {"easy": 1.0, "broad": 2.0})
    assert value.best_single_name == "broad" and value.best_single_answered == 100
    assert value.best_single == pytest.approx(0.66)
    assert value.best_priced == "broad" and value.single["easy"] == (1.0, 1.0)


def test_a_rule_routing_to_an_llm_without_answers_there_is_counted() -> None:
    # "gsm-only" is cheap and rated high everywhere but answered only the first half: the cost rule scored among the
    # answering LLMs goes to "broad" on the second half, while route's own choice goes to "gsm-only", unscored there
    answers = np.full((10, 2), np.nan)
    answers[:5, 0] = 1.0
    answers[:, 1] = 1.0
    probabilities = np.tile([0.95, 0.9], (10, 1))
    value = routing_value(probabilities, answers, ["gsm-only", "broad"], {"gsm-only": 1.0, "broad": 10.0})
    assert value.router_unanswered == 0.5
    weights = [row[1] for row in value.curve if row[0] == "max P − λ·cost"]
    assert value.curve_unanswered[:len(weights)] == [0.5] * len(weights)
    assert value.curve[0][2] == 1.0  # scored among the answering LLMs, every rule looks perfect


def test_a_few_missing_answers_keep_an_llm_a_candidate() -> None:
    answers = np.zeros((100, 2))
    answers[:, 0] = 1.0
    answers[:3, 0] = np.nan  # 97 of 100 answered: still the best, its 3 gaps go to the other
    value = routing_value(np.full((100, 2), 0.5), answers, ["a", "b"], {})
    assert value.best_single_name == "a" and value.best_single_answered == 97
    assert value.best_single == pytest.approx(0.97)


def test_the_cost_frontier_names_the_llms_no_cheaper_one_beats() -> None:
    single = {"big": (0.8, 10.0), "mid": (0.6, 3.0), "worse-mid": (0.5, 4.0), "tie-low": (0.55, 3.0),
              "small": (0.4, 1.0), "as-good-dearer": (0.8, 12.0), "free": (0.3, 0.0)}
    assert cost_frontier(single) == ["free", "small", "mid", "big"]
    assert cost_frontier({}) == []
    assert cost_frontier({"only": (0.0, 2.0)}) == ["only"]
