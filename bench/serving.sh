#!/usr/bin/env bash
# The example server under load on the CPU target: compiles MODEL (default models/tiny_mlp.onnx)
# for the CPU, starts build/bin/sinter_server on a free port of 127.0.0.1, and runs
# build/bin/sinter_loadgen at 1, 8 and 64 concurrent clients, each checking every response
# against a local run of the same artifact. Prints one JSON line per client count
# (requests/s, latency percentiles, wrong and lost responses); exits non-zero if any response was
# wrong or lost.
#   bench/serving.sh [MODEL.onnx] [REQUESTS] [SESSIONS]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${SINTER_BUILD_DIR:-$root/build}"
model="${1:-$root/models/tiny_mlp.onnx}"
requests="${2:-4000}"
sessions="${3:-$(nproc)}"
work="$(mktemp -d)"
trap 'kill "${server:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT
name="$(basename "$model" .onnx)"
"$build/bin/sinter" compile "$model" --target cpu -o "$work/$name.so" -q
"$build/bin/sinter_server" "$work/$name.so" --port 0 --sessions "$sessions" > "$work/server.out" &
server=$!
for _ in $(seq 100); do grep -q "^listening on" "$work/server.out" 2>/dev/null && break; sleep 0.1; done
port="$(sed -n 's/^listening on [^:]*:\([0-9]*\).*/\1/p' "$work/server.out")"
echo "# $(head -1 "$work/server.out")"
status=0
for clients in 1 8 64; do
  "$build/bin/sinter_loadgen" "$work/$name.so" --port "$port" --concurrency "$clients" \
    --requests "$requests" --warmup 20 --json || status=1
done
exit $status
