#!/usr/bin/env bash
# Builds the libFuzzer targets (test/fuzz/) with clang-19, ASan and UBSan in build-fuzz/, writes
# seed corpora from models/, and runs each target for a fixed time. Findings (crashing inputs)
# land in build-fuzz/findings/; the last run's figures in build-fuzz/fuzz-results.txt.
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     default: 60 s, all four targets
# The artifact loader's seed is models/tiny_mlp.onnx compiled for the CPU by the normal build's
# sinter ($SINTER_BIN, default build/bin/sinter).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${SINTER_FUZZ_BUILD_DIR:-$root/build-fuzz}"
seconds="${1:-60}"
shift || true
targets=("$@")
((${#targets[@]})) || targets=(fuzz_onnx_import fuzz_ir_parser fuzz_npy fuzz_artifact_loader)
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
rm -rf "$seeds"
"$bin/sinter_fuzz_seeds" "$root/models" "$seeds" >/dev/null
mkdir -p "$seeds/artifact_loader"
artifact="$build/tiny_mlp_cpu.so"
if [[ ! -x "$sinter" ]]; then
  echo "fuzz: $sinter is missing: build sinter first (scripts/build.sh), or set SINTER_BIN" >&2
  exit 1
fi
"$sinter" compile "$root/models/tiny_mlp.onnx" -o "$artifact" --target cpu --force \
  >"$build/seed-compile.log" 2>&1 || { cat "$build/seed-compile.log" >&2; exit 1; }
# Two seeds: mode 0 (the whole file) and mode 1 (the manifest metadata, spliced back and resealed).
python3 - "$artifact" "$seeds/artifact_loader" <<'PY'
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
  set +e
  SINTER_FUZZ_ARTIFACT="$artifact" TMPDIR="${TMPDIR:-/tmp}" \
    ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}" UBSAN_OPTIONS="print_stacktrace=1" \
    "$bin/$target" "$corpus" "$seeds/$corpus_name" -max_total_time="$seconds" -timeout=10 \
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
