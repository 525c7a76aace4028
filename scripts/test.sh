#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite (what CI runs).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
cd "${SINTER_BUILD_DIR:-$root/build}"
ctest --output-on-failure -j2 --timeout 900
