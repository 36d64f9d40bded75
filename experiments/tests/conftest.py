"""The experiments' tests reuse the product tests' helpers (make_data_slice, tiny_router) from tests/."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))


@pytest.fixture(scope="module")
def one_torch_thread() -> Iterator[None]:
    """Tiny models: one thread is faster than two on a small shared machine (no oversubscription). A module asks
    for it with `pytestmark = pytest.mark.usefixtures("one_torch_thread")`."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
