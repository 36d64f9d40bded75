"""The package boundaries the layout promises (CONTRIBUTING.md): the runtime never loads the training library or
torch; the training library takes what it needs from the runtime through one module and never reaches into the
laboratory (experiments/, scripts/), which is not shipped."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TRAINING = REPO / "python" / "jeirt_lite_training"
RUNTIME_DOOR = "_runtime.py"


def _imported_modules(path: Path) -> set[str]:
    """Absolute module names a file imports, at any depth (relative imports are the package's own)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def test_the_training_library_reaches_the_runtime_through_one_module_and_never_the_laboratory() -> None:
    files = sorted(TRAINING.glob("*.py"))
    assert len(files) > 10
    for path in files:
        top = {name.split(".")[0] for name in _imported_modules(path)}
        assert not top & {"experiments", "scripts", "training"}, path.name
        if path.name != RUNTIME_DOOR:
            assert "jeirt_lite" not in top, f"{path.name} imports jeirt_lite; take it through {RUNTIME_DOOR}"
    assert "jeirt_lite" in {name.split(".")[0] for name in _imported_modules(TRAINING / RUNTIME_DOOR)}


def test_the_runtime_loads_neither_torch_nor_the_training_library() -> None:
    code = (
        "import sys, jeirt_lite, jeirt_lite.cli, jeirt_lite.batch, jeirt_lite.analysis, jeirt_lite.artifact\n"
        "jeirt_lite.Router.load(threads=1).route(['What is 7 * 8?'])\n"
        "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('jeirt_lite_training')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    assert done.stdout.strip() == "[]"
