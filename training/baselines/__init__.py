"""Baselines for the comparison, each a `training.types.Predictor` tuned on validation only."""

from __future__ import annotations

from training.baselines.embedllm import EmbedLlmMF
from training.baselines.irt2pl import TwoPL, fit_2pl, two_pl_diagnostic
from training.baselines.knn import KnnPerLlm
from training.baselines.llm_accuracy import LlmAccuracy
from training.baselines.mirt import TextMirt
from training.types import Predictor


def default_baselines() -> list[Predictor]:
    """The held-out baselines, cheapest first (2PL is a diagnostic, not here: it cannot score unseen questions)."""
    return [LlmAccuracy(), KnnPerLlm(), EmbedLlmMF(), TextMirt()]


__all__ = ["EmbedLlmMF", "KnnPerLlm", "LlmAccuracy", "TextMirt", "TwoPL", "default_baselines", "fit_2pl",
           "two_pl_diagnostic"]
