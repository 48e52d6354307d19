# shellcheck shell=bash
# Sourced by the device scripts (gpu_run.sh, cpu_run.sh, cpu_isa_ab.sh). The device tool brings back at most 8 files
# from $OUT, and a call that writes more loses the rest (session 13 lost four). So a script writes its raw files into
# a work folder, which becomes its $OUT, and calls `pack` after each step: $OUT/results.tgz (in the tool's $OUT) then
# holds everything written so far, also when the call is cut at its time limit. What the script prints comes back
# in the call's output as before. Unpack with `tar -xzf results.tgz -C DIR`.
DEVICE_OUT=${OUT:-/tmp/out}
OUT=$(mktemp -d /tmp/device-results.XXXXXX)
pack() {  # write beside, then rename: a call cut mid-pack still has the last whole archive
  tar -czf "$DEVICE_OUT/.results.tgz" -C "$OUT" . && mv -f "$DEVICE_OUT/.results.tgz" "$DEVICE_OUT/results.tgz"
}
trap pack EXIT
