#!/usr/bin/env bash
# One device call for both builds of the op. Usage (device tool):
#   run(command="bash benchmarks/gpu_run.sh dist/gpu tests", carry=["dist/gpu"]), then the same with "bench"
#   (two calls: each device command may run 10 minutes at most).
# dist/gpu/classic/*.whl: the classic wheel built here against the device's torch (2.11);
# dist/gpu/stable/*.whl: the stable-ABI wheel exactly as `make wheel` built it here against torch 2.14.1;
# dist/gpu/variants/: tools.cli.build_variants output (torch211 classic, stable), loaded the way `kernels` loads them.
set -uo pipefail
GPU=${1:-dist/gpu}
PHASE=${2:-all}  # tests, bench or all
OUT=${OUT:-/tmp/out}
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
sha256sum "$GPU"/stable/*.whl | tee "$OUT/stable-wheel.sha256"
for abi in classic stable; do
  python3 -m pip install -q --no-deps --no-index --no-compile --target "/tmp/site-$abi" "$GPU"/$abi/*.whl || exit 1
done
if [ "$PHASE" != bench ]; then
for abi in classic stable; do
  PYTHONPATH=/tmp/site-$abi python3 -m img2gray samples/chelsea.png "$OUT/chelsea-gray-$abi.png" 2>&1 | tee "$OUT/sanity-$abi.txt"
  python3 -m pytest -q -p no:cacheprovider --img2gray-site "/tmp/site-$abi" tests/test_ops.py tests/test_ops_cuda.py 2>&1 \
    | tail -6 | tee "$OUT/pytest-$abi.txt"
  PYTHONPATH=/tmp/site-$abi compute-sanitizer --tool memcheck --print-limit 20 python3 benchmarks/sanitize_shapes.py 2>&1 \
    | tail -4 | tee "$OUT/memcheck-$abi.txt"
done
PYTHONPATH=/tmp/site-classic python3 benchmarks/check_variants.py "$GPU"/variants/* 2>&1 | tee "$OUT/variants.txt"
fi
[ "$PHASE" = tests ] && exit 0
PYTHONPATH=/tmp/site-classic python3 benchmarks/bench_img2gray.py --also "$GPU"/variants/torch-stable-abi210-cu130-x86_64-linux \
  --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.txt"
