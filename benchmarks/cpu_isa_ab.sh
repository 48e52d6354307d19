#!/usr/bin/env bash
# One device call for the float32 dispatch question (benchmarks/NOTES.md, "Session 12"): the op's 4K float32 rows,
# 1 thread and all, on the default path (AVX-512 on the Xeon hosts) and with IMG2GRAY_CPU_ISA=avx2, alternated
# ROUNDS times in one call so that a host whose memory speed drifts hits both alike. Usage (device tool):
#   run(command="bash benchmarks/cpu_isa_ab.sh dist/k-cpu 3", carry=["dist/k-cpu"], timeout_s=590)
# dist/k-cpu/*.whl: the stable-ABI wheel as `make wheel` built it here; results in results.tgz: f32-<round>-<isa>.json.
set -uo pipefail
DIR=${1:-dist/k-cpu}
ROUNDS=${2:-3}
# shellcheck source=benchmarks/device_out.sh
source "$(dirname "$0")/device_out.sh"  # $OUT: a work folder, packed into results.tgz
SITE=/tmp/site-isa
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-index --no-compile --target "$SITE" "$DIR"/*.whl || exit 1
{
  lscpu | grep -E "Model name|^CPU\(s\)|L3"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
  echo "transparent huge pages: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)"
  python3 -c "import cv2, torch; print('torch', torch.__version__, 'opencv', cv2.__version__)"
} | tee "$OUT/host.txt"
for round in $(seq 1 "$ROUNDS"); do
  for isa in default avx2; do
    echo "== round $round, $isa, $(date -u +%T)"
    if [ "$isa" = avx2 ]; then export IMG2GRAY_CPU_ISA=avx2; else unset IMG2GRAY_CPU_ISA; fi
    PYTHONPATH=$SITE timeout 90 python3 benchmarks/bench_cpu.py --dtype float32 --size 3840x2160 \
      --json "$OUT/f32-$round-$isa.json" > "$OUT/f32-$round-$isa.txt" 2>&1
    grep -E "^\| 3840x2160" "$OUT/f32-$round-$isa.txt"
    pack
  done
done
