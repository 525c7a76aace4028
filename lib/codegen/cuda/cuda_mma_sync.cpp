// The warp-level mma.sync main loop of a tensor-core kernel (cuda_mma_body.h): a ring of
// kStages padded slices, each warp's fragments read from shared memory and multiplied in 16x8
// tiles, m16n8k16 for 16-bit operands and m16n8k8 for tf32.
#include "cuda_mma_body.h"

namespace sinter::codegen::cuda {

namespace {

/// The fragments of slice `stage` at reduction step kk: A's (and B's) registers, with the tf32
/// remainders when the format splits.
void printFragments(std::ostringstream &out, const SliceStaging &staging, const MmaFormat &format, int mTiles,
                    int nTiles) {
  const StagedOperand &lhs = staging.lhs(), &rhs = staging.rhs();
  // Fragments (PTX ISA, mma.m16n8k16 with .f16/.bf16): lane = 4 * group + quad; A's registers
  // hold rows group and group + 8 at columns 2 * quad (+1) and 2 * quad + 8 (+1); B's hold
  // column group at rows 2 * quad (+1) and 2 * quad + 8 (+1); the f32 sums are rows group and
  // group + 8 at columns 2 * quad (+1). ldmatrix.x2.trans of two 8x8 k-major blocks gives B's
  // two registers directly: lanes 0-15 name the blocks' rows kk .. kk + 15.
  // m16n8k8 with .tf32: A's registers hold rows group and group + 8 at columns quad and
  // quad + 4; B's hold column group at rows quad and quad + 4; the sums are laid out as above.
  out << "      unsigned a[" << mTiles << "][4], b[" << nTiles << "][2];\n";
  if (format.split)
    out << "      unsigned aRest[" << mTiles << "][4], bRest[" << nTiles << "][2];\n";
  // An f32 element of a slice into its tf32 fragment register (and remainder, when split).
  auto tf32 = [&](const std::string &element, const std::string &fragment, const std::string &rest) {
    if (format.split)
      return "sn_tf32_split(" + element + ", " + fragment + ", " + rest + ");";
    return fragment + " = sn_tf32(" + element + ");";
  };
  if (format.tf32()) {
    const std::string below = std::to_string(8 * lhs.rowLength);
    out << "#pragma unroll\n      for (int p = 0; p < " << mTiles << "; ++p) {\n"
        << "        const float *top = &sA[stage][warpRow + p * 16 + group][kk + quad];\n"
        << "        " << tf32("top[0]", "a[p][0]", "aRest[p][0]") << "\n"
        << "        " << tf32("top[" + below + "]", "a[p][1]", "aRest[p][1]") << "\n"
        << "        " << tf32("top[4]", "a[p][2]", "aRest[p][2]") << "\n"
        << "        " << tf32("top[" + below + " + 4]", "a[p][3]", "aRest[p][3]") << "\n"
        << "      }\n";
    out << "#pragma unroll\n      for (int q = 0; q < " << nTiles << "; ++q) {\n";
    if (rhs.staging == Staging::VectorMN)
      out << "        const float *column = &sB[stage][kk + quad][warpColumn + q * 8 + group];\n"
          << "        " << tf32("column[0]", "b[q][0]", "bRest[q][0]") << "\n"
          << "        " << tf32("column[" + std::to_string(4 * rhs.rowLength) + "]", "b[q][1]", "bRest[q][1]") << "\n";
    else
      out << "        const float *column = &sB[stage][warpColumn + q * 8 + group][kk + quad];\n"
          << "        " << tf32("column[0]", "b[q][0]", "bRest[q][0]") << "\n"
          << "        " << tf32("column[4]", "b[q][1]", "bRest[q][1]") << "\n";
    out << "      }\n";
    return;
  }
  out << "#pragma unroll\n      for (int p = 0; p < " << mTiles << "; ++p) {\n"
      << "        const unsigned short *top = &sA[stage][warpRow + p * 16 + group][kk + 2 * quad];\n"
      << "        a[p][0] = *reinterpret_cast<const unsigned *>(top);\n"
      << "        a[p][1] = *reinterpret_cast<const unsigned *>(top + 8 * " << lhs.rowLength << ");\n"
      << "        a[p][2] = *reinterpret_cast<const unsigned *>(top + 8);\n"
      << "        a[p][3] = *reinterpret_cast<const unsigned *>(top + 8 * " << lhs.rowLength << " + 8);\n"
      << "      }\n";
  out << "#pragma unroll\n      for (int q = 0; q < " << nTiles << "; ++q) {\n";
  if (rhs.staging == Staging::VectorMN) {
    out << "        sn_ldmatrix_x2_trans(b[q], &sB[stage][kk + lane % 16][warpColumn + q * 8]);\n";
  } else {
    out << "        const unsigned short *column = &sB[stage][warpColumn + q * 8 + group][kk + 2 * quad];\n"
        << "        b[q][0] = *reinterpret_cast<const unsigned *>(column);\n"
        << "        b[q][1] = *reinterpret_cast<const unsigned *>(column + 8);\n";
  }
  out << "      }\n";
}

/// Each warp's 16x8 tiles times the fragments, into acc (for a split format, three products a
/// step summed from zero first).
void printProducts(std::ostringstream &out, const MmaFormat &format, int mTiles, int nTiles) {
  auto mma = [&](const char *sums, const char *a, const char *b) {
    out << "          asm volatile(\"" << format.mma
        << " {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\"\n"
        << "                       : \"+f\"(" << sums << "[0]), \"+f\"(" << sums << "[1]), \"+f\"(" << sums
        << "[2]), \"+f\"(" << sums << "[3])\n"
        << "                       : \"r\"(" << a << "[p][0]), \"r\"(" << a << "[p][1]), \"r\"(" << a << "[p][2]), \"r\"("
        << a << "[p][3]), \"r\"(" << b << "[q][0]), \"r\"(" << b << "[q][1]));\n";
  };
  out << "#pragma unroll\n      for (int p = 0; p < " << mTiles << "; ++p)\n"
      << "#pragma unroll\n        for (int q = 0; q < " << nTiles << "; ++q)";
  if (format.split) {
    // The tensor cores add into their accumulator with truncation, not rounding to nearest: a
    // bias of up to an ulp of the running sum per step, which grew with k to 2e-5 (relative
    // L2) at k = 3072. So each step's three products (the remainders' first: they are the
    // smallest terms) are summed from zero and added to the running sum by a rounding FADD; the
    // truncation is then relative to one step's sum, and the error is the f32 FMA kernel's.
    out << " {\n          float step[4] = {0.f, 0.f, 0.f, 0.f};\n";
    mma("step", "aRest", "b");
    mma("step", "a", "bRest");
    mma("step", "a", "b");
    out << "#pragma unroll\n          for (int c = 0; c < 4; ++c) acc[p][q][c] += step[c];\n";
    out << "        }\n";
  } else {
    out << "\n";
    mma("acc[p][q]", "a", "b");
  }
}

} // namespace

void printMmaSyncLoop(std::ostringstream &out, SliceStaging &staging, const MmaFormat &format, const MmaTile &tile,
                      int mTiles, int nTiles) {
  const int64_t kTiles = staging.kTiles();
  const SliceRequest request = [&](const std::string &stage, const char *k, const std::string &indent) {
    staging.request(stage, k, indent);
  };
  // The ring: slices 0 .. STAGES-2 are requested first; then at step t the warps wait for slice
  // t, request slice t + STAGES - 1 into the place slice t - 1 left, multiply slice t, and store
  // the scalar operands' registers for slice t + STAGES - 1.
  printRingPrologue(out, kStages - 1, kTiles, tile.bk, request);
  out << mainLoopUnroll(kTiles) << "  for (int t = 0; t < " << kTiles << "; ++t) {\n";
  out << "    sn_cp_async_wait<" << kStages - 2 << ">();\n    __syncthreads();\n";
  out << "    const int stage = (int)(t % " << kStages << "), nextStage = (int)((t + " << kStages - 1 << ") % "
      << kStages << ");\n";
  out << "    const bool more = t + " << kStages - 1 << " < " << kTiles << "LL;\n";
  out << "    if (more) {\n      const long long next = (long long)(t + " << kStages - 1 << ") * " << tile.bk << ";\n";
  staging.issue("nextStage", "next", "      ");
  out << "    }\n    sn_cp_async_commit<0>();\n";
  out << "#pragma unroll\n    for (int kk = 0; kk < " << tile.bk << "; kk += " << format.kStep << ") {\n";
  printFragments(out, staging, format, mTiles, nTiles);
  printProducts(out, format, mTiles, nTiles);
  out << "    }\n";
  if (staging.anyRegisterStaged()) {
    out << "    if (more) {\n";
    for (const StagedOperand *o : {&staging.lhs(), &staging.rhs()})
      if (SliceStaging::registerStaged(*o))
        staging.storeStaged(*o, "nextStage", "      ");
    out << "    }\n";
  }
  out << "  }\n";
}

} // namespace sinter::codegen::cuda
