#!/usr/bin/env bash
# Single contractions against torch at fp32, fp16 and bf16 (bench/gpu_contraction_rate.py), run on
# the GPU machine through the device tool with carry [".device"] after
# scripts/device/build-portable.sh. Extra arguments go to the script (e.g. --cases 'b32'
# --precisions fp16 bf16 --budget 300). Results: $OUT/contraction.json, contraction.log; table last.
# CONTRACTION_WORK=DIR keeps the models and artifacts there (e.g. to profile one afterwards).
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${OUT:-$root/out/contraction}"
mkdir -p "$out"
source "$root/scripts/device/env.sh"
timeout --kill-after=10 570 python3 "$root/bench/gpu_contraction_rate.py" --bin "$bin" --out "$out" \
  --work "${CONTRACTION_WORK:-$work/contraction}" "$@"
status=$?
[[ $status -eq 124 || $status -eq 137 ]] && echo "contraction: stopped by the hard time limit; see $out/contraction.json" >&2
exit $status
