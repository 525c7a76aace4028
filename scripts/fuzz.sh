#!/usr/bin/env bash
# Builds the libFuzzer targets (test/fuzz/) with clang-19, ASan and UBSan in build-fuzz/, writes
# seed corpora from models/, and runs each target for a fixed time. Findings (crashing inputs)
# land in build-fuzz/findings/; the last run's figures in build-fuzz/fuzz-results.txt.
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     default: 60 s, all four targets
#   scripts/fuzz.sh --replay [TARGET...]                 no clang, no fuzzing: the normal build's
#       fuzz_replay_* programs run each target once over its seeds and its committed regression
#       inputs (test/fuzz/regressions/NAME/); ctest's fuzz.replay.* entries
# The artifact loader's seed is models/tiny_mlp.onnx compiled for the CPU by the normal build's
# sinter ($SINTER_BIN, default build/bin/sinter).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
all_targets=(fuzz_onnx_import fuzz_ir_parser fuzz_npy fuzz_artifact_loader)

# make_seeds MAKE_SEEDS_PROGRAM SINTER FOLDER: the seed corpora, one subfolder per target (the
# name without fuzz_), and the loader's seed artifact FOLDER/tiny_mlp_cpu.so.
make_seeds() {
  local program="$1" sinter="$2" seeds="$3"
  rm -rf "$seeds"
  "$program" "$root/models" "$seeds" >/dev/null
  mkdir -p "$seeds/artifact_loader"
  if [[ ! -x "$sinter" ]]; then
    echo "fuzz: $sinter is missing: build sinter first (scripts/build.sh), or set SINTER_BIN" >&2
    exit 1
  fi
  "$sinter" compile "$root/models/tiny_mlp.onnx" -o "$seeds/tiny_mlp_cpu.so" --target cpu --force \
    >"$seeds/seed-compile.log" 2>&1 || { cat "$seeds/seed-compile.log" >&2; exit 1; }
  # Two seeds: mode 0 (the whole file) and mode 1 (the manifest metadata, spliced back and resealed).
  python3 - "$seeds/tiny_mlp_cpu.so" "$seeds/artifact_loader" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
shoff, = struct.unpack_from("<Q", data, 40)
shnum, shstrndx = struct.unpack_from("<HH", data, 60)
def section(i):
    return struct.unpack_from("<IIQQQQIIQQ", data, shoff + 64 * i)
names = section(shstrndx)
for i in range(shnum):
    s = section(i)
    name = data[names[4] + s[0]:].split(b"\0", 1)[0]
    if name == b".sinter_artifact":
        metadata_bytes, = struct.unpack_from("<Q", data, s[4] + 32)
        metadata = data[s[4] + 80:s[4] + 80 + metadata_bytes]
        open(sys.argv[2] + "/whole_file", "wb").write(b"\0" + data)
        open(sys.argv[2] + "/metadata", "wb").write(b"\1" + metadata)
PY
}

if [[ "${1:-}" == --replay ]]; then
  shift
  targets=("$@")
  ((${#targets[@]})) || targets=("${all_targets[@]}")
  build="${SINTER_BUILD:-$root/build}"
  scratch="$(mktemp -d "${TMPDIR:-/tmp}/sinter-fuzz-replay-XXXXXX")"
  trap 'rm -rf "$scratch"' EXIT
  make_seeds "$build/test/sinter_fuzz_seeds" "${SINTER_BIN:-$build/bin/sinter}" "$scratch/seeds"
  for target in "${targets[@]}"; do
    name="${target#fuzz_}"
    inputs=("$scratch/seeds/$name")
    [[ -d "$root/test/fuzz/regressions/$name" ]] && inputs+=("$root/test/fuzz/regressions/$name")
    SINTER_FUZZ_ARTIFACT="$scratch/seeds/tiny_mlp_cpu.so" TMPDIR="$scratch" \
      "$build/test/fuzz_replay_$name" "${inputs[@]}" >"$scratch/$name.log" 2>&1 ||
      { tail -20 "$scratch/$name.log" >&2; echo "fuzz: $target failed on the input above" >&2; exit 1; }
    echo "$target: $(grep -c '^replaying' "$scratch/$name.log") inputs replayed, no crash"
  done
  exit 0
fi

build="${SINTER_FUZZ_BUILD_DIR:-$root/build-fuzz}"
seconds="${1:-60}"
shift || true
targets=("$@")
((${#targets[@]})) || targets=("${all_targets[@]}")
sinter="${SINTER_BIN:-$root/build/bin/sinter}"

if ! command -v clang++-19 >/dev/null || [[ ! -d /usr/lib/llvm-19/lib/clang/19/lib/linux ]]; then
  echo "fuzz: needs clang-19 and libclang-rt-19-dev (scripts/setup.sh installs them)" >&2
  exit 1
fi
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 -DSINTER_FUZZ=ON \
    -DBUILD_TESTING=OFF >/dev/null
fi
ninja -C "$build" fuzz_targets >/dev/null || ninja -C "$build" fuzz_targets
bin="$build/test/fuzz"
seeds="$build/seeds"
make_seeds "$bin/sinter_fuzz_seeds" "$sinter" "$seeds"
artifact="$seeds/tiny_mlp_cpu.so"

mkdir -p "$build/findings" "$build/corpus"
results="$build/fuzz-results.txt"
echo "# scripts/fuzz.sh $seconds s per target, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores" >"$results"
status=0
for target in "${targets[@]}"; do
  corpus_name="${target#fuzz_}"
  corpus="$build/corpus/$corpus_name"
  mkdir -p "$corpus"
  max_len=65536
  [[ "$target" == fuzz_artifact_loader ]] && max_len=$(($(stat -c %s "$artifact") + 1))
  log="$build/findings/$target.log"
  # libFuzzer adds what it finds to the first folder only; the others are read.
  inputs=("$corpus" "$seeds/$corpus_name")
  [[ -d "$root/test/fuzz/regressions/$corpus_name" ]] && inputs+=("$root/test/fuzz/regressions/$corpus_name")
  set +e
  SINTER_FUZZ_ARTIFACT="$artifact" TMPDIR="${TMPDIR:-/tmp}" \
    ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}" UBSAN_OPTIONS="print_stacktrace=1" \
    "$bin/$target" "${inputs[@]}" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -max_len="$max_len" -print_final_stats=1 \
    -artifact_prefix="$build/findings/$target-" >"$log" 2>&1
  rc=$?
  set -e
  executions=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  coverage=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo "?")
  verdict=$([[ $rc -eq 0 ]] && echo "no crash" || echo "FINDING (exit $rc, see $log)")
  printf '%-22s %10s executions  %6s edges  %s\n' "$target" "$executions" "$coverage" "$verdict" | tee -a "$results"
  [[ $rc -eq 0 ]] || status=1
done
exit $status
