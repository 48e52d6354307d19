#!/usr/bin/env bash
# One device call: install the carried cp39-abi3 wheel (built here against the device's torch), then the
# sanity check, the CUDA tests, compute-sanitizer on odd shapes, and the benchmark. Usage (device tool):
#   run(command="bash benchmarks/gpu_run.sh build/gpu", carry=["build/gpu"])
set -uo pipefail
WHEELS=${1:-build/gpu}
OUT=${OUT:-/tmp/out}
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-index --no-compile --target /tmp/site "$WHEELS"/*.whl || exit 1
export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
python3 -m img2gray samples/chelsea.png "$OUT/chelsea-gray.png" 2>&1 | tee "$OUT/sanity.txt"
python3 -m pytest -q -p no:cacheprovider tests/test_ops.py tests/test_ops_cuda.py -x 2>&1 | tail -25 | tee "$OUT/pytest.txt"
compute-sanitizer --tool memcheck --print-limit 20 python3 benchmarks/sanitize_shapes.py 2>&1 | tail -6 | tee "$OUT/memcheck.txt"
python3 benchmarks/bench_img2gray.py --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.txt"
