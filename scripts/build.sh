#!/usr/bin/env bash
# Configures and builds sinter into build/ (ninja, ccache). Extra arguments go to cmake.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${SINTER_BUILD_DIR:-$root/build}"
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
fi
ninja -C "$build" >/dev/null || ninja -C "$build"
echo "build: $build/bin/sinter"
