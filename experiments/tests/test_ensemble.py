"""Ensembles and distillation (experiments.ensemble_eval): the logit grid is the predictor's own logits, a logit
average of K JE-IRT routers is one JE-IRT router of dimension K·d, and soft targets train with the same loss as the
answers (answers given as soft targets train the identical model) while probabilities outside [0, 1] are refused."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from jeirt_lite_training.model import JeirtPredictor
from jeirt_lite_training.types import Responses

from experiments.ensemble_eval import ensemble_logits, logit_grid, soft_targets


def _toy(n_q: int = 120, k: int = 4, seed: int = 0) -> tuple[np.ndarray, Responses, Responses]:
    """Random embeddings; LLM j is right when coordinate j of the question's embedding is positive."""
    rng = np.random.default_rng(seed)
    emb = rng.normal(size=(n_q, 8)).astype(np.float32)
    question, llm = (a.ravel().astype(np.int64) for a in np.meshgrid(np.arange(n_q), np.arange(k), indexing="ij"))
    cells = Responses(question, llm, (emb[question, llm] > 0).astype(np.float32))
    train = cells.subset(question < 90)
    return emb, train, cells.subset(question >= 90)


def _fit(emb: np.ndarray, train: Responses, val: Responses, seed: int = 0, soft: bool = False) -> JeirtPredictor:
    return JeirtPredictor(dim=6, dropout=0.0, seed=seed, max_epochs=6, batch_size=64).fit(
        emb, train, val, 4, soft_targets=soft)


def test_logit_grid_is_the_predictors_logits() -> None:
    emb, train, val = _toy()
    predictor = _fit(emb, train, val)
    grid = logit_grid(predictor, emb)
    np.testing.assert_allclose(grid[val.question, val.llm], predictor.predict_logits(emb, val.question, val.llm),
                               rtol=1e-5, atol=1e-5)


def test_the_logit_average_of_k_routers_is_one_router_of_dimension_k_times_d() -> None:
    # q' = mean_k |q_k| · concat(q_k / |q_k|) / √K, m' = concat(m_k) / √K: q'·m'/|q'| − |q'| = mean_k logit_k.
    emb, train, val = _toy()
    members = [_fit(emb, train, val, seed=s) for s in range(3)]
    qs = [m.question_vectors(emb).astype(np.float64) for m in members]
    norms = [np.linalg.norm(q, axis=1, keepdims=True) for q in qs]
    q_big = np.mean(norms, axis=0) * np.concatenate([q / n for q, n in zip(qs, norms)], axis=1) / np.sqrt(3)
    m_big = np.concatenate([m.llm_vectors.astype(np.float64) for m in members], axis=1) / np.sqrt(3)
    norm_big = np.linalg.norm(q_big, axis=1, keepdims=True)
    np.testing.assert_allclose(q_big @ m_big.T / norm_big - norm_big,
                               ensemble_logits([logit_grid(m, emb) for m in members]), rtol=1e-9, atol=1e-9)


def test_answers_given_as_soft_targets_train_the_same_model() -> None:
    emb, train, val = _toy()
    hard = _fit(emb, train, val)
    soft = _fit(emb, train, val, soft=True)
    assert soft.best_val_loss == pytest.approx(hard.best_val_loss, abs=1e-7)
    np.testing.assert_allclose(soft.llm_vectors, hard.llm_vectors, atol=1e-6)


def test_soft_targets_mix_the_teacher_and_the_answers_and_must_be_probabilities() -> None:
    emb, train, val = _toy()
    teacher = np.zeros((len(emb), 4))  # P = 0.5 everywhere
    mixed = soft_targets(train, teacher, 0.5)
    np.testing.assert_allclose(mixed.correct, 0.25 + 0.5 * train.correct, atol=1e-7)
    np.testing.assert_array_equal(soft_targets(train, teacher, 0.0).correct, train.correct)
    student = _fit(emb, mixed, val, soft=True)  # trains; early-stopped on the 0/1 validation answers
    assert np.isfinite(student.best_val_loss)
    with pytest.raises(ValueError, match="0 or 1"):
        _fit(emb, mixed, val)  # probabilities need soft_targets
    bad = Responses(mixed.question, mixed.llm, mixed.correct + 0.6)
    with pytest.raises(ValueError, match=r"probability in \[0, 1\]"):
        _fit(emb, bad, val, soft=True)


def test_the_one_split_experiments_share_their_options() -> None:
    """ensemble_eval, transformer_student_eval and static_sentences_eval parse the shared options alike; only the
    ones that fine-tune the table take --pull and --cache."""
    from experiments.ensemble_eval import one_split_parser

    fine_tuning = vars(one_split_parser("d", "runs.jsonl", ".scratch/x").parse_args(["--split-seed", "3"]))
    frozen = vars(one_split_parser("d", "runs.jsonl", None).parse_args([]))
    assert fine_tuning["split_seed"] == 3 and fine_tuning["pull"] == 0.1 and str(fine_tuning["cache"]) == ".scratch/x"
    assert "pull" not in frozen and "cache" not in frozen
    assert {k: v for k, v in fine_tuning.items() if k not in ("pull", "cache", "split_seed")} == {
        k: v for k, v in frozen.items() if k != "split_seed"}


def test_the_long_lines_are_those_of_texts_with_several_and_at_least_16_tokens() -> None:
    from jeirt_lite_training.encoders import DEFAULT_ENCODER, load_tokenizer

    from experiments.static_sentences_eval import LINE_MIN_TOKENS, long_lines

    tokenizer = load_tokenizer(DEFAULT_ENCODER, 512)
    long = " ".join(["word"] * LINE_MIN_TOKENS)
    short = " ".join(["word"] * (LINE_MIN_TOKENS - 3))  # with "A. " before it, one token short
    texts = [f"{long}\nA. {short}\n  {long} again  \n\n", long + "\n", f"{long} alone", f"{short}\nB. x"]
    assert long_lines(texts, tokenizer) == [long, f"{long} again"]  # a text of one line adds nothing new
