#!/usr/bin/env bash
# The main job on a bundled model: set up, build, then import models/tiny_cnn.onnx, run it with
# the reference evaluator on a fixed input and show its outputs.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
sinter="${SINTER_BUILD_DIR:-$root/build}/bin/sinter"
model="$root/models/tiny_cnn.onnx"
out="$(mktemp -d)"
"$sinter" inspect "$model"
"$root/.venv/bin/python" "$root/models/make_input.py" "$model" "$out/input.npy"
"$sinter" run "$model" --reference --input "$out/input.npy" -o "$out/outputs.npz"
"$root/.venv/bin/python" "$root/models/show_npz.py" "$out/outputs.npz"
