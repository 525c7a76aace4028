#!/usr/bin/env bash
# `sinter verify` of every models/ model on the CUDA target, on the GPU machine (docs/ci.md):
#   here:   scripts/device/build-portable.sh
#   device: run with carry [".device"] and the command `bash scripts/device/verify-models.sh`
# Each model is compiled for sm_90 with fp32 storage and with fp16 storage and checked against the
# reference evaluator on two sets of random inputs, at verify's default tolerances. Writes
# $OUT/verify-models.log (every command and its report) and prints a table last; exits 1 when a
# model does not verify.
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${OUT:-$root/out/verify-models}"
mkdir -p "$out"
source "$root/scripts/device/env.sh"
log="$out/verify-models.log"
: >"$log"
failed=0
rows=()
for model in "$root"/models/*.onnx; do
  name="$(basename "$model" .onnx)"
  dims=$(python3 - "$model" <<'PY'
import sys, onnx
m = onnx.load(sys.argv[1], load_external_data=False)
symbols = sorted({d.dim_param for i in m.graph.input for d in i.type.tensor_type.shape.dim if d.dim_param})
print(" ".join(f"--dim {s}=2" for s in symbols))
PY
)
  for precision in fp32 fp16; do
    command=("$bin/sinter" verify "$model" --target cuda --arch sm_90 --precision "$precision" $dims
             --random 2 --seed 7)
    echo "\$ ${command[*]}" >>"$log"
    start=$(date +%s.%N)
    timeout 300 "${command[@]}" >>"$log" 2>&1
    status=$?
    seconds=$(python3 -c "print(f'{$(date +%s.%N) - $start:.1f}')")
    echo "exit $status after $seconds s" >>"$log"
    verdict=$([[ $status -eq 0 ]] && echo pass || echo "FAIL (exit $status)")
    [[ $status -eq 0 ]] || failed=1
    rows+=("| $name | $precision | $verdict | $seconds |")
  done
done
echo "| model | storage | verify (cuda, sm_90, vs reference) | seconds |"
echo "| --- | --- | --- | ---: |"
printf '%s\n' "${rows[@]}"
exit $failed
