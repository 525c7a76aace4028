#!/usr/bin/env bash
# The serving measurements (bench/serving_h200.py) in one device call, after
# scripts/device/build-portable.sh and scripts/device/triton-bundle.sh here; carry [".device"]:
#   device memory of 1/4/16 BERT-base sessions (weights once), `sinter bench --concurrency 1/4/16`
#   for ResNet-50 and BERT-base fp16 at batch 1 and 8 (batch buckets 1,8 in one artifact when the
#   model exports with a dynamic batch) against torch eager and torch.compile (a CUDA stream per
#   thread), and Triton KIND_GPU at 1/8/32 clients. Every step has a timeout, the run a budget of
#   480 s, and the whole call a hard limit of 530 s, so it ends within 9 minutes; the table is last.
# Arguments go to the script, e.g. --stages bench torch (split the call if the budget skips rows).
# Results: $OUT/serving.json, check_serving.log, triton_*.json.
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${OUT:-$root/out/serving}"
mkdir -p "$out"
source "$root/scripts/device/env.sh"
triton=()
if [[ -f "$root/.device/triton.tar.xz" ]]; then
  tar -C "$work" -xJf "$root/.device/triton.tar.xz"
  triton=(--tritonserver "$work/triton/pytriton/tritonserver/bin/tritonserver"
          --backend-dir "$work/triton/backends")
else
  echo "serving.sh: .device/triton.tar.xz is missing; the triton stage will be skipped" >&2
fi
timeout --kill-after=10 530 python3 "$root/bench/serving_h200.py" --bin "$bin" --out "$out" \
  "${triton[@]}" "$@"
status=$?
[[ $status -eq 124 || $status -eq 137 ]] && echo "serving: stopped by the hard time limit; see $out/serving.json" >&2
exit $status
