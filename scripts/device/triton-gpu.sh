#!/usr/bin/env bash
# On the GPU machine (device tool, carry [".device"], after scripts/device/build-portable.sh and
# scripts/device/triton-bundle.sh here): serves one ONNX model compiled for CUDA through the sinter
# Triton backend with KIND_GPU instances and measures it with bench/triton_load.py over the binary
# HTTP protocol built from the standard library (no tritonclient there), every response checked
# against onnxruntime. Arguments go to the script, e.g.
#   scripts/device/triton-gpu.sh --model /tmp/resnet50.onnx --compile-flag=--precision \
#       --compile-flag=fp16 --rtol 2e-2 --instances 2 --requests 2000
# Results: $OUT/triton_load.json and the table on stdout.
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${OUT:-$root/out/triton}"
mkdir -p "$out"
source "$root/scripts/device/env.sh"
if [[ ! -f "$root/.device/triton.tar.xz" ]]; then
  echo "triton-gpu.sh: .device/triton.tar.xz is missing: run scripts/device/triton-bundle.sh first" >&2
  exit 1
fi
tar -C "$work" -xJf "$root/.device/triton.tar.xz"
timeout --kill-after=10 570 python3 "$root/bench/triton_load.py" --target cuda --kind KIND_GPU \
  --protocol raw-http --sinter "$bin/sinter" --tritonserver "$work/triton/pytriton/tritonserver/bin/tritonserver" \
  --backend-dir "$work/triton/backends" --json "$out/triton_load.json" "$@"
