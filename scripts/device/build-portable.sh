#!/usr/bin/env bash
# Builds the portable sinter (static protobuf, LLVM, LLD and zlib; needs only glibc and libstdc++),
# libsinter_rt and the example, and packs what the GPU machine needs into .device/ (git-ignored),
# to be carried by the device tool. See docs/gpu-testing.md.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/build-portable"
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSINTER_PORTABLE=ON \
    -DBUILD_TESTING=OFF >/dev/null
fi
ninja -C "$build" sinter sinter_rt run_model
out="$root/.device"
rm -rf "$out/bin"
mkdir -p "$out/bin"
cp "$build/bin/sinter" "$build/bin/run_model" "$out/bin/"
cp "$build"/lib/libsinter_rt.so* "$out/bin/" 2>/dev/null || cp "$build"/runtime/libsinter_rt.so* "$out/bin/"
strip "$out/bin/sinter" "$out/bin/run_model"
for binary in "$out"/bin/*; do
  echo "$(basename "$binary"): $(du -h "$binary" | cut -f1); needs: $(readelf -d "$binary" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
done
tar -C "$out" -cJf "$out/bin.tar.xz" bin
rm -rf "$out/bin"
du -h "$out/bin.tar.xz"
