"""benches/bench_score.py runs once as a plain test: tiny sizes, the tiny router, no timing asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jeirt_lite
import pytest

REPO = Path(__file__).resolve().parents[1]


def test_bench_score_runs_and_reports(tiny_router_path: Path, tmp_path: Path) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(jeirt_lite.__file__).resolve().parents[1]), env.get("PYTHONPATH", "")]
    )
    report_path = tmp_path / "score.json"
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "benches" / "bench_score.py"),
            "--router",
            str(tiny_router_path),
            "--text-rows",
            "40",
            "60",
            "--vector-rows",
            "100",
            "3000",
            "--chunk-size",
            "256",
            "--threads",
            "1",
            "--output",
            str(report_path),
            "--scratch",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(report_path.read_text())
    assert [run["run"] for run in report["runs"]] == [
        "startup (10 texts)",
        "texts",
        "texts",
        "vectors",
        "vectors",
        "vectors forecast",
    ]
    assert [run["rows"] for run in report["runs"]] == [10, 40, 60, 100, 3000, 3000]
    for run in report["runs"]:
        assert run["peak_rss_mb"] > 0 and run["rows_per_s"] > 0
        assert run["pairs_per_s"] == pytest.approx(run["rows_per_s"] * 5)
    assert (
        report["peak_rss_ratio_vectors_last_over_first"] > 0
        and report["peak_rss_ratio_texts_last_over_first"] > 0
    )
    assert report["router"]["llms"] == 5 and report["settings"]["threads"] == 1
    assert "peak RSS vectors 3,000 rows / 100 rows" in done.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["score.json"]  # generated banks cleaned up
