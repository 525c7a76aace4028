#!/usr/bin/env bash
# Installs what sinter needs on a fresh Debian 12 machine. Idempotent: a second run changes nothing.
#   scripts/setup.sh            compiler, runtime and test dependencies
#   scripts/setup.sh --torch    also Debian's torch and torchvision, for regenerating models/
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

packages=(
  build-essential cmake ninja-build ccache pkg-config
  libonnx-dev libprotobuf-dev protobuf-compiler
  llvm-19-dev liblld-19-dev libpolly-19-dev libzstd-dev zlib1g-dev
  libcli11-dev libspdlog-dev libfmt-dev libgtest-dev
  libcpp-httplib-dev # HTTP for the example server examples/server (only it links it) and its tests
  clang-19 libclang-rt-19-dev # libFuzzer and sanitizers: scripts/fuzz.sh, scripts/sanitize.sh
  python3 python3-venv python3-pip
  qemu-user  # scripts/test-other-cpus.sh: the CPU-sensitive tests as other x86-64 CPUs run them
)
[[ "${1:-}" == "--torch" ]] && packages+=(python3-torch python3-torchvision)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""; [[ $(id -u) -ne 0 ]] && sudo="sudo"
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Python for tests and model generation only; the compiler and runtime never need it.
venv="$root/.venv"
if [[ ! -x "$venv/bin/python" ]]; then
  /usr/bin/python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import onnx, onnxruntime, numpy" 2>/dev/null ||
   ! cmp -s "$root/scripts/requirements.txt" "$venv/.requirements.txt"; then
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$root/scripts/requirements.txt"
  cp "$root/scripts/requirements.txt" "$venv/.requirements.txt"
fi
# Triton Inference Server 2.51.0 for the sinter backend's tests: the wheel ships a runnable
# tritonserver (pytriton/tritonserver/bin) and its libraries; none of its Python dependencies are used.
pytriton_version=0.7.0
if ! "$venv/bin/pip" show nvidia-pytriton 2>/dev/null | grep -qx "Version: $pytriton_version"; then
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps "nvidia-pytriton==$pytriton_version"
fi
chmod +x "$("$venv/bin/python" -c 'import importlib.util as u; print(u.find_spec("pytriton").submodule_search_locations[0])')/tritonserver/bin/tritonserver"
echo "setup: ready"
