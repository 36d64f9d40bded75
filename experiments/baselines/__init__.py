"""Baselines for the comparison, each a `jeirt_lite_training.types.Predictor` tuned on validation only."""

from __future__ import annotations

from jeirt_lite_training.types import Predictor

from .embedllm import EmbedLlmMF
from .irt2pl import TwoPL, fit_2pl, two_pl_diagnostic
from .knn import KnnPerLlm
from .llm_accuracy import LlmAccuracy
from .mirt import TextMirt


def default_baselines() -> list[Predictor]:
    """The held-out baselines, cheapest first (2PL is a diagnostic, not here: it cannot score unseen questions)."""
    return [LlmAccuracy(), KnnPerLlm(), EmbedLlmMF(), TextMirt()]


__all__ = ["EmbedLlmMF", "KnnPerLlm", "LlmAccuracy", "TextMirt", "TwoPL", "default_baselines", "fit_2pl",
           "two_pl_diagnostic"]
