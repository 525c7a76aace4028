#!/usr/bin/env bash
# The benchmark against torch (bench/gpu_vs_torch.py), run on the GPU machine through the device
# tool with carry [".device"] after scripts/device/build-portable.sh. Extra arguments go to the
# script (e.g. --batches 1, or --rows bert:1:fp32,fp16 --budget 400). The 16 default rows may not
# fit in one call: split them (--batches 1, then --batches 32); rows the budget skipped are "not
# run" in the JSON. Results: $OUT/bench.json, bench.log; table last.
# BENCH_WORK=DIR keeps the exported models and artifacts there (e.g. to profile one afterwards).
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${OUT:-$root/out/bench}"
mkdir -p "$out"
source "$root/scripts/device/env.sh"
timeout --kill-after=10 570 python3 "$root/bench/gpu_vs_torch.py" --bin "$bin" --out "$out" \
  --work "${BENCH_WORK:-$work/bench}" "$@"
status=$?
[[ $status -eq 124 || $status -eq 137 ]] && echo "bench: stopped by the hard time limit; see $out/bench.json" >&2
exit $status
