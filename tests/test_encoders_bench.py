"""The encoder benchmarks run once, small, on the shipped static router: they work and write their JSON."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
STATIC = REPO / "python" / "jeirt_lite" / "default_router"  # the shipped router is the static one

pytestmark = pytest.mark.skipif(not (STATIC / "router.json").is_file(), reason="no static router shipped")


@pytest.fixture(scope="module")
def routers(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("variants")
    shutil.copytree(STATIC, folder / "static")
    return folder


def test_pareto_bench_scores_the_static_router(routers: Path, tmp_path: Path) -> None:
    out = tmp_path / "pareto.json"
    command = [sys.executable, str(REPO / "benches" / "pareto_encoders.py"), "--routers", str(routers)]
    command += [
        "--variants",
        "static",
        "--static-lengths",
        "64,512",
        "--max-questions",
        "30",
        "--out",
        str(out),
    ]
    subprocess.run(command, cwd=REPO, check=True, capture_output=True)
    rows = json.loads(out.read_text())["rows"]
    assert [row["max_length"] for row in rows] == [64, 512]
    for row in rows:
        assert 0.5 < row["test_auc"] <= 1.0
        assert row["questions_per_s"] > 0 and row["peak_rss_mb"] > 0
        assert 10 < row["artifact_mb"] < 30


@pytest.mark.skipif(importlib.util.find_spec("sentence_transformers") is None, reason="needs the train extra")
def test_encoder_bench_compares_with_sentence_transformers(routers: Path, tmp_path: Path) -> None:
    out = tmp_path / "encoders.json"
    command = [sys.executable, str(REPO / "benches" / "bench_encoders.py"), "--routers", str(routers)]
    command += ["--texts", "6", "--rounds", "1", "--out", str(out)]
    subprocess.run(command, cwd=REPO, check=True, capture_output=True)
    result = json.loads(out.read_text())
    engines = [row["engine"] for row in result["throughput"]]
    assert engines[0].startswith("sentence-transformers") and any(e.startswith("static") for e in engines)
    assert -1.0 <= result["agreement"]["static"]["spearman_of_pair_cosines_vs_minilm"] <= 1.0
