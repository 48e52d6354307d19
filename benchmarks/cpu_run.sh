#!/usr/bin/env bash
# One device call for the CPU kernel (issue K), on the lent H200 machine's host CPU. Usage (device tool):
#   run(command="bash benchmarks/cpu_run.sh dist/k-cpu", carry=["dist/k-cpu"], timeout_s=590)
# dist/k-cpu/*.whl: the stable-ABI wheel exactly as `make wheel` built it here (wheelhouse/, torch >= 2.10);
# dist/k-cpu/harness: benchmarks/cpu_kernel_harness.cpp built here with -static (see its header; no compiler there).
# Most important first: each step has its own time limit, and what is in $OUT comes back even if the call is cut.
set -uo pipefail
DIR=${1:-dist/k-cpu}
OUT=${OUT:-/tmp/out}
SITE=/tmp/site-cpu
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-index --no-compile --target "$SITE" "$DIR"/*.whl || exit 1
{
  lscpu
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null  # the machine, for RESULTS.md
  python3 -c "import cv2, numpy, PIL, torch; print('opencv', cv2.__version__, 'torch', torch.__version__,
              'numpy', numpy.__version__, 'pillow', PIL.__version__)"
  "$DIR"/harness check
} > "$OUT/host.txt" 2>&1
grep -E "Model name|^CPU\(s\)|L3|opencv|all paths|FAILED" "$OUT/host.txt"
PYTHONPATH=$SITE timeout 220 python3 benchmarks/bench_cpu.py --json "$OUT/cpu.json" 2>&1 | tee "$OUT/bench-cpu.txt"
timeout 50 python3 -m pytest -q -p no:cacheprovider --img2gray-site "$SITE" tests/test_ops_cpu.py 2>&1 | tail -3 \
  | tee "$OUT/pytest-cpu.txt"
# The default tiles (8 a thread) against the static split (0) and a fixed 65536-pixel tile, all cores, each in
# op-alone processes. (The streaming threshold's never/always runs of earlier calls: IMG2GRAY_CPU_STREAM_BYTES=
# 1099511627776 / 0 in front of bench_cpu.py; their results are in RESULTS.md.)
PYTHONPATH=$SITE timeout 200 python3 benchmarks/bench_cpu.py --threads "$(nproc)" --tile-pixels 0 --tile-pixels 65536 \
  --json "$OUT/cpu-tiles.json" 2>&1 | tail -12 | tee "$OUT/bench-cpu-tiles.txt"
timeout 40 "$DIR"/harness bench > "$OUT/harness-bench.txt" 2>&1
