#!/usr/bin/env bash
# The GPU suite, run on the GPU machine through the device tool (docs/gpu-testing.md):
#   here:   scripts/device/build-portable.sh          (packs .device/bin.tar.xz)
#   device: run with carry [".device"] and the command `bash scripts/device/gpu-suite.sh`
# It builds nothing: it unpacks the portable sinter, libsinter_rt.so and run_model, then runs
# test/gpu/run_gpu_suite.py, which writes gpu-suite.log and gpu-suite.json under $OUT and prints
# a table last. Extra arguments go to run_gpu_suite.py (e.g. --skip-torch, --only tiny_cnn).
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${OUT:-$root/out/gpu-suite}"
mkdir -p "$out"
archive="$root/.device/bin.tar.xz"
if [[ ! -f "$archive" ]]; then
  echo "gpu-suite: $archive is missing: run scripts/device/build-portable.sh first and carry .device" >&2
  exit 1
fi
work="$(mktemp -d /tmp/sinter-gpu-suite.XXXXXX)"
trap 'rm -rf "$work"' EXIT
tar -C "$work" -xJf "$archive"
bin="$work/bin"

# sinter compile --target cuda needs NVRTC and ptxas: the toolkit's, else the pip wheels'.
if [[ -z "${SINTER_NVRTC:-}" && ! -e /usr/local/cuda/lib64/libnvrtc.so.13 && ! -e /usr/local/cuda/lib64/libnvrtc.so.12 ]]; then
  nvrtc="$(python3 - <<'PY' 2>/dev/null
import glob, site
for base in site.getsitepackages():
    for name in sorted(glob.glob(base + "/nvidia/*/lib/libnvrtc.so.1[0-9]*")):
        print(name); raise SystemExit
PY
)"
  [[ -n "$nvrtc" ]] && export SINTER_NVRTC="$nvrtc"
fi
if ! command -v ptxas >/dev/null && [[ -x /usr/local/cuda/bin/ptxas ]]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
# --gpu-codegen llvm links libdevice for math: the toolkit's, else a pip wheel's (docs/nvptx.md).
if [[ -z "${SINTER_LIBDEVICE:-}" && ! -e /usr/local/cuda/nvvm/libdevice/libdevice.10.bc ]]; then
  libdevice="$(python3 - <<'PY' 2>/dev/null
import glob, site
for base in site.getsitepackages():
    for name in sorted(glob.glob(base + "/nvidia/*/nvvm/libdevice/libdevice.10.bc")):
        print(name); raise SystemExit
PY
)"
  [[ -n "$libdevice" ]] && export SINTER_LIBDEVICE="$libdevice"
fi

# The budget leaves room under the device tool's 10-minute limit; timeout is the hard stop.
timeout --kill-after=10 570 python3 "$root/test/gpu/run_gpu_suite.py" --bin "$bin" --out "$out" \
  --work "$work/suite" --budget 500 "$@"
status=$?
[[ $status -eq 124 || $status -eq 137 ]] && echo "gpu-suite: stopped by the hard time limit; see $out/gpu-suite.json" >&2
exit $status
