"""The kernel benchmark runs once, tiny, as a plain test (its numbers are checked for sanity, not speed)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest
from jeirt_lite import _core

BENCH = Path(__file__).resolve().parents[1] / "benches" / "bench_kernels.py"


def load_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_kernels", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_runs_small_and_writes_json(tmp_path: Path) -> None:
    bench = load_bench()
    out = tmp_path / "kernels.json"
    argv = ["--n", "3000", "--d", "24", "--ks", "5", "40", "--repeats", "1", "--out", str(out)]
    if _core.build_profile() != "release":
        with pytest.raises(SystemExit):
            bench.main(argv)
        return
    bench.main(argv)
    report = json.loads(out.read_text())
    assert report["machine"]["simd_level"] == _core.simd_level()
    rows = report["results"]
    names = ("top_k(k=1)", "mean_probability", "probabilities") + (
        ("top_k(k=1, bfloat16)", "probabilities(bfloat16)") if _core.bf16_supported() else ()
    )
    assert {(r["K"], r["kernel"]) for r in rows} == {(k, name) for k in (5, 40) for name in names}
    assert all(r["fraction_of_fma_peak"] > 0 for r in rows)
    for r in rows:
        assert r["rust_s"] > 0 and r["speedup_vs_reference"] > 0
        # bf16 may pick another LLM at a near-tie; bf16 probabilities carry the rounding of random vectors.
        tolerance = {"top_k(k=1, bfloat16)": 1e-3, "probabilities(bfloat16)": 1e-2}.get(r["kernel"], 1e-4)
        for key in ("max_abs_prob_diff", "max_abs_diff", "max_abs_diff_first_100k_rows"):
            if key in r:
                assert r[key] < tolerance, (key, r)
        if "top1_agreement" in r:
            assert r["top1_agreement"] > 0.99


def test_cpu_time_script_runs_small() -> None:
    spec = importlib.util.spec_from_file_location("kernel_cpu_time", BENCH.parent / "kernel_cpu_time.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for kernel in ("top_k", "probabilities", "mean_probability", "matmul"):
        assert module.main([kernel, "--n", "500", "--d", "8", "--k", "5", "--calls", "2"]) >= 0.0
    assert module.main(["top_k", "--precision", "bfloat16", "--n", "500", "--d", "8", "--k", "5"]) >= 0.0


def test_bf16_accuracy_script_runs_small() -> None:
    spec = importlib.util.spec_from_file_location("bf16_accuracy", BENCH.parent / "bf16_accuracy.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = module.main(["--limit", "200", "--threads", "1"])
    assert {(r["data"], r["calibrated"]) for r in rows} == {
        (data, calibrated) for data in module.DATASETS for calibrated in (True, False)
    }
    for r in rows:
        assert r["questions"] == 200 and r["max_abs_diff"] <= 1e-3 and r["same_top1"] >= 0.99
