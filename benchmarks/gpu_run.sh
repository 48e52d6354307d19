#!/usr/bin/env bash
# Both builds of the op on a CUDA host: tests, compute-sanitizer, benchmarks. Run from the repository root there:
#   bash benchmarks/gpu_run.sh [DIR] [PHASES]        (defaults: dist/gpu stable,bench,classic)
# with the tree, DIR and .whl/npp13.tar.xz copied onto the host. DIR (made on the build machine):
#   DIR/stable/*.whl: the stable-ABI wheel exactly as `make wheel` built it (against torch 2.14.1); the classic build is
#     compiled on the host, against the host's torch, with CMake through `pip wheel --no-build-isolation` (a classic
#     binary only loads under the torch minor it was built for);
#   DIR/COMMIT (optional): the commit the wheel was built from (`git rev-parse --short HEAD > DIR/COMMIT`), written
#     into every record as its commit ($BENCH_COMMIT wins; a copy of the tree without .git has no other way to know);
#   DIR/variants/ (optional): tools.cli.build_variants output, loaded the way `kernels` loads them;
#   DIR/ab/<name>/*.whl (optional): other wheels for the ab phases, e.g. the previous commit's;
#   DIR/classic-base.tar.gz (optional): `git archive --format=tar.gz` of a base commit, for abclassic.
# .whl/npp13.tar.xz: libnppc.so.13 + libnppicc.so.13 from the nvidia-npp 13.2 wheel (the benchmark's NPP peer), made
# with `pip download --no-deps --only-binary=:all: nvidia-npp==13.2.0.58`, `unzip -j` of the two nvidia/cu13/lib/
# files, `tar -cJf .whl/npp13.tar.xz libnppc.so.13 libnppicc.so.13` (7 MB, against 261 MB for the wheel).
# PHASES, comma-separated, run in order: stable / classic (that build's op and CUDA tests, compute-sanitizer
# memcheck; the classic build starts compiling in the background at once), bench (bench_img2gray.py with BENCH_ARGS,
# e.g. BENCH_ARGS="--sections host,small"), variants, launch (benchmarks/launch_cost.cu: one kernel launch from plain
# C++, the floor under a small frame; into gpu.txt), ab (the small-frame and per-call rows AB_ROUNDS times (2),
# alternating each DIR/ab/<name>/*.whl with the stable wheel: host-path changes against their baseline in one run;
# ab.txt, ab.json), abclassic (the same rounds with the classic build compiled here beside the ab wheels, if any: what
# the stable ABI's host path costs; ab-classic.json; with DIR/classic-base.tar.gz that commit's classic build too, as
# classicbase: a C++ change to the classic build against its base). Both end with benchmarks/ab_summary.py's table.
# Results: every file lands in $OUT/results.tgz (benchmarks/results_archive.sh); bench.record.json, ab.record.json and
# ab-classic.record.json in it are records (benchmarks/result.schema.json) for benchmarks/results/<class>.json.
set -uo pipefail
GPU=${1:-dist/gpu}
PHASE=${2:-stable,bench,classic}
[ "$PHASE" = all ] && PHASE=stable,bench,classic
# shellcheck source=benchmarks/results_archive.sh
source "$(dirname "$0")/results_archive.sh"  # $OUT: a work folder, packed into results.tgz
export PYTHONUNBUFFERED=1
if [ -z "${BENCH_COMMIT:-}" ] && [ -f "$GPU/COMMIT" ]; then BENCH_COMMIT=$(tr -d '[:space:]' < "$GPU/COMMIT"); fi
export BENCH_COMMIT  # the commit every record names (benchmarks/record.py falls back to git, then "unknown")
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" | tee -a "$OUT/gpu.txt"
sha256sum "$GPU"/stable/*.whl | tee -a "$OUT/gpu.txt"
python3 -m pip install -q --no-deps --no-index --no-compile --target /tmp/site-stable "$GPU"/stable/*.whl || exit 1
npp_facts=()  # for the records: which NPP the rows compare with
if [ -f .whl/npp13.tar.xz ]; then
  mkdir -p /tmp/npp && tar -xJf .whl/npp13.tar.xz -C /tmp/npp && export IMG2GRAY_NPP_DIR=/tmp/npp \
    && npp_facts=(--other "npp=13.2 (.whl/npp13.tar.xz)")
fi
test_build() {  # $1: stable or classic, $2: its site folder; everything into $OUT/tests-$1.txt
  PYTHONPATH=$2 python3 -m img2gray samples/chelsea.png "/tmp/chelsea-gray-$1.png" 2>&1 | tail -3 | tee "$OUT/tests-$1.txt"
  python3 -m pytest -q -p no:cacheprovider --img2gray-site "$2" tests/test_ops.py tests/test_ops_cuda.py tests/test_main.py 2>&1 \
    | tee -a "$OUT/tests-$1.txt" | grep -E "^(FAILED|ERROR)|passed|failed|Fatal" | tail -12
  if grep -q "Fatal Python error" "$OUT/tests-$1.txt"; then  # where it crashed, for the notes
    cuda-gdb -batch -ex run -ex bt --args python3 -c "import sys; sys.path.insert(0, '$2'); import torch, img2gray
img2gray.img2gray(torch.zeros(4, 4, 4, dtype=torch.uint8))" 2>&1 | grep -E "^#|signal|Error" | head -30 | tee -a "$OUT/tests-$1.txt"
  fi
  PYTHONPATH=$2 compute-sanitizer --tool memcheck --print-limit 20 python3 benchmarks/sanitize_shapes.py 2>&1 \
    | tail -4 | tee -a "$OUT/tests-$1.txt"
}
build_classic() {  # $1: sources, $2: work folder (wheel in $2/whl, installed in $2/site). The real build, CMake
  # through pip as `make wheel` runs it (not repaired: tested, not shipped)
  (cd "$1" && IMG2GRAY_ABI=classic TORCH_CUDA_ARCH_LIST=9.0 timeout 300 python3 -m pip wheel -q --no-build-isolation \
    --no-deps -w "$2/whl" .) && python3 -m pip install -q --no-deps --no-index --target "$2/site" "$2"/whl/*.whl \
    && echo "classic wheel built with CMake: $(ls "$2/whl")"
}
classic_built() {  # waits for the background classic build once; its exit status, then and later
  [ -n "${BUILD_RC:-}" ] || { wait "$BUILD"; BUILD_RC=$?; }
  return "$BUILD_RC"
}
ab_rounds() {  # $1: a name for the JSON file; then name=site pairs; AB_ROUNDS rounds (2), each pair then stable
  local json=$1 round pair name site
  shift
  rm -f /tmp/ab-*.json
  for round in $(seq "${AB_ROUNDS:-2}"); do for pair in "$@" stable=/tmp/site-stable; do
    name=${pair%%=*} site=${pair#*=}
    echo "== $name, round $round" | tee -a "$OUT/ab.txt"
    PYTHONPATH=$site timeout 150 python3 benchmarks/bench_img2gray.py --sections host,small \
      --json "/tmp/ab-$name-$round.json" 2>&1 | grep -E "^\| (8x8|1920|1280)|failed" | tee -a "$OUT/ab.txt"
  done; done
  python3 -c "import json, sys; json.dump({f: json.load(open(f)) for f in sys.argv[1:]}, open('$OUT/$json.json', 'w'))" \
    /tmp/ab-*.json
  python3 benchmarks/ab_summary.py "$OUT/$json.json" | tee -a "$OUT/ab.txt"
  python3 benchmarks/record.py convert ab "$OUT/$json.json" -o "$OUT/$json.record.json" \
    --command "AB_ROUNDS=${AB_ROUNDS:-2} bash benchmarks/gpu_run.sh $GPU $PHASE" \
    "${record_builds[@]}" "${npp_facts[@]}" 2>&1 | tee -a "$OUT/ab.txt"
}
case ",$PHASE," in *,classic,*|*,abclassic,*)
  build_classic . /tmp/classic > "$OUT/build-classic.txt" 2>&1 &
  BUILD=$! ;;
esac
classic_pairs=(classic=/tmp/classic/site)  # abclassic's builds: this tree's, and the base's if one came
if [ -f "$GPU/classic-base.tar.gz" ] && [[ ",$PHASE," == *,abclassic,* ]]; then
  mkdir -p /tmp/classic-base/src && tar -xzf "$GPU/classic-base.tar.gz" -C /tmp/classic-base/src
  build_classic /tmp/classic-base/src /tmp/classic-base > "$OUT/build-classic-base.txt" 2>&1 &
  BASE_BUILD=$!
fi
stable_wheels=("$GPU"/stable/*.whl)
record_builds=(--build "stable=the stable-ABI wheel ${stable_wheels[0]##*/}"
  --build "classic=the classic build of this tree, compiled here")  # what each build name in a record means
ab_pairs=()  # name=site for each DIR/ab/<name>/*.whl
for dir in "$GPU"/ab/*/; do
  [ -d "$dir" ] || continue
  name=$(basename "$dir")
  python3 -m pip install -q --no-deps --no-index --no-compile --target "/tmp/site-$name" "$dir"*.whl \
    && ab_pairs+=("$name=/tmp/site-$name") && wheels=("$dir"*.whl) \
    && record_builds+=(--build "$name=the wheel ${wheels[0]##*/}")
done
for phase in ${PHASE//,/ }; do
  echo "== $phase"
  case $phase in
    stable) timeout 200 bash -c "$(declare -f test_build); OUT=$OUT test_build stable /tmp/site-stable" ;;
    classic)
      if classic_built; then tail -1 "$OUT/build-classic.txt"; timeout 200 bash -c "$(declare -f test_build); OUT=$OUT test_build classic /tmp/classic/site"
      else echo "classic build failed:"; tail -20 "$OUT/build-classic.txt"; fi ;;
    variants)
      PYTHONPATH=/tmp/site-stable python3 benchmarks/check_variants.py "$GPU"/variants/* 2>&1 | tee "$OUT/variants.txt" ;;
    bench)
      read -ra bench_args <<< "${BENCH_ARGS:-}"  # words, e.g. BENCH_ARGS="--sections host,small"
      PYTHONPATH=/tmp/site-stable timeout 300 python3 benchmarks/bench_img2gray.py "${bench_args[@]}" --json "$OUT/bench.json" \
        --record "$OUT/bench.record.json" 2>&1 | tee "$OUT/bench.txt" ;;
    launch)
      nvcc -O2 -arch=sm_90 -std=c++17 benchmarks/launch_cost.cu -o /tmp/launch_cost && /tmp/launch_cost | tee -a "$OUT/gpu.txt" ;;
    ab) ab_rounds ab "${ab_pairs[@]}" ;;
    abclassic)
      if [ -n "${BASE_BUILD:-}" ]; then
        if wait "$BASE_BUILD"; then classic_pairs+=(classicbase=/tmp/classic-base/site)
          record_builds+=(--build "classicbase=the classic build of DIR/classic-base.tar.gz, compiled here")
        else echo "classic base build failed:"; tail -20 "$OUT/build-classic-base.txt"; fi
      fi
      if classic_built; then ab_rounds ab-classic "${classic_pairs[@]}" "${ab_pairs[@]}"
      else echo "classic build failed:"; tail -20 "$OUT/build-classic.txt"; fi ;;
    all) echo "all = stable,bench,classic" ;;
  esac
  pack
done
