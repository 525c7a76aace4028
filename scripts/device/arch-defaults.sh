#!/usr/bin/env bash
# The default CUDA architectures (sm_80 + sm_90 SASS + compute_80 PTX; docs/architectures.md)
# against per-chip builds, on the GPU machine:
#   here:   scripts/device/build-portable.sh
#   device: run with carry [".device"] and the command `bash scripts/device/arch-defaults.sh`
#           (extra arguments: more .onnx files or folders of them, e.g. a zoo)
# Each model is compiled three ways: the default; `--arch sm_80,sm_86,sm_89,sm_90` (the old
# default: SASS per chip); `--arch sm_80` (no sm_90 SASS, so an H200 JIT-compiles the PTX: what a
# GPU newer than every listed architecture runs). Then:
#  * the sm_90 cubins of the default and the per-chip builds are compared byte for byte (they
#    must be the same: one NVRTC run, the same kernels);
#  * `sinter bench` (median of 200 runs after 20 warm-ups) of each build on this GPU.
# Writes $OUT/arch-defaults.log and $OUT/arch-defaults.json; prints a table last.
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${OUT:-$root/out/arch-defaults}"
mkdir -p "$out"
source "$root/scripts/device/env.sh"
log="$out/arch-defaults.log"
: >"$log"
models=("$root"/models/*.onnx)
for extra in "$@"; do
  if [[ -d "$extra" ]]; then models+=("$extra"/*.onnx); else models+=("$extra"); fi
done
declare -A archs=([default]="" [per-chip]="--arch sm_80,sm_86,sm_89,sm_90" [ptx-jit]="--arch sm_80")
rows=()
json="["
for model in "${models[@]}"; do
  name="$(basename "$model" .onnx)"
  dims=$(python3 - "$model" <<'PY'
import sys, onnx
m = onnx.load(sys.argv[1], load_external_data=False)
symbols = sorted({d.dim_param for i in m.graph.input for d in i.type.tensor_type.shape.dim if d.dim_param})
print(" ".join(f"--dim {s}=1" for s in symbols))
PY
)
  declare -A p50=()
  for build in default per-chip ptx-jit; do
    artifact="$work/$name.$build.so"
    sources="$work/$name.$build.src"
    command=("$bin/sinter" compile "$model" -o "$artifact" --force --target cuda ${archs[$build]}
             $dims --no-cache --emit-source "$sources")
    echo "\$ ${command[*]}" >>"$log"
    if ! "${command[@]}" >>"$log" 2>&1; then p50[$build]="compile failed"; continue; fi
    result=$("$bin/sinter" bench "$artifact" --warmup 20 --iterations 200 --json 2>>"$log")
    echo "$result" >>"$log"
    p50[$build]=$(python3 -c 'import json,sys; print("%.4f" % json.loads(sys.argv[1])["latency_ms"]["p50"])' "$result" 2>/dev/null || echo "bench failed")
  done
  same="yes"
  for cubin in "$work/$name.default.src"/module*.sm_90.cubin; do
    [[ -f "$cubin" ]] || { same="no cubins"; break; }
    cmp -s "$cubin" "$work/$name.per-chip.src/$(basename "$cubin")" || same="NO"
  done
  rows+=("$(printf '%-28s %12s %12s %12s   %s' "$name" "${p50[default]}" "${p50[per-chip]}" "${p50[ptx-jit]}" "$same")")
  json+=$(printf '%s{"model": "%s", "p50_ms": {"default": "%s", "per_chip": "%s", "ptx_jit": "%s"}, "sm_90_cubins_identical": "%s"}' \
          "$([[ "$json" == "[" ]] || echo ", ")" "$name" "${p50[default]}" "${p50[per-chip]}" "${p50[ptx-jit]}" "$same")
  unset p50
done
echo "$json]" >"$out/arch-defaults.json"
printf '%-28s %12s %12s %12s   %s\n' model "default ms" "per-chip ms" "ptx-jit ms" "sm_90 cubins identical"
printf '%s\n' "${rows[@]}"
