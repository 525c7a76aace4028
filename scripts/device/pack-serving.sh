#!/usr/bin/env bash
# Packs what test/gpu/check_serving.py needs on the GPU machine into .device/serving/ (git-ignored):
# libsinter_rt.so from build/ (it needs only glibc) and sm_90 CUDA artifacts of a few models/
# models beside their ONNX files (onnxruntime checks them there). Then, through the device tool:
#   carry:   [".device"]
#   command: python3 test/gpu/check_serving.py --lib .device/serving/libsinter_rt.so \
#              --work .device/serving --out $OUT
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${SINTER_BUILD_DIR:-$root/build}"
out="$root/.device/serving"
rm -rf "$out"
mkdir -p "$out"
cp "$build/lib/libsinter_rt.so" "$out/"
strip "$out/libsinter_rt.so"
compile() { # MODEL [FLAGS...]
  local model="$1"
  shift
  "$build/bin/sinter" compile "$root/models/$model.onnx" --target cuda --arch sm_90 \
    -o "$out/$model.so" -q "$@"
  cp "$root/models/$model.onnx" "$out/"
}
compile tiny_cnn
compile resnet_narrow
compile bert_tiny --dim batch=1 --dim seq=16
du -sh "$out"
