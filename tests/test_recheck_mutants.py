"""scripts.recheck_mutants: a survivor's diff is applied exactly, and one that no longer matches is reported stale."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts.recheck_mutants import StaleDiff, apply_diff, caught, changed_lines

DIFF = """--- a/python/pkg/mod.py
+++ b/python/pkg/mod.py
@@ -2,3 +2,3 @@
 def f(x):
-    return x + 1
+    return x - 1
 
"""


def _module(root: Path, body: str) -> Path:
    path = root / "python" / "pkg" / "mod.py"
    path.parent.mkdir(parents=True)
    path.write_text(body)
    return path


def test_a_diff_is_applied_line_for_line(tmp_path: Path) -> None:
    path = _module(tmp_path, "import os\ndef f(x):\n    return x + 1\n\nprint(f(1))\n")
    apply_diff(DIFF, tmp_path)
    assert path.read_text() == "import os\ndef f(x):\n    return x - 1\n\nprint(f(1))\n"
    assert changed_lines(DIFF) == "return x + 1 => return x - 1"


def test_a_diff_whose_file_changed_is_stale_and_writes_nothing(tmp_path: Path) -> None:
    body = "import os\ndef f(x):\n    return x + 2\n\n"
    path = _module(tmp_path, body)
    with pytest.raises(StaleDiff, match=r"does not match python/pkg/mod.py at line 3"):
        apply_diff(DIFF, tmp_path)
    assert path.read_text() == body
    with pytest.raises(StaleDiff):  # before any test runs
        caught(DIFF, tmp_path, ["no-such-test-file.py"], timeout=5)
    assert path.read_text() == body
