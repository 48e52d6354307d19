# shellcheck shell=bash
# Sourced by the run scripts (gpu_run.sh, cpu_run.sh, cpu_isa_ab.sh, hub2wheel_run.sh): everything a run writes goes
# into one archive, $RESULTS_DIR/results.tgz, where RESULTS_DIR is the folder given in $OUT (default /tmp/out). A
# script writes its files into a fresh work folder, which becomes its $OUT, and calls `pack` after each step, so the
# archive holds every file written so far, also when the run is cut at a time limit; a host's job runner that
# returns only a few files from its output folder returns them all this way. Unpack with
# `tar -xzf results.tgz -C DIR`; the *.record.json files in it follow benchmarks/result.schema.json.
RESULTS_DIR=${OUT:-/tmp/out}
mkdir -p "$RESULTS_DIR"
OUT=$(mktemp -d /tmp/bench-results.XXXXXX)
pack() {  # write beside, then rename: a run cut mid-pack still has the last whole archive
  tar -czf "$RESULTS_DIR/.results.tgz" -C "$OUT" . && mv -f "$RESULTS_DIR/.results.tgz" "$RESULTS_DIR/results.tgz"
}
trap pack EXIT
