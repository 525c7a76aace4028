#!/usr/bin/env bash
# Runs the tests whose truth depends on a peer's SIMD code paths (numpy's and onnxruntime's) with
# Python under qemu-user emulating other x86-64 CPUs, so one machine checks the suite as CI's
# machines of other kinds would run it (CI lands on AMD without AVX-512 and on Intel with it).
# sinter itself runs natively: its outputs do not depend on the CPU (docs/precision.md).
#
#   scripts/test-other-cpus.sh [CPU ...] [-- PYTEST ARGS]
#     CPU: a qemu CPU model (default: Haswell-noTSX Nehalem)
#       Haswell-noTSX  AVX2 and FMA, no AVX-512 and no VNNI (onnxruntime's u8 x s8 kernels then
#                      add pairs of products in saturating 16-bit lanes)
#       Nehalem        x86-64-v2: SSE4.2, no AVX
#     PYTEST ARGS: default the CPU-sensitive files below
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${SINTER_BUILD:-$root/build}"
python="$root/.venv/bin/python"
qemu="$(command -v qemu-x86_64 || true)"
[[ -n "$qemu" ]] || { echo "test-other-cpus: qemu-x86_64 not found (scripts/setup.sh installs qemu-user)" >&2; exit 1; }

cpus=() tests=()
while (($#)); do
  if [[ "$1" == "--" ]]; then shift; tests=("$@"); break; fi
  cpus+=("$1"); shift
done
((${#cpus[@]})) || cpus=(Haswell-noTSX Nehalem)
((${#tests[@]})) || tests=(test/python/test_conformance_ops.py test/python/test_low_precision.py
                           test/python/test_portable_truth.py -k "not simd_paths")

# What each model must show to numpy, so a qemu that ignored -cpu cannot pass for another CPU.
declare -A present=([Haswell-noTSX]="AVX2 FMA3" [Nehalem]="SSE42")
declare -A absent=([Haswell-noTSX]="AVX512F AVX512_ICL" [Nehalem]="AVX AVX2 AVX512F")

quiet() { grep -v "TCG doesn't support requested feature" >&2 || true; }
cd "$root"
export SINTER_BIN="$build/bin/sinter" SINTER_ROOT="$root" SINTER_BUILD="$build"
for cpu in "${cpus[@]}"; do
  features=$("$qemu" -cpu "$cpu" "$python" -c \
    "from numpy._core._multiarray_umath import __cpu_features__ as f; print(' '.join(k for k, v in f.items() if v))" \
    2> >(quiet))
  for f in ${present[$cpu]:-}; do
    [[ " $features " == *" $f "* ]] || { echo "test-other-cpus: $cpu: numpy does not see $f ($features)" >&2; exit 1; }
  done
  for f in ${absent[$cpu]:-}; do
    [[ " $features " != *" $f "* ]] || { echo "test-other-cpus: $cpu: numpy still sees $f" >&2; exit 1; }
  done
  echo "test-other-cpus: $cpu (numpy sees: $features)"
  "$qemu" -cpu "$cpu" "$python" -m pytest -q -p no:cacheprovider "${tests[@]}" 2> >(quiet)
done
