"""Shared fixtures: routers built in code (see tiny_router.py) and real question texts from the repository's data."""

from __future__ import annotations

import csv
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from tiny_router import build_tiny_router  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data"


@pytest.fixture(scope="session")
def tiny_router_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_router(tmp_path_factory.mktemp("routers") / "tiny")


@pytest.fixture(scope="session")
def encoder_cache(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One embedding cache for the whole session ($JEIRT_CACHE, a developer's warm cache, when set): its entries are
    keyed by text and encoder, so tests share them safely, and the static encoder's distilled token vectors (a
    pass of MiniLM over its vocabulary, minutes on two cores) are computed once instead of once per test."""
    return os.environ.get("JEIRT_CACHE") or str(tmp_path_factory.mktemp("encoder-cache"))


@pytest.fixture(scope="session")
def real_texts() -> list[str]:
    """200 real MMLU-Pro question texts (question plus lettered options), spread over the file."""
    csv.field_size_limit(1 << 30)
    with open(DATA / "mmlu_pro" / "questions.csv", newline="", encoding="utf-8") as handle:
        texts = [row["text"] for row in csv.DictReader(handle)]
    return texts[:: max(1, len(texts) // 200)][:200]
