#!/usr/bin/env bash
# Compiles every models/*.onnx (and any extra .onnx given with --models DIR) for the CPU and the
# CUDA target into OUT, and, given a BASELINE folder made the same way by another sinter,
# compares the two byte for byte: the artifacts themselves, and with the CUDA target every
# kernel's CUDA C and kernel IR, each module's unit, PTX and cubin (--emit-source). A refactor
# that must not change code generation passes when this prints "identical".
#
#   scripts/check_codegen_identical.sh [--sinter BIN] [--models DIR]... OUT [BASELINE]
#
# BIN defaults to build/bin/sinter. Symbolic dims are bound to 2. CUDA compiles take --arch sm_90
# (one NVRTC and ptxas run per module; sm_90 takes both the mma.sync and the wgmma bodies). Each
# model is compiled for: cpu fp32, cpu fp16, cuda fp32, cuda fp16, cuda bf16. No GPU is needed.
# Extra full-width transformers: .venv/bin/python scripts/make_check_models.py DIR, then
# --models DIR.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
sinter="$root/build/bin/sinter"
model_dirs=("$root/models")
while [[ $# -gt 0 ]]; do
  case "$1" in
    --sinter) sinter="$2"; shift 2 ;;
    --models) model_dirs+=("$2"); shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) break ;;
  esac
done
[[ $# -ge 1 ]] || { echo "usage: $0 [--sinter BIN] [--models DIR]... OUT [BASELINE]" >&2; exit 2; }
out="$1"
baseline="${2:-}"
python="$root/.venv/bin/python"
[[ -x "$python" ]] || python=python3

rm -rf "$out"
mkdir -p "$out"
configs=("cpu fp32" "cpu fp16" "cuda fp32" "cuda fp16" "cuda bf16")
failures=0
for dir in "${model_dirs[@]}"; do
  for model in "$dir"/*.onnx; do
    stem="$(basename "$model" .onnx)"
    # --dim SYMBOL=2 for every symbolic input dim.
    dims=$("$python" - "$model" <<'EOF'
import sys, onnx
model = onnx.load(sys.argv[1], load_external_data=False)
initializers = {t.name for t in model.graph.initializer}
symbols = sorted({d.dim_param for i in model.graph.input if i.name not in initializers
                  for d in i.type.tensor_type.shape.dim if d.dim_param})
print(" ".join(f"--dim {s}=2" for s in symbols))
EOF
)
    for config in "${configs[@]}"; do
      read -r target precision <<<"$config"
      case_dir="$out/$stem.$target.$precision"
      mkdir -p "$case_dir"
      flags=(--target "$target" --precision "$precision")
      if [[ "$target" == cuda ]]; then
        flags+=(--arch sm_90 --emit-source "$case_dir/source")
      fi
      # shellcheck disable=SC2086
      if ! "$sinter" compile "$model" -o "$case_dir/model.so" "${flags[@]}" $dims \
          >"$case_dir/log" 2>&1; then
        # A configuration sinter refuses is recorded, so the refusal itself is compared.
        grep '^sinter: error' "$case_dir/log" >"$case_dir/error" || echo "failed" >"$case_dir/error"
      fi
      rm -f "$case_dir/log" # timings differ from run to run
      echo "$stem $target $precision: $(ls "$case_dir" | tr '\n' ' ')"
    done
  done
done

if [[ -n "$baseline" ]]; then
  if diff -r -q "$baseline" "$out"; then
    echo "identical: $(find "$out" -type f | wc -l) files under $out match $baseline"
  else
    echo "DIFFERENT: the files above differ between $baseline and $out" >&2
    exit 1
  fi
fi
