#!/usr/bin/env bash
# One device call for the CPU kernel (issue K), on the lent H200 machine's host CPU. Usage (device tool):
#   run(command="bash benchmarks/cpu_run.sh dist/k-cpu", carry=["dist/k-cpu"], timeout_s=360)
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
  python3 -c "import cv2, numpy, PIL, torch; print('opencv', cv2.__version__, 'torch', torch.__version__,
              'numpy', numpy.__version__, 'pillow', PIL.__version__)"
  "$DIR"/harness check
} > "$OUT/host.txt" 2>&1
grep -E "Model name|^CPU\(s\)|L3|opencv|all paths|FAILED" "$OUT/host.txt"
PYTHONPATH=$SITE timeout 150 python3 benchmarks/bench_cpu.py --json "$OUT/cpu.json" 2>&1 | tee "$OUT/bench-cpu.txt"
timeout 50 python3 -m pytest -q -p no:cacheprovider --img2gray-site "$SITE" tests/test_ops_cpu.py 2>&1 | tail -3 \
  | tee "$OUT/pytest-cpu.txt"
# The streaming threshold on 1 thread and on all cores: never and always (the run above has the default, 256 KiB
# per thread).
for threads in 1 "$(nproc)"; do
  for setting in never:1099511627776 always:0; do
    IMG2GRAY_CPU_STREAM_BYTES=${setting#*:} PYTHONPATH=$SITE timeout 60 python3 benchmarks/bench_cpu.py \
      --threads "$threads" --json "$OUT/cpu-stream-${setting%%:*}-$threads.json" 2>&1 | tail -4
  done
done
timeout 40 "$DIR"/harness bench > "$OUT/harness-bench.txt" 2>&1
