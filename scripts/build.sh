#!/usr/bin/env bash
# Configures and builds sinter into build/ (ninja, ccache). Extra arguments go to cmake.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${SINTER_BUILD_DIR:-$root/build}"
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
fi
# ninja's "[done/total]" lines become a line per tenth of the build (a fresh build is about 20
# minutes on two cores); anything else it prints (a compiler's error) is shown as it comes.
ninja -C "$build" | awk '
  match($0, /^\[[0-9]+\/[0-9]+\]/) {
    split(substr($0, 2, RLENGTH - 2), n, "/")
    tenth = int(10 * n[1] / n[2])
    if (n[2] >= 20 && tenth > shown) { shown = tenth; printf "build: %d%% (%d of %d steps)\n", 10 * tenth, n[1], n[2]; fflush() }
    next
  }
  { print; fflush() }'
echo "build: $build/bin/sinter"
