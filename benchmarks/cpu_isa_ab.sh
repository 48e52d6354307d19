#!/usr/bin/env bash
# The float32 dispatch question (benchmarks/NOTES.md, C8) on a host's CPU: the op's 4K float32 rows, 1 thread and
# all, on the default path (the widest the CPU has: AVX-512 on the Xeons) and with IMG2GRAY_CPU_ISA=avx2, alternated
# ROUNDS times in one run so that a host whose memory speed drifts hits both alike. Run from the repository root:
#   bash benchmarks/cpu_isa_ab.sh [DIR] [ROUNDS]        (defaults: dist/k-cpu 3)
# DIR/*.whl: the stable-ABI wheel as `make wheel` built it; DIR/COMMIT (optional) the commit it was built from.
# Results in $OUT/results.tgz: f32-<round>-<isa>.json and .txt, and isa.record.json (benchmarks/result.schema.json).
set -uo pipefail
DIR=${1:-dist/k-cpu}
ROUNDS=${2:-3}
# shellcheck source=benchmarks/results_archive.sh
source "$(dirname "$0")/results_archive.sh"  # $OUT: a work folder, packed into results.tgz
if [ -z "${BENCH_COMMIT:-}" ] && [ -f "$DIR/COMMIT" ]; then BENCH_COMMIT=$(tr -d '[:space:]' < "$DIR/COMMIT"); fi
export BENCH_COMMIT
SITE=/tmp/site-isa
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-index --no-compile --target "$SITE" "$DIR"/*.whl || exit 1
{
  lscpu | grep -E "Model name|^CPU\(s\)|L3"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
  echo "transparent huge pages: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)"
  python3 -c "import cv2, torch; print('torch', torch.__version__, 'opencv', cv2.__version__)"
} | tee "$OUT/host.txt"
rm -f /tmp/f32-*-*.record.json
for round in $(seq 1 "$ROUNDS"); do
  for isa in default avx2; do
    echo "== round $round, $isa, $(date -u +%T)"
    if [ "$isa" = avx2 ]; then export IMG2GRAY_CPU_ISA=avx2; else unset IMG2GRAY_CPU_ISA; fi
    PYTHONPATH=$SITE timeout 90 python3 benchmarks/bench_cpu.py --dtype float32 --size 3840x2160 \
      --json "$OUT/f32-$round-$isa.json" --record "/tmp/f32-$round-$isa.record.json" > "$OUT/f32-$round-$isa.txt" 2>&1
    grep -E "^\| 3840x2160" "$OUT/f32-$round-$isa.txt"
    pack
  done
done
python3 benchmarks/record.py merge "$OUT/isa.record.json" /tmp/f32-*-*.record.json  # one file, a record per run
