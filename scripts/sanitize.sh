#!/usr/bin/env bash
# Builds the compiler, the runtime and the unit tests with AddressSanitizer and
# UndefinedBehaviorSanitizer (gcc; any report aborts) in build-asan/, then runs the unit tests and,
# with --models, the model suite (test/python/test_models.py through the sanitized CLI). The
# summary goes to build-asan/sanitize-results.txt; docs/reliability.md keeps the last one.
#   scripts/sanitize.sh [--models]
#   scripts/sanitize.sh --runtime   only the runtime's, the artifact's and the file readers' tests
#                                   (sinter_runtime_unit_tests: no code generators to build); their
#                                   models are compiled by the normal build's sinter (build/)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${SINTER_ASAN_BUILD_DIR:-$root/build-asan}"
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSINTER_SANITIZE=ON \
    >/dev/null
fi
mode="${1:-}"
if [[ "$mode" == --runtime ]]; then
  targets=(sinter_runtime_unit_tests)
  tests="$build/test/sinter_runtime_unit_tests"
  [[ -x "$root/build/bin/sinter" ]] || { echo "sanitize: build sinter first (scripts/build.sh)" >&2; exit 1; }
else
  targets=(sinter sinter_rt sinter_unit_tests)
  tests="$build/test/sinter_unit_tests"
fi
ninja -C "$build" "${targets[@]}" >/dev/null || ninja -C "$build" "${targets[@]}"

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$root/scripts/lsan.supp"
results="$build/sanitize-results.txt"
echo "# scripts/sanitize.sh $*, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores" >"$results"
status=0
# The shared runtime needs libasan under a sanitizer build, so its glibc-only check cannot hold.
filter="-RuntimeTest.SharedRuntimeNeedsOnlyGlibcAndExportsOnlyTheCAbi"
log="$build/unit-tests.log"
if "$tests" --gtest_filter="$filter" >"$log" 2>&1; then
  echo "unit tests: $(grep -o '[0-9]* tests\? from [0-9]* test suites\? ran' "$log" | tail -1), passed, no sanitizer report" | tee -a "$results"
else
  status=1
  echo "unit tests: FAILED or a sanitizer report (see $log)" | tee -a "$results"
fi
if [[ "$mode" == --models ]]; then
  log="$build/models.log"
  if SINTER_BIN="$build/bin/sinter" SINTER_ROOT="$root" SINTER_BUILD="$build" \
     "$root/.venv/bin/python" -m pytest -q -p no:cacheprovider "$root/test/python/test_models.py" \
     >"$log" 2>&1; then
    echo "model suite: $(tail -1 "$log")" | tee -a "$results"
  else
    status=1
    echo "model suite: FAILED or a sanitizer report (see $log)" | tee -a "$results"
  fi
fi
exit $status
