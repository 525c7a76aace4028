#!/usr/bin/env bash
# The main job on a bundled model: set up, build, then compile models/tiny_cnn.onnx (for the GPU
# when one is present, else for the CPU), run it on a fixed input and show its outputs, next to
# the reference evaluator's.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
sinter="${SINTER_BUILD_DIR:-$root/build}/bin/sinter"
python="$root/.venv/bin/python"
model="$root/models/tiny_cnn.onnx"
out="$(mktemp -d)"
target=cpu
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  target=cuda
fi
"$sinter" inspect "$model"
"$python" "$root/models/make_input.py" "$model" "$out/input.npy"
"$sinter" compile "$model" -o "$out/tiny_cnn.so" --target "$target"
"$sinter" run "$out/tiny_cnn.so" "$out/input.npy" -o "$out/outputs.npz"
echo "== sinter ($target) =="
"$python" "$root/models/show_npz.py" "$out/outputs.npz"
"$sinter" run "$model" --reference "$out/input.npy" -o "$out/reference.npz"
echo "== reference evaluator =="
"$python" "$root/models/show_npz.py" "$out/reference.npz"
