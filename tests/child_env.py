"""The environment of a child Python process that must import this checkout's package, as the tests do."""

from __future__ import annotations

import os
from pathlib import Path

import jeirt_lite


def cli_env() -> dict[str, str]:
    """The environment of a `python -m jeirt_lite` child, with this checkout's package importable."""
    env = dict(os.environ)
    package_root = str(Path(jeirt_lite.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([package_root, env.get("PYTHONPATH", "")])
    return env
