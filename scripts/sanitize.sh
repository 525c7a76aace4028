#!/usr/bin/env bash
# Builds the compiler, the runtime and the unit tests with AddressSanitizer and
# UndefinedBehaviorSanitizer (gcc; any report aborts) in build-asan/, then runs the unit tests and,
# with --models, the model suite (test/python/test_models.py through the sanitized CLI). The
# summary goes to build-asan/sanitize-results.txt; docs/reliability.md keeps the last one.
#   scripts/sanitize.sh [--models]
#   scripts/sanitize.sh --runtime   only the runtime's, the artifact's and the file readers' tests
#                                   (sinter_runtime_unit_tests: no code generators to build), then
#                                   every models/ model, compiled for the CPU by the normal build's
#                                   sinter (build/), run by the sanitized runtime (run_model, two
#                                   threads, three runs) with output identical to build/'s run_model
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${SINTER_ASAN_BUILD_DIR:-$root/build-asan}"
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSINTER_SANITIZE=ON \
    >/dev/null
fi
mode="${1:-}"
if [[ "$mode" == --runtime ]]; then
  targets=(sinter_runtime_unit_tests run_model)
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
if [[ "$mode" == --runtime ]]; then
  # The model suite through the sanitized runtime: each model's CPU artifact (symbolic dims set
  # to 2) run by the sanitized run_model, its printed outputs compared with the normal build's.
  work="$build/runtime-models"
  rm -rf "$work"
  mkdir -p "$work"
  log="$build/runtime-models.log"
  : >"$log"
  passed=0
  failed=0
  for model in "$root"/models/*.onnx; do
    name="$(basename "$model" .onnx)"
    dims=$("$root/.venv/bin/python" - "$model" <<'PY'
import sys, onnx
names = sorted({d.dim_param for i in onnx.load(sys.argv[1], load_external_data=False).graph.input
                for d in i.type.tensor_type.shape.dim if d.dim_param})
print(" ".join(f"--dim {n}=2" for n in names))
PY
)
    # shellcheck disable=SC2086
    if ! "$root/build/bin/sinter" compile "$model" -o "$work/$name.so" --target cpu --force $dims \
        >>"$log" 2>&1; then
      echo "$name: does not compile (see $log)" | tee -a "$results"
      failed=$((failed + 1))
      continue
    fi
    "$root/build/bin/run_model" "$work/$name.so" --threads 2 --runs 3 --values 64 2>&1 |
      grep -v 'median' >"$work/$name.expected"
    if "$build/bin/run_model" "$work/$name.so" --threads 2 --runs 3 --values 64 >"$work/$name.out" 2>&1 &&
        diff <(grep -v 'median' "$work/$name.out") "$work/$name.expected" >>"$log"; then
      passed=$((passed + 1))
    else
      echo "$name: the sanitized runtime failed or differs (see $work/$name.out)" | tee -a "$results"
      failed=$((failed + 1))
    fi
  done
  echo "models through the sanitized runtime: $passed identical, $failed failed or a sanitizer report" | tee -a "$results"
  ((failed == 0)) || status=1
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
