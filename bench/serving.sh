#!/usr/bin/env bash
# The example server under load on the CPU target: compiles MODEL (default models/tiny_mlp.onnx)
# for the CPU, starts build/bin/sinter_server on a free port of 127.0.0.1, and runs
# build/bin/sinter_loadgen at 1, 8 and 64 concurrent clients, each checking every response
# against a local run of the same artifact (each request alone, at batch 1). Prints one JSON line
# per client count (requests/s, latency percentiles, wrong and lost responses); exits non-zero if
# any response was wrong or lost.
#
# Two modes, each its own server:
#   unbatched  the model as it is (batch 1): every request runs alone on a free session;
#   batched    the model compiled with shape buckets (--dim batch=BUCKETS, default 1,2,4,8; a
#              model whose batch is static 1 gets a symbolic copy first, bench/symbolic_batch.py),
#              so the server gathers concurrent requests into runs of up to the largest bucket,
#              waiting at most DELAY_US (default 0, the server's default) microseconds; its stats follow the runs.
#   bench/serving.sh [MODEL.onnx] [REQUESTS] [SESSIONS]
#   MODES="unbatched batched" BUCKETS=1,2,4,8 DELAY_US=0 CLIENTS="1 8 64"
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${SINTER_BUILD_DIR:-$root/build}"
python="${SINTER_PYTHON:-$root/.venv/bin/python}"
model="${1:-$root/models/tiny_mlp.onnx}"
requests="${2:-4000}"
sessions="${3:-$(nproc)}"
modes="${MODES:-unbatched batched}"
buckets="${BUCKETS:-1,2,4,8}"
delay="${DELAY_US:-0}"
clients_list="${CLIENTS:-1 8 64}"
work="$(mktemp -d)"
trap 'if [ -n "${server:-}" ]; then kill "$server" 2>/dev/null || true; fi; rm -rf "$work"' EXIT
name="$(basename "$model" .onnx)"
echo "# $(date -u +%FT%TZ) $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
status=0
for mode in $modes; do
  mkdir -p "$work/$mode"
  artifact="$work/$mode/$name.so"
  flags=()
  if [ "$mode" = batched ]; then
    "$python" "$root/bench/symbolic_batch.py" "$model" "$work/$mode/$name.onnx"
    "$build/bin/sinter" compile "$work/$mode/$name.onnx" --target cpu --dim "batch=$buckets" \
      -o "$artifact" -q
    flags=(--max-queue-delay-us "$delay")
  else
    "$build/bin/sinter" compile "$model" --target cpu -o "$artifact" -q
  fi
  "$build/bin/sinter_server" "$artifact" --port 0 --sessions "$sessions" "${flags[@]}" \
    > "$work/$mode/server.out" &
  server=$!
  for _ in $(seq 100); do
    grep -q "^listening on" "$work/$mode/server.out" 2>/dev/null && break
    sleep 0.1
  done
  port="$(sed -n 's/^listening on [^:]*:\([0-9]*\).*/\1/p' "$work/$mode/server.out")"
  echo "# $mode: $(head -1 "$work/$mode/server.out")"
  for clients in $clients_list; do
    line="$("$build/bin/sinter_loadgen" "$artifact" --port "$port" --concurrency "$clients" \
      --requests "$requests" --warmup 20 --json)" || status=1
    echo "{\"mode\": \"$mode\", ${line#\{}"
    if [ "$mode" = batched ] && command -v curl > /dev/null; then
      echo "# stats after $clients clients: $(curl -s "http://127.0.0.1:$port/v2/models/$name/stats")"
    fi
  done
  kill "$server"
  wait "$server" 2>/dev/null || true
  server=
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $status
