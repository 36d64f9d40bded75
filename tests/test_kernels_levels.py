"""The AVX2 and portable code paths, run on this CPU by capping the SIMD level with ``JEIRT_SIMD`` in a child
process: the same answers as the best level here (what a CPU without AVX-512 or AVX-512 BF16 computes)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from jeirt_lite import _core, kernels

CHILD = """
import sys
import numpy as np
from jeirt_lite import _core, kernels
data = np.load(sys.argv[1])
q, m, scale, bias = data["q"], data["m"], data["scale"], data["bias"]
idx, top = kernels.top_k(q, m, 3, scale=scale, bias=bias, precision="bfloat16")
np.savez(
    sys.argv[2],
    level=_core.simd_level(),
    bf16=_core.bf16_supported(),
    probabilities=kernels.probabilities(q, m, scale=scale, bias=bias, precision="bfloat16"),
    idx=idx,
    top=top,
    top1=kernels.top_k(q, m, 1)[0],
)
"""

ORDER = ["portable", "avx2+fma", "avx512f"]


@pytest.mark.parametrize("level", ["avx2+fma", "portable"])
def test_capped_level_gives_the_same_answers(level: str, tmp_path: Path) -> None:
    if ORDER.index(level) > ORDER.index(_core.simd_level()):
        pytest.skip(f"this CPU's best level is {_core.simd_level()}")
    rng = np.random.default_rng(17)
    q = (rng.normal(size=(700, 70)) / 8).astype(np.float32)
    q[3] = 0.0
    m = (rng.normal(size=(45, 70)) / 8).astype(np.float32)
    scale, bias = rng.uniform(0.5, 2.0, 45).astype(np.float32), rng.normal(size=45).astype(np.float32)
    np.savez(tmp_path / "in.npz", q=q, m=m, scale=scale, bias=bias)
    env = {**os.environ, "JEIRT_SIMD": level}
    subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path / "in.npz"), str(tmp_path / "out.npz")],
        env=env,
        check=True,
        timeout=300,
    )
    out = np.load(tmp_path / "out.npz")
    assert str(out["level"]) == level
    assert not bool(out["bf16"])  # below avx512f the bfloat16 pass is off: precision falls back to float32
    p = kernels.probabilities(q, m, scale=scale, bias=bias)
    np.testing.assert_allclose(out["probabilities"], p, atol=1e-6)
    idx, top = kernels.top_k(q, m, 3, scale=scale, bias=bias)
    exact = np.take_along_axis(p, idx.astype(np.int64), axis=1)
    np.testing.assert_allclose(top, exact, atol=1e-6)
    assert np.mean(out["idx"] == idx) >= 0.999  # only float32 rounding differs between levels
    assert np.mean(out["top1"][:, 0] == kernels.top_k(q, m, 1)[0][:, 0]) >= 0.999


def _cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        pytest.skip("no /proc/cpuinfo to compare with")
    line = next((line for line in text.splitlines() if line.startswith("flags")), None)
    if line is None:
        pytest.skip("/proc/cpuinfo names no flags")
    return set(line.split(":", 1)[1].split())


def test_the_bfloat16_pass_is_on_exactly_where_the_cpu_says_it_has_avx512_bf16() -> None:
    # Were it off on a CPU that has it, test_kernels_bf16.py would skip rather than fail.
    if os.environ.get("JEIRT_SIMD"):
        pytest.skip("JEIRT_SIMD caps the level in this process")
    flags = _cpu_flags()
    assert kernels.bf16_supported() == ("avx512_bf16" in flags and "avx512f" in flags)
    assert (_core.simd_level() == "avx512f") == ("avx512f" in flags)
    f32_peak, bf16_peak = _core.multiply_add_peak(0.01)  # what benches/bench_kernels.py compares with
    assert np.isfinite(f32_peak) and f32_peak > 0
    assert (bf16_peak is None) != kernels.bf16_supported()
    assert bf16_peak is None or (np.isfinite(bf16_peak) and bf16_peak > 0)
