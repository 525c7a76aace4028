#!/usr/bin/env bash
# The CUDA window kernel (lib/codegen/cuda/cuda_window.cpp) on the GPU machine, through the
# device tool with carry [".device"] after scripts/device/build-portable.sh:
#   1. test/gpu/check_depthwise.py: its cases against onnxruntime at fp32, fp16 and bf16;
#   2. bench/gpu_vs_torch.py on the zoo rows whose depthwise layers were their cliffs (eager and
#      reduce-overhead; DEPTHWISE_ROWS overrides the rows);
#   3. bench/flag_ablation.py: those rows' exports with the direct kernel against the generic one
#      (--depthwise-kernel generic), sinter alone, interleaved rounds (DEPTHWISE_ABLATION=0 skips it).
# Results: $OUT/check_depthwise.log, bench.json, bench.log, ablation.log; about 8 minutes.
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${OUT:-$root/out/depthwise}"
mkdir -p "$out"
source "$root/scripts/device/env.sh"
export PYTHONUNBUFFERED=1
python3 "$root/test/gpu/check_depthwise.py" --bin "$bin" --work "$work/check" 2>&1 | grep -v "W:onnxruntime" |
  tee "$out/check_depthwise.log"
read -r -a rows <<<"${DEPTHWISE_ROWS:-convnext_tiny:32:fp16 efficientnet_b0:32:fp16 mobilenet_v2:32:fp16 mobilenet_v3_large:32:fp16 convnext_tiny:1:fp16}"
timeout --kill-after=10 420 python3 "$root/bench/gpu_vs_torch.py" --bin "$bin" --out "$out" --work "$work/bench" \
  --skip-default --iterations 50 --budget 330 --rows "${rows[@]}" >/dev/null
python3 "$root/bench/gpu_vs_torch.py" --markdown "$out/bench.json"
if [[ "${DEPTHWISE_ABLATION:-1}" != 0 ]]; then
  mapfile -t models < <(ls "$work"/bench/*/*.onnx)
  timeout --kill-after=10 150 python3 "$root/bench/flag_ablation.py" --sinter "$bin/sinter" --work "$work/ablation" \
    --flags "--depthwise-kernel generic" --precisions fp16 --rounds 3 "${models[@]}" | tee "$out/ablation.log"
fi
# DEPTHWISE_NCU="MODEL-bBATCH KERNEL": Nsight Compute's speed-of-light, occupancy and memory
# sections for one kernel of that row's fp16 artifact (e.g. "mobilenet_v2-b32 fused_conv_clip_4").
if [[ -n "${DEPTHWISE_NCU:-}" ]]; then
  read -r folder kernel <<<"$DEPTHWISE_NCU"
  timeout 120 ncu --kernel-name "$kernel" --launch-count 1 --section SpeedOfLight --section Occupancy \
    --section LaunchStats --section MemoryWorkloadAnalysis --section WarpStateStats \
    "$bin/sinter" bench "$work/bench/$folder/model-fp16.so" --no-graphs --warmup 0 --iterations 1 2>&1 |
    tee "$out/ncu.log" | grep -v "^==PROF==" | tail -90
fi
