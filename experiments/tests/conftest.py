"""The experiments' tests reuse the product tests' helpers (make_data_slice, tiny_router) from tests/."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
