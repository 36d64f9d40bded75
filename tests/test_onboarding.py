"""Adding an LLM from its answers (question side frozen), selecting and removing LLMs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from jeirt_lite import EncodedQuestions, JeirtError, Router
from jeirt_lite._onboarding import fit_llm_vector


def _simulate(rng: np.random.Generator, n: int, d: int, true_m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    questions = rng.normal(size=(n, d)) * 0.7
    norms = np.linalg.norm(questions, axis=1)
    p = 1 / (1 + np.exp(-(questions @ true_m / norms - norms)))
    return questions.astype(np.float32), (rng.random(n) < p).astype(np.int64)


def test_fit_recovers_the_generating_vector() -> None:
    rng = np.random.default_rng(0)
    true_m = rng.normal(size=6) * 2
    questions, correct = _simulate(rng, 20000, 6, true_m)
    fitted = fit_llm_vector(questions, correct, l2=1e-3)
    np.testing.assert_allclose(fitted, true_m, atol=0.15)


def _gradient(questions: np.ndarray, correct: np.ndarray, m: np.ndarray, prior: np.ndarray, l2: float) -> np.ndarray:
    """The MAP objective's gradient, written out independently of the fit."""
    q = questions.astype(np.float64)
    norms = np.linalg.norm(q, axis=1)
    u = q / norms[:, None]
    p = 1 / (1 + np.exp(-(u @ m - norms)))
    return u.T @ (p - correct) + l2 * (m - prior)


def test_fit_is_the_exact_optimum() -> None:
    rng = np.random.default_rng(1)
    questions, correct = _simulate(rng, 300, 5, rng.normal(size=5))
    prior = rng.normal(size=5)
    m = fit_llm_vector(questions, correct, prior_mean=prior, l2=0.5).astype(np.float64)
    gradient = _gradient(questions, correct, m, prior, 0.5)
    assert np.max(np.abs(gradient)) < 1e-3  # float32 rounding of the returned vector only


@pytest.mark.parametrize(
    ("seed", "n", "d", "l2", "far", "separable"),
    [
        (0, 200, 5, 1e-3, 5.0, True),  # answers split exactly by a direction: the optimum far out, held by the prior
        (1, 40, 8, 1e-2, 10.0, True),
        (2, 500, 16, 1e-4, 20.0, True),
        (3, 100, 4, 1e-3, 30.0, False),  # a prior mean far from the answers: full Newton steps overshoot from there
        (4, 300, 8, 1e-2, 100.0, False),
        (5, 60, 3, 1e-4, 10.0, False),
    ],
)
def test_hard_fits_still_reach_the_exact_optimum(
    seed: int, n: int, d: int, l2: float, far: float, separable: bool
) -> None:
    """A weak prior on separable answers, and a start (the prior mean) far from the optimum: the backtracking line
    search, the Hessian and the objective it checks steps with must all be right for Newton to get there."""
    rng = np.random.default_rng(seed)
    questions = (rng.normal(size=(n, d)) * 0.7).astype(np.float32)
    norms = np.linalg.norm(questions.astype(np.float64), axis=1)
    direction = rng.normal(size=d)
    if separable:
        prior = np.zeros(d)
        correct = (questions @ (direction * far) / norms - norms > 0).astype(np.float64)
    else:
        prior = direction * far / np.linalg.norm(direction)
        chance = 1 / (1 + np.exp(-(questions @ rng.normal(size=d) / norms - norms)))
        correct = (rng.random(n) < chance).astype(np.float64)
    m = fit_llm_vector(questions, correct, prior_mean=prior, l2=l2).astype(np.float64)
    assert np.max(np.abs(_gradient(questions, correct, m, prior, l2))) < 1e-5


def test_a_zero_question_vector_changes_nothing() -> None:
    """It has no direction (the kernels give it logit 0): the fit with it is the fit without it."""
    rng = np.random.default_rng(6)
    questions, correct = _simulate(rng, 80, 4, rng.normal(size=4))
    with_zero = fit_llm_vector(np.vstack([questions, np.zeros((1, 4), np.float32)]), np.append(correct, 1))
    np.testing.assert_allclose(with_zero, fit_llm_vector(questions, correct), rtol=1e-6, atol=1e-6)


def test_bad_question_vectors_are_named() -> None:
    for shape in [(3,), (3, 2, 1)]:
        with pytest.raises(JeirtError, match="must be 2-D"):
            fit_llm_vector(np.ones(shape), [1, 0, 1])
    questions = np.ones((4, 2))
    questions[2, 1] = np.nan
    questions[3, 0] = np.inf
    with pytest.raises(JeirtError, match="question row 2 contains NaN"):  # the first bad row
        fit_llm_vector(questions, [1, 0, 1, 0])


@pytest.mark.parametrize("l2", [0.0, -1.0])
def test_a_prior_strength_that_is_not_positive_is_refused(l2: float) -> None:
    with pytest.raises(JeirtError, match="l2 must be a positive number"):
        fit_llm_vector(np.ones((3, 2)), [1, 0, 1], l2=l2)


def test_all_correct_answers_stay_finite_thanks_to_the_prior() -> None:
    rng = np.random.default_rng(2)
    questions = rng.normal(size=(50, 4)).astype(np.float32)
    fitted = fit_llm_vector(questions, np.ones(50))
    assert np.isfinite(fitted).all()


@pytest.mark.parametrize(
    ("correct", "message"),
    [
        ([1, 0, 2], "label 2 is 2"),
        ([3, 0, 2], "label 0 is 3"),  # the first bad label is named
        ([1, 0], "got 3 questions but 2 labels"),
        (["yes", "no", "yes"], "labels must be 0/1"),
        ([[1, 0, 1]], "must be 1-D"),
        (1, "must be 1-D"),
        ([1, 0, 1, 1], "got 3 questions but 4 labels"),
        ([1, -1, 0], "label 1 is -1"),
        ([1, 0.5, 0], "label 1 is 0.5"),
    ],
)
def test_bad_labels(correct: object, message: str) -> None:
    with pytest.raises(JeirtError, match=message):
        fit_llm_vector(np.ones((3, 2)), correct)  # type: ignore[arg-type]


def test_too_few_answers() -> None:
    with pytest.raises(JeirtError, match="at least 2 answers"):
        fit_llm_vector(np.ones((1, 2)), [1])
    assert np.isfinite(fit_llm_vector(np.eye(2), [1, 0])).all()  # two are enough


@pytest.fixture(scope="module")
def router(tiny_router_path: Path) -> Router:
    return Router.load(tiny_router_path, threads=1)


def test_add_llm_returns_a_router_with_it_and_keeps_the_others(router: Router, tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    true_m = rng.normal(size=router.dim) * 2
    questions, correct = _simulate(rng, 3000, router.dim, true_m)
    bigger = router.add_llm("new-llm", EncodedQuestions(questions), correct)
    assert bigger.llms == router.llms + ("new-llm",)
    np.testing.assert_array_equal(bigger.llm_vectors[:-1], router.llm_vectors)
    assert np.corrcoef(bigger.llm_vectors[-1], true_m)[0, 1] > 0.95
    assert router.llms[-1] != "new-llm"  # the original router is unchanged
    saved = Router.load(bigger.save(tmp_path / "bigger"))
    assert saved.llms[-1] == "new-llm"
    record = saved.manifest["onboarded"][0]
    assert {k: record[k] for k in ("name", "answers", "l2")} == {"name": "new-llm", "answers": 3000, "l2": 1.0}
    assert record["cv_auc"] > 0.9 and record["correction"].startswith("off")  # this test router has no features


def test_add_llm_from_texts(router: Router) -> None:
    texts = ["what is the price", "the court and the contract law", "acid base chemistry", "prime number"]
    bigger = router.add_llm("text-llm", texts, [True, False, True, False])
    assert bigger.predict_proba(texts).shape == (4, len(router.llms) + 1)


def test_add_llm_holds_out_a_question_asked_twice_as_one(router: Router, monkeypatch: pytest.MonkeyPatch) -> None:
    from jeirt_lite import _onboard_router

    seen: dict[str, np.ndarray] = {}
    fit = _onboard_router.fit_onboarding

    def spy(*args: Any, groups: np.ndarray, **kwargs: Any) -> Any:
        seen["groups"] = groups
        return fit(*args, groups=groups, **kwargs)

    monkeypatch.setattr(_onboard_router, "fit_onboarding", spy)
    texts = ["what is two plus two", "what is  two plus two\n", "name a river", "what is two plus three"]
    router.add_llm("again", texts, [1, 0, 1, 0])
    keys = list(seen["groups"])
    assert keys[0] == keys[1] and len(set(keys)) == 3  # equal up to whitespace: one question
    router.add_llm("encoded", EncodedQuestions(np.ones((3, router.dim))), [1, 0, 1])
    assert seen["groups"] is None  # encoded questions: equal vectors are one question's answers


def test_add_llm_errors(router: Router) -> None:
    with pytest.raises(JeirtError, match="already in this router"):
        router.add_llm(router.llms[0], EncodedQuestions(np.ones((3, router.dim))), [1, 0, 1])
    with pytest.raises(JeirtError, match="new LLM's name must be a non-empty string"):
        router.add_llm(" ", EncodedQuestions(np.ones((3, router.dim))), [1, 0, 1])
    for name in ("a\nb", "x\x00y", "a" * 1001):  # names a save would refuse are refused here, not at the save
        with pytest.raises(JeirtError, match="new LLM's name .* (is too long|holds a control character)"):
            router.add_llm(name, EncodedQuestions(np.ones((3, router.dim))), [1, 0, 1])
    with pytest.raises(JeirtError, match="name ' llm-9 ' has spaces at its ends; give it as 'llm-9'"):
        router.add_llm(" llm-9 ", EncodedQuestions(np.ones((3, router.dim))), [1, 0, 1])
    grown = router.add_llm("a" * 1000, EncodedQuestions(np.ones((3, router.dim))), iter([1, 0, 1]))
    assert grown.llms[-1] == "a" * 1000  # the longest name allowed, labels from an iterator
    with pytest.raises(JeirtError, match="got 3 questions but 2 labels"):
        router.add_llm("x", EncodedQuestions(np.ones((3, router.dim))), [1, 0])
    with pytest.raises(JeirtError, match=r"^this router's encoder exposes no features \(encoder.feature_output\)"):
        router.add_llm("x", EncodedQuestions(np.ones((3, router.dim)), np.ones((3, 4))), [1, 0, 1])


def test_select_and_remove(router: Router) -> None:
    subset = router.select_llms(["llm-3", "llm-1"])
    assert subset.llms == ("llm-3", "llm-1")
    q = np.random.default_rng(4).normal(size=(5, router.dim)).astype(np.float32)
    full = router.predict_proba(EncodedQuestions(q))
    np.testing.assert_array_equal(subset.predict_proba(EncodedQuestions(q)), full[:, [3, 1]])
    assert router.remove_llm("llm-0").llms == router.llms[1:]
    with pytest.raises(JeirtError, match="unknown LLM 'gpt-9'"):
        router.select_llms(["gpt-9"])
    with pytest.raises(JeirtError, match="selected once"):
        router.select_llms(["llm-1", "llm-1"])
    with pytest.raises(JeirtError, match="at least one"):
        router.select_llms([])


def test_add_llm_from_texts_reads_the_router_s_record_and_its_features() -> None:
    # The shipped router keeps a record of its training questions and exposes its encoder's features: from texts,
    # add_llm counts the answers on training questions and fits the correction on the others' features.
    import csv

    with open(Path(__file__).resolve().parents[1] / "data" / "mmlu_pro" / "questions.csv", encoding="utf-8") as f:
        trained_on = [row["text"] for _, row in zip(range(3), csv.DictReader(f))]
    unseen = ["What is 7 * 8?", "Who wrote Hamlet?", "What is the capital of Australia?", "What is 2+2?",
              "Name a prime number above 10.", "What year did World War II end?", "Who painted the Mona Lisa?",
              "What is the boiling point of water in Kelvin?", "What is the square root of 144?",
              "Which planet is largest?", "What gas do plants absorb?", "Which enzyme unwinds DNA?"]
    shipped = Router.load()
    fresh = shipped.add_llm("new", trained_on + unseen, [1, 0, 1] + [1, 0] * 6)
    record = fresh.manifest["onboarded"][-1]
    assert record["on_training_questions"] == 3 and record["correction"] == "on"
    assert shipped.corrections is None and fresh.corrections is not None
