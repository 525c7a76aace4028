#!/usr/bin/env bash
# Packs what the GPU machine needs to serve sinter artifacts with Triton Inference Server into
# .device/triton.tar.xz (git-ignored, carried by the device tool beside bin.tar.xz): the wheel's
# tritonserver with the libraries it loads (nvidia_pytriton.libs, kept at the same relative place
# for its RPATH) and the build's backend folder (libtriton_sinter.so, libsinter_rt.so).
# Run scripts/device/build-portable.sh too; then on the device scripts/device/triton-gpu.sh.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${SINTER_BUILD_DIR:-$root/build}"
ninja -C "$build" triton_sinter >/dev/null
wheel="$("$root/.venv/bin/python" -c 'import importlib.util as u; print(u.find_spec("pytriton").submodule_search_locations[0])')"
server="$wheel/tritonserver/bin/tritonserver"
stage="$(mktemp -d /tmp/sinter-triton-bundle.XXXXXX)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/triton/pytriton/tritonserver/bin" "$stage/triton/nvidia_pytriton.libs" "$stage/triton/backends"
cp "$server" "$stage/triton/pytriton/tritonserver/bin/"
ldd "$server" | awk '/nvidia_pytriton.libs/ {print $3}' | xargs -I{} cp {} "$stage/triton/nvidia_pytriton.libs/"
cp -r "$build/backends/sinter" "$stage/triton/backends/"
# Triton's Python backend, for the torch baseline (bench/triton_python/model.py), with the stub for
# the GPU machine's Python (SINTER_TRITON_PYTHON, default 3.12) kept where its RPATH expects it;
# the backend finds it through a link in its folder.
python="${SINTER_TRITON_PYTHON:-3.12}"
mkdir -p "$stage/triton/pytriton/tritonserver/python_backend_stubs/$python" "$stage/triton/backends/python"
cp "$wheel/tritonserver/python_backend_stubs/$python/triton_python_backend_stub" \
  "$stage/triton/pytriton/tritonserver/python_backend_stubs/$python/"
cp "$wheel/tritonserver/backends/python/libtriton_python.so" \
  "$wheel/tritonserver/backends/python/triton_python_backend_utils.py" "$stage/triton/backends/python/"
ln -s "../../pytriton/tritonserver/python_backend_stubs/$python/triton_python_backend_stub" \
  "$stage/triton/backends/python/triton_python_backend_stub"
for binary in "$wheel/tritonserver/backends/python/libtriton_python.so" \
              "$wheel/tritonserver/python_backend_stubs/$python/triton_python_backend_stub"; do
  ldd "$binary" | awk '/nvidia_pytriton.libs/ {print $3}' | xargs -I{} cp -n {} "$stage/triton/nvidia_pytriton.libs/"
done
mkdir -p "$root/.device"
XZ_OPT="${XZ_OPT:--T2 -6}" tar -C "$stage" -cJf "$root/.device/triton.tar.xz" triton
du -h "$root/.device/triton.tar.xz"
