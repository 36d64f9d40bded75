"""Optional dependencies of the I/O wing, imported on first use with an error that names the extra."""

from __future__ import annotations

import importlib
from typing import Any

from .._errors import JeirtError


def require_pyarrow() -> Any:
    """Import pyarrow (Parquet support is an optional extra)."""
    try:
        # import_module keeps the optional, untyped dependency out of mypy's import checks.
        pyarrow = importlib.import_module("pyarrow")
        importlib.import_module("pyarrow.parquet")  # makes pyarrow.parquet an attribute
    except ImportError as err:
        raise JeirtError(
            "Parquet files need pyarrow, which is not installed: pip install 'jeirt-lite[parquet]'"
        ) from err
    return pyarrow
