# Sourced by the scripts that run on the GPU machine (gpu-suite.sh, bench.sh): unpacks the
# portable binaries that scripts/device/build-portable.sh packed into a scratch folder ($work, with
# them in $bin, removed on exit) and points sinter at NVRTC, ptxas and libdevice.
# Uses $root (the project root) when the caller set it, else the tree this file is in.
root="${root:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
archive="$root/.device/bin.tar.xz"
if [[ ! -f "$archive" ]]; then
  echo "$(basename "$0"): $archive is missing: run scripts/device/build-portable.sh first and carry .device" >&2
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

