#!/usr/bin/env bash
# The ONNX node tests on the CUDA target, run on the GPU machine through the device tool with
# carry [".device"]: build-portable.sh packs the binaries, and .device/node-tests.tar.xz holds the
# node-test folders materialised here (so both machines run the very same tests). Extra arguments
# go to test/conformance/run_node_tests.py. Results: $OUT/results-cuda.json.
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${OUT:-$root/out/conformance}"
mkdir -p "$out"
source "$root/scripts/device/env.sh"
tar -C "$work" -xJf "$root/.device/node-tests.tar.xz"
data="$(dirname "$(find "$work" -name complete.json -path '*node*' | head -1)")"
# No address-space limit: the CUDA driver reserves far more virtual memory than the runner's
# default 8 GiB cap, and cuInit fails with CUDA_ERROR_OUT_OF_MEMORY under it.
timeout --kill-after=10 560 python3 "$root/test/conformance/run_node_tests.py" --target cuda \
  --arch sm_90 --sinter "$bin/sinter" --data "$data" --json "$out/results-cuda.json" \
  --memory-limit-mb 0 --jobs "$(nproc)" "$@" > "$out/conformance.log" 2>&1
status=$?
tail -n 40 "$out/conformance.log"
exit $status
