#!/usr/bin/env bash
# The GPU suite, run on the GPU machine through the device tool (docs/gpu-testing.md):
#   here:   scripts/device/build-portable.sh          (packs .device/bin.tar.xz)
#   device: run with carry [".device"] and the command `bash scripts/device/gpu-suite.sh`
# It builds nothing: it unpacks the portable sinter, libsinter_rt.so and run_model, then runs
# test/gpu/run_gpu_suite.py, which writes gpu-suite.log and gpu-suite.json under $OUT and prints
# a table last. Extra arguments go to run_gpu_suite.py (e.g. --skip-torch, --only tiny_cnn).
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${OUT:-$root/out/gpu-suite}"
mkdir -p "$out"
source "$root/scripts/device/env.sh"

# The budget leaves room under the device tool's 10-minute limit; timeout is the hard stop.
timeout --kill-after=10 570 python3 "$root/test/gpu/run_gpu_suite.py" --bin "$bin" --out "$out" \
  --work "$work/suite" --budget 500 "$@"
status=$?
[[ $status -eq 124 || $status -eq 137 ]] && echo "gpu-suite: stopped by the hard time limit; see $out/gpu-suite.json" >&2
exit $status
