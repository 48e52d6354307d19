#!/usr/bin/env bash
# hub2wheel against `kernels to-wheel` (benchmarks/bench_hub2wheel.py) on a many-core host, with olah as 8 processes,
# so the cold phase is not held to one olah process's ~20-27 MB/s. Run from the repository root there:
#   bash benchmarks/hub2wheel_run.sh [BENCH_HUB2WHEEL_ARGS...]
# The arguments are added to every bench_hub2wheel.py run (a dry run: `--variants 2 --cases random-8MiB`); ONLY=NAME
# runs one of the runs below alone. For a host that reaches no package index, .whl/bench/ holds Python 3.12 wheels
# made on the build machine (`pip download --only-binary=:all: --python-version 3.12 --platform
# manylinux_2_28_x86_64 --platform manylinux2014_x86_64 --platform any -d DIR`): olah/ (olah==0.5.4) and kernels/
# (kernels==0.11.3 and wheel), from which the benchmark's helper venvs install (tests/helpers/venvs.py, through
# PIP_FIND_LINKS), and tools/ (what hub2wheel and the benchmark's repo builder import: huggingface_hub==2.4.0,
# kernels==0.17.2, auditwheel, pyelftools, rich, packaging, wheel, with their dependencies), put on PYTHONPATH.
# Most important first: each run has its own time limit, and $OUT/results.tgz (benchmarks/results_archive.sh) holds
# every run done when the whole is cut; <run>.record.json in it are records (benchmarks/result.schema.json).
set -uo pipefail
W=$PWD/.whl/bench
# shellcheck source=benchmarks/results_archive.sh
source "$(dirname "$0")/results_archive.sh"  # $OUT: a work folder, packed into results.tgz
export PYTHONUNBUFFERED=1 PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_FIND_LINKS="$W/olah $W/kernels"
python3 -m pip install -q --no-deps --upgrade --target /tmp/tools-site "$W"/tools/*.whl || exit 1
export PYTHONPATH=/tmp/tools-site
{
  lscpu | grep -E "Model name|^CPU\(s\)"
  python3 -c "import sys, huggingface_hub; print('python', sys.version.split()[0], 'huggingface_hub', huggingface_hub.__version__)"
} 2>&1 | tee "$OUT/host.txt"

EXTRA=("$@")
bench() {  # $1: name of the result files, then bench_hub2wheel.py's arguments; ONLY=NAME runs that one alone
  local name=$1; shift
  [ -n "${ONLY:-}" ] && [ "$ONLY" != "$name" ] && return
  # One raw JSON and one record a run, and one log (stderr, then the table) for all.
  timeout "$LIMIT" python3 benchmarks/bench_hub2wheel.py --json "$OUT/$name.json" --record "$OUT/$name.record.json" \
    "$@" "${EXTRA[@]}" > "/tmp/$name.md" 2> "/tmp/$name.log"
  local rc=$?
  { echo "== $name (exit $rc)"; cat "/tmp/$name.log" "/tmp/$name.md"; } >> "$OUT/bench.log"
  echo "== $name (exit $rc)"; cat "/tmp/$name.md"; grep -E "exit [1-9]" "/tmp/$name.log" | head -5
  pack
}
# One case a run (a case that fails to build, e.g. no libtorch_cuda_linalg.so there, costs only its own rows).
# Time limits from a 16-core Xeon host's rows (b8124d0, benchmarks/results/h100.json) plus building each repo:
# 8 MiB ~40 s, real ~140 s, 64 MiB ~165 s, one olah process ~45 s.
LIMIT=70 bench hub2wheel-host-8mib --olah-workers 8 --cases random-8MiB
LIMIT=180 bench hub2wheel-host-real --olah-workers 8 --cases real
LIMIT=${LIMIT_64MIB:-200} bench hub2wheel-host-64mib --olah-workers 8 --cases random-64MiB
LIMIT=70 bench hub2wheel-host-8mib-1worker --olah-workers 1 --cases random-8MiB
env -u PYTHONPATH .venv-kernels/bin/python -c "import huggingface_hub; print('to-wheel venv: huggingface_hub', \
  huggingface_hub.__version__)" 2>&1 | tee -a "$OUT/host.txt"
