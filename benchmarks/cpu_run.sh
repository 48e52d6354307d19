#!/usr/bin/env bash
# One device call for the CPU kernel (issue K), on the lent H200 machine's host CPU. Usage (device tool):
#   run(command="bash benchmarks/cpu_run.sh dist/k-cpu", carry=["dist/k-cpu"], timeout_s=590)
# dist/k-cpu/*.whl: the stable-ABI wheel exactly as `make wheel` built it here (wheelhouse/, torch >= 2.10);
# dist/k-cpu/harness: benchmarks/cpu_kernel_harness.cpp built here with -static (see its header; no compiler there).
# Most important first: each step has its own time limit, and results.tgz holds every step done when the call is cut.
set -uo pipefail
DIR=${1:-dist/k-cpu}
# shellcheck source=benchmarks/device_out.sh
source "$(dirname "$0")/device_out.sh"  # $OUT: a work folder, packed into results.tgz
SITE=/tmp/site-cpu
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-index --no-compile --target "$SITE" "$DIR"/*.whl || exit 1
{
  lscpu
  echo "transparent huge pages: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null  # the machine, for RESULTS.md
  python3 -c "import cv2, numpy, PIL, torch; print('opencv', cv2.__version__, 'torch', torch.__version__,
              'numpy', numpy.__version__, 'pillow', PIL.__version__)"
  "$DIR"/harness check
} > "$OUT/host.txt" 2>&1
grep -E "Model name|^CPU\(s\)|L3|transparent|opencv|all paths|FAILED" "$OUT/host.txt"
PYTHONPATH=$SITE timeout 240 python3 benchmarks/bench_cpu.py --json "$OUT/cpu.json" 2>&1 | tee "$OUT/bench-cpu.txt"
timeout 50 python3 -m pytest -q -p no:cacheprovider --img2gray-site "$SITE" tests/test_ops_cpu.py 2>&1 | tail -3 \
  | tee "$OUT/pytest-cpu.txt"
pack
# The kernels and their memory ceilings on the three kinds of buffers a call meets: huge pages for input and output
# (a numpy caller's out=, OpenCV's dst=), huge input and 4 KiB output (the allocating call on a numpy image), and
# 4 KiB pages for both (torch-allocated tensors). (Earlier calls also compared tiles, --tile-pixels, and streaming
# thresholds, IMG2GRAY_CPU_STREAM_BYTES in front of bench_cpu.py; their results are in RESULTS.md.)
for pages in huge mixed small; do
  timeout 60 "$DIR"/harness bench "$pages" > "$OUT/harness-bench-$pages.txt" 2>&1
done
pack
# The op's float32 rows with the AVX2 paths forced (IMG2GRAY_CPU_ISA narrows the load-time choice), against the
# default (AVX-512 on that Xeon) above: on 16 threads the harness had AVX2 ahead without streaming (NOTES.md), and
# the 4K float32 cell is the one short of 1.2x OpenCV there. A dispatch rule would come from this, not the harness.
IMG2GRAY_CPU_ISA=avx2 PYTHONPATH=$SITE timeout 150 python3 benchmarks/bench_cpu.py --dtype float32 \
  --json "$OUT/cpu-float32-avx2.json" > "$OUT/bench-cpu-float32-avx2.txt" 2>&1
