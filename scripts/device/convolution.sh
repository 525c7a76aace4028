#!/usr/bin/env bash
# The tensor-core kernels' window gather (lib/codegen/cuda/cuda_mma_staging.cpp) on the GPU
# machine, through the device tool with carry [".device"] after scripts/device/build-portable.sh:
#   1. test/gpu/check_convolution.py: its cases against onnxruntime, on both instruction families;
#   2. bench/gpu_vs_torch.py on the zoo rows whose convolutions gather their windows (eager and
#      reduce-overhead; CONVOLUTION_ROWS overrides the rows), with per-step profiles;
#   3. with .device/baseline.tar.xz (build-portable.sh's bin.tar.xz of the commit before the
#      change, copied there): bench/flag_ablation.py --baseline-sinter on those rows' exports,
#      sinter alone, interleaved rounds.
# Results: $OUT/check_convolution.log, bench.json, bench.log, steps.log, ablation.log; about 8
# minutes.
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${OUT:-$root/out/convolution}"
mkdir -p "$out"
source "$root/scripts/device/env.sh"
export PYTHONUNBUFFERED=1
(cd "$root/test/gpu" && timeout 150 python3 check_convolution.py --bin "$bin" --work "$work/check") 2>&1 |
  grep -v "W:onnxruntime" | tee "$out/check_convolution.log" | tail -4
read -r -a rows <<<"${CONVOLUTION_ROWS:-resnet50:32:fp16 googlenet:32:fp16 densenet121:32:fp16 resnet50:1:fp16}"
timeout --kill-after=10 300 python3 "$root/bench/gpu_vs_torch.py" --bin "$bin" --out "$out" --work "$work/bench" \
  --skip-default --iterations 50 --budget 260 --rows "${rows[@]}" >/dev/null
python3 "$root/bench/gpu_vs_torch.py" --markdown "$out/bench.json"
python3 "$root/bench/gpu_vs_torch.py" --steps "$out/bench.json" >"$out/steps.log" 2>&1
if [[ -f "$root/.device/baseline.tar.xz" ]]; then
  mkdir -p "$work/baseline"
  tar -C "$work/baseline" -xJf "$root/.device/baseline.tar.xz"
  mapfile -t models < <(ls "$work"/bench/*/*.onnx)
  timeout --kill-after=10 120 python3 "$root/bench/flag_ablation.py" --sinter "$bin/sinter" \
    --baseline-sinter "$work/baseline/bin/sinter" --work "$work/ablation" --precisions fp16 --rounds 3 \
    --iterations 50 "${models[@]}" | tee "$out/ablation.log"
fi
# CONVOLUTION_NCU="MODEL-bBATCH KERNEL-REGEX": Nsight Compute's speed-of-light, occupancy, memory
# and warp-state sections for the first launch of each kernel matching the regex in that row's
# fp16 artifact (e.g. "densenet121-b32 fused_cast_conv_relu_0$|_relu_101$").
if [[ -n "${CONVOLUTION_NCU:-}" ]]; then
  read -r folder kernels <<<"$CONVOLUTION_NCU"
  timeout 150 ncu --kernel-name "regex:$kernels" --launch-count 2 --section SpeedOfLight --section Occupancy \
    --section LaunchStats --section MemoryWorkloadAnalysis --section WarpStateStats \
    "$bin/sinter" bench "$work/bench/$folder/model-fp16.so" --no-graphs --warmup 0 --iterations 1 2>&1 |
    tee "$out/ncu.log" | grep -v "^==PROF==" | grep -E "^  [a-z_0-9]+|Duration|Throughput|Registers|Achieved Occupancy|Theoretical Occupancy|Stall|Warp Cycles" | head -60
fi
