#!/usr/bin/env bash
# Throughput on a many-core machine, in one go: `score` rows/s at 1, 2, 4, 8, 16 threads on 100,000 real texts,
# the kernels against NumPy (GFLOP/s, share of the measured multiply-add peak, float32 and bfloat16), and text ->
# top-1 on one thread against model2vec + NumPy.
#
# Run from a checkout of the repository (the benches read data/mmlu_pro) with jeirt-lite installed from it:
#     pip install . && bash benches/scaling.sh              # threads 1 2 4 8 16
#     bash benches/scaling.sh 1 2 4 8 16 32                 # other thread counts
# Optional peer: pip install model2vec==0.10.0 (else that contestant is skipped with a message).
# Results: printed, and written to bench_results/scaling-*.json. Nothing here asserts a time.
# Sizes (smaller for a smoke run): ROWS=100000 KERNEL_N=1000000 TEXTS=5000 ROUNDS=3.
set -euo pipefail
cd "$(dirname "$0")/.."
threads=$(echo "${*:-1 2 4 8 16}" | tr ' ' ',')
rows=${ROWS:-100000}
kernel_n=${KERNEL_N:-1000000}
texts=${TEXTS:-5000}
rounds=${ROUNDS:-3}
mkdir -p bench_results

# The installed package, not the source folder (python puts benches/, not the repository root, on the path).
python - <<'PY'
import jeirt_lite, os
from jeirt_lite import Router, _core
router = Router.load()
print(f"jeirt_lite from {os.path.dirname(jeirt_lite.__file__)}: {_core.build_profile()} build, "
      f"simd {_core.simd_level()}, bf16 {_core.bf16_supported()}, static fast path {router.fast_path}, "
      f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
if _core.build_profile() != "release" or not router.fast_path:
    raise SystemExit("need a release build whose shipped router has its fast path (pip install .)")
PY

echo "== score: rows/s per thread count ($rounds interleaved rounds) =="
python benches/bench_score_threads.py --rows "$rows" --threads "$threads" --rounds "$rounds" \
    --out bench_results/scaling-score.json
echo "== kernels against NumPy, all cores =="
python benches/bench_kernels.py --n "$kernel_n" --ks 112 1000 --repeats "$rounds" --out bench_results/scaling-kernels.json
echo "== kernels against NumPy, one thread =="
OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 python benches/bench_kernels.py --n $((kernel_n / 5)) --ks 112 --threads 1 \
    --repeats "$rounds" --out bench_results/scaling-kernels-1thread.json
echo "== text -> top-1, one thread, against model2vec + NumPy =="
python benches/bench_static.py --texts "$texts" --rounds "$((rounds + 2))" --out bench_results/scaling-static.json
