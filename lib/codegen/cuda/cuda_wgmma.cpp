// The warpgroup MMA (wgmma, sm_90a) main loop of a tensor-core kernel (cuda_mma_body.h): two
// warpgroups of 64 rows multiply m64nNk16 products asynchronously, straight from a ring of
// kWgmmaStages 128-byte-swizzled slices that the shared staging writes.
#include "cuda_mma_body.h"

namespace sinter::codegen::cuda {

namespace {

/// Compiler barriers around the wgmma sums, so that no access to them moves across the
/// asynchronous products that write them.
void printFenceSums(std::ostringstream &out, const MmaTile &tile, const char *indent) {
  out << indent << "#pragma unroll\n" << indent << "for (int q = 0; q < " << tile.bn / 8 << "; ++q)\n" << indent
      << "  asm volatile(\"\" : \"+f\"(acc[0][q][0]), \"+f\"(acc[0][q][1]), \"+f\"(acc[0][q][2]), \"+f\"(acc[0][q][3]) :: \"memory\");\n";
}

/// The descriptors of the slices' first stage. Descriptors (PTX ISA, shared-memory matrix
/// layouts, 128-byte swizzle): k-major, the stride between groups of eight rows is 1024 bytes and
/// a k16 step is 32 bytes along the row; a vector along n (transposed B) has 64-column atoms
/// 64 * 128 bytes apart and 16 rows of k (2048 bytes) per step.
void printWgmmaDescriptors(std::ostringstream &out, const MmaTile &tile, int64_t aBytes, bool rhsAlongN) {
  out << "  const unsigned long long descA = sn_wgmma_descriptor(swizzled + (warp / 4) * " << 64 * 128
      << ", 16, 1024), descB = sn_wgmma_descriptor(swizzled + " << aBytes << ", "
      << (rhsAlongN ? tile.bk * 128 : 16) << ", 1024);\n";
}

/// One slice's products, issued asynchronously as one group: each warpgroup's 64 rows of the
/// sums by the slice at `stage`, in k16 steps.
void printWgmmaProducts(std::ostringstream &out, const MmaTile &tile, const MmaFormat &format, int64_t stageBytes,
                        bool rhsAlongN) {
  const int steps = tile.bk * format.bytes / 32; // k16 products per slice
  printFenceSums(out, tile, "    ");
  out << "    sn_wgmma_fence();\n";
  std::string shape = "m64n" + std::to_string(tile.bn) + "k16";
  std::string sums;
  for (int i = 0; i < tile.bn / 2; ++i)
    sums += (i ? ", %" : "%") + std::to_string(i);
  const int a = tile.bn / 2, b = a + 1, one = a + 2;
  for (int step = 0; step < steps; ++step) {
    out << "    asm volatile(\"{ .reg .pred p; setp.ne.b32 p, %" << one << ", 0; wgmma.mma_async.sync.aligned." << shape
        << ".f32." << format.name << "." << format.name << " {" << sums << "}, %" << a << ", %" << b
        << ", p, 1, 1, 0, " << (rhsAlongN ? 1 : 0) << "; }\"\n      : ";
    for (int q = 0; q < tile.bn / 8; ++q)
      for (int c = 0; c < 4; ++c)
        out << (q || c ? ", " : "") << "\"+f\"(acc[0][" << q << "][" << c << "])";
    out << "\n      : \"l\"(descA + ((stage * " << stageBytes << " + " << step * 32 << ") >> 4)), \"l\"(descB + ((stage * "
        << stageBytes << " + " << step * (rhsAlongN ? 2048 : 32) << ") >> 4)), \"r\"(1) : \"memory\");\n";
  }
  out << "    sn_wgmma_commit();\n";
  printFenceSums(out, tile, "    ");
}

} // namespace

MmaTile wgmmaTile(MmaTile tile, const MmaFormat &format) {
  tile.bk = 128 / format.bytes;
  return tile;
}

/// Slices 0 .. A - 1 are requested first (A, the slices ahead: the ring's size less one); then at
/// step t every thread waits for its copies of slice t, makes them visible to the tensor cores'
/// proxy and meets the others (after which both warpgroups are also done with slice t - 1: each
/// waited for its products at the end of step t - 1), issues slice t's products asynchronously,
/// requests slice t + A into the place slice t - 1 left, and waits for its products. The probe in
/// bench/wgmma_probe measured the layouts and descriptors (and a ring with one group of products
/// left in flight) on an H200.
void printWgmmaLoop(std::ostringstream &out, SliceStaging &staging, const MmaFormat &format, const MmaTile &tile,
                    bool ranged) {
  const int stages = kWgmmaStages, ahead = stages - 1;
  const int64_t kTiles = staging.kTiles(), stageBytes = staging.stageBytes();
  const bool rhsAlongN = staging.rhs().staging == Staging::VectorMN;
  const SliceRequest request = [&](const std::string &stage, const char *k, const std::string &indent) {
    staging.request(stage, k, indent);
  };
  printWgmmaDescriptors(out, tile, staging.aBytes(), rhsAlongN);
  const std::string end = ranged ? "kEnd" : std::to_string(kTiles) + "LL";
  if (ranged) {
    printRangeRingPrologue(out, ahead, stages, tile.bk, request);
    out << "#pragma unroll 1\n  for (int t = kBegin; t < kEnd; ++t) {\n";
  } else {
    printRingPrologue(out, ahead, kTiles, tile.bk, request);
    out << mainLoopUnroll(kTiles) << "  for (int t = 0; t < " << kTiles << "; ++t) {\n";
  }
  out << "    sn_cp_async_wait<" << ahead - 1 << ">();\n    sn_fence_proxy_async();\n    __syncthreads();\n";
  out << "    const int stage = (int)(t % " << stages << "), nextStage = (int)((t + " << ahead << ") % " << stages
      << ");\n";
  printWgmmaProducts(out, tile, format, stageBytes, rhsAlongN);
  out << "    if (t + " << ahead << " < " << end << ") {\n      const long long next = (long long)(t + " << ahead << ") * "
      << tile.bk << ";\n";
  request("nextStage", "next", "      ");
  out << "    }\n    sn_cp_async_commit<0>();\n    sn_wgmma_wait<0>();\n  }\n";
  printFenceSums(out, tile, "  ");
}

} // namespace sinter::codegen::cuda
