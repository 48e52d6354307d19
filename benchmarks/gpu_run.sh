#!/usr/bin/env bash
# One device call for both builds of the op. Usage (device tool):
#   run(command="bash benchmarks/gpu_run.sh dist/gpu tests", carry=["dist/gpu"]), then the same with "bench"
#   (two calls: each device command may run 10 minutes at most).
# dist/gpu/classic/*.whl: the classic wheel built here against the device's torch (2.11);
# dist/gpu/stable/*.whl: the stable-ABI wheel exactly as `make wheel` built it here against torch 2.14.1;
# dist/gpu/variants/: tools.build_variants output (torch211 classic, stable), loaded the way `kernels` loads them.
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
PYTHONPATH=/tmp/site-classic python3 - "$GPU"/variants/* <<'PY' 2>&1 | tee "$OUT/variants.txt"
# Each Hub variant imported under its metadata id (as kernels' importer does), checked against the classic wheel.
import importlib.util, json, sys, torch, img2gray
from pathlib import Path
for folder in map(Path, sys.argv[1:]):
    meta = json.loads((folder / "metadata.json").read_text())
    if meta["id"] in sys.modules:  # same build id as a variant already loaded: Python would hand back that one
        print(f"{folder.name}: skipped, its id {meta['id']} is already loaded (one process, one build per id)")
        continue
    spec = importlib.util.spec_from_file_location(meta["id"], folder / "__init__.py")
    try:
        module = importlib.util.module_from_spec(spec); sys.modules[meta["id"]] = module; spec.loader.exec_module(module)
    except Exception as exc:  # torch214 variant: expected to fail under torch 2.11
        print(f"{folder.name}: does not load under torch {torch.__version__}: {type(exc).__name__}: {str(exc)[:160]}")
        continue
    ok = True
    for dtype in (torch.uint8, torch.float32, torch.float16, torch.bfloat16):
        x = (torch.randint(0, 256, (3, 257, 1031, 3), dtype=dtype, device="cuda") if dtype == torch.uint8
             else torch.rand(3, 257, 1031, 3, device="cuda").to(dtype))
        ok &= torch.equal(module.img2gray(x), img2gray.img2gray(x)) and torch.equal(module.img2gray(x.cpu()), img2gray.img2gray(x.cpu()))
    print(f"{folder.name}: ops {meta['id']}, same results as the classic wheel on cuda and cpu: {ok}")
PY
fi
[ "$PHASE" = tests ] && exit 0
PYTHONPATH=/tmp/site-classic python3 benchmarks/bench_img2gray.py --also "$GPU"/variants/torch-stable-abi210-cu130-x86_64-linux \
  --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.txt"
