#!/usr/bin/env bash
# Build the wgmma probe for H100/H200 (sm_90a). Prints ptxas resource usage per kernel
# (registers, spills, barriers) and counts the warpgroup-MMA (HGMMA) instructions in the SASS.
set -euo pipefail
cd "$(dirname "$0")"
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
"$NVCC" -O3 -std=c++17 -arch=sm_90a -cudart static -Xptxas -v -o probe probe.cu 2>&1 | tee build.log
echo "--- per-kernel summary (sm_90a):"
awk '/Compiling entry function/ {k=$7; gsub(/\x27/,"",k)} /spill stores/ {sp=$5 " B spill st, " $9 " B spill ld"}
     /Used [0-9]+ registers/ {r=$0; sub(/.*Used /,"",r); print "  " k "\n      " r "; " sp}' build.log |
  (command -v c++filt >/dev/null && c++filt || cat)
CUOBJDUMP=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
if [ -x "$CUOBJDUMP" ]; then
  echo "--- HGMMA (wgmma) instructions in SASS: $("$CUOBJDUMP" -sass probe | grep -c HGMMA || true)"
else
  echo "--- cuobjdump not found; skipping SASS check"
fi
