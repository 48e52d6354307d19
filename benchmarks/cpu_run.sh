#!/usr/bin/env bash
# The CPU kernel against OpenCV on a host's CPU (any x86-64 Linux host; the CUDA hosts' Xeons are the ones the
# records hold). Run from the repository root there, with the tree and DIR copied onto the host:
#   bash benchmarks/cpu_run.sh [DIR]        (default: dist/k-cpu)
# DIR/*.whl: the stable-ABI wheel exactly as `make wheel` built it (wheelhouse/, torch >= 2.10);
# DIR/harness: benchmarks/cpu_kernel_harness.cpp built with -static on the build machine (see its header; the host
# needs no compiler); DIR/COMMIT (optional): the commit the wheel was built from, for the records ($BENCH_COMMIT wins).
# The host needs python3 with torch, numpy, Pillow and opencv-python-headless. Most important first: each step has
# its own time limit, and $OUT/results.tgz (benchmarks/results_archive.sh) holds every step done when the run is cut;
# cpu.record.json and cpu-float32-avx2.record.json in it are records (benchmarks/result.schema.json).
set -uo pipefail
DIR=${1:-dist/k-cpu}
# shellcheck source=benchmarks/results_archive.sh
source "$(dirname "$0")/results_archive.sh"  # $OUT: a work folder, packed into results.tgz
if [ -z "${BENCH_COMMIT:-}" ] && [ -f "$DIR/COMMIT" ]; then BENCH_COMMIT=$(tr -d '[:space:]' < "$DIR/COMMIT"); fi
export BENCH_COMMIT
SITE=/tmp/site-cpu
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-index --no-compile --target "$SITE" "$DIR"/*.whl || exit 1
{
  lscpu
  echo "transparent huge pages: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null  # the machine's GPU, if any
  python3 -c "import cv2, numpy, PIL, torch; print('opencv', cv2.__version__, 'torch', torch.__version__,
              'numpy', numpy.__version__, 'pillow', PIL.__version__)"
  "$DIR"/harness check
} > "$OUT/host.txt" 2>&1
grep -E "Model name|^CPU\(s\)|L3|transparent|opencv|all paths|FAILED" "$OUT/host.txt"
PYTHONPATH=$SITE timeout 240 python3 benchmarks/bench_cpu.py --json "$OUT/cpu.json" --record "$OUT/cpu.record.json" 2>&1 \
  | tee "$OUT/bench-cpu.txt"
timeout 50 python3 -m pytest -q -p no:cacheprovider --img2gray-site "$SITE" tests/test_ops_cpu.py 2>&1 | tail -3 \
  | tee "$OUT/pytest-cpu.txt"
pack
# The kernels and their memory ceilings on the three kinds of buffers a call meets: huge pages for input and output
# (a numpy caller's out=, OpenCV's dst=), huge input and 4 KiB output (the allocating call on a numpy image), and
# 4 KiB pages for both (torch-allocated tensors). (bench_cpu.py --tile-pixels N and IMG2GRAY_CPU_STREAM_BYTES in front
# of it compare tiles and streaming thresholds; benchmarks/NOTES.md has what they decided.)
for pages in huge mixed small; do
  timeout 60 "$DIR"/harness bench "$pages" > "$OUT/harness-bench-$pages.txt" 2>&1
done
pack
# The op's float32 rows with the AVX2 paths forced (IMG2GRAY_CPU_ISA narrows the load-time choice), against the
# default (AVX-512 on the Xeons) above: the check behind the float32 dispatch (benchmarks/NOTES.md, C8); a dispatch
# rule would come from the op-level rows, not the harness.
IMG2GRAY_CPU_ISA=avx2 PYTHONPATH=$SITE timeout 150 python3 benchmarks/bench_cpu.py --dtype float32 \
  --json "$OUT/cpu-float32-avx2.json" --record "$OUT/cpu-float32-avx2.record.json" > "$OUT/bench-cpu-float32-avx2.txt" 2>&1
