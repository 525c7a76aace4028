#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite (what CI runs): ctest, then a short timed run of
# each libFuzzer target (scripts/fuzz.sh in build-fuzz/: clang-19 with ASan and UBSan, the fuzz
# targets and what they link only). SINTER_FUZZ_SECONDS sets the time per target (default 30;
# 0 leaves the fuzzing out). docs/reliability.md, "Fuzzing in CI", has what it costs.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
build="${SINTER_BUILD_DIR:-$root/build}"
(cd "$build" && ctest --output-on-failure -j2 --timeout 900)
fuzz_seconds="${SINTER_FUZZ_SECONDS:-30}"
if ((fuzz_seconds > 0)); then
  SINTER_BIN="$build/bin/sinter" "$root/scripts/fuzz.sh" "$fuzz_seconds"
fi
