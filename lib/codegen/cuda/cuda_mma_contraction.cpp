// Tensor-core contractions: the tiled kernel of cuda_contraction.cpp with its products done by
// warp-level `mma.sync.m16n8k16` (f16 or bf16 operands, f32 accumulators) instead of per-thread
// FMAs. Taken only when both operands hold values the 16-bit type represents exactly (they were
// loaded from 16-bit storage), so the products are the ones the f32 kernel computes; only the
// order of the f32 additions differs.
#include "cuda_contraction.h"

#include "cuda_source.h"

#include <sstream>

namespace sinter::codegen::cuda {

namespace {

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool sameValue(const Expr &a, double value) {
  return a.kind == ExprKind::Constant && isFloat(a.type) && a.floatValue == value;
}

/// Whether every value `e` can take is exactly a value of `half`: a widening of a `half` value,
/// or zero, or a choice between such.
bool exactIn(const ExprRef &e, DType half) {
  switch (e->kind) {
  case ExprKind::Cast: return e->operands[0]->type == half;
  case ExprKind::Constant: return sameValue(*e, 0.0);
  case ExprKind::Select: return exactIn(e->operands[1], half) && exactIn(e->operands[2], half);
  default: return false;
  }
}

constexpr MmaTile kMmaTiles[] = {
    {128, 128, 32, 2, 4}, // 8 warps, each 64x32: 4x4 mma tiles
    {64, 64, 32, 2, 2},   // 4 warps, each 32x32: 2x4
    {32, 64, 32, 1, 2},   // 2 warps, each 32x32
};

/// A block per SM at least: the H100/H200 has 132.
constexpr int64_t kEnoughBlocks = 132;

} // namespace

std::optional<DType> mmaOperandType(const ContractionSpec &spec) {
  if (spec.type != DType::Float32 || spec.k < 16)
    return std::nullopt;
  for (DType half : {DType::Float16, DType::BFloat16})
    if (exactIn(spec.lhs, half) && exactIn(spec.rhs, half))
      return half;
  return std::nullopt;
}

MmaTile chooseMmaTile(const ContractionSpec &spec) {
  for (const MmaTile &tile : kMmaTiles)
    if (ceilDiv(spec.m, tile.bm) * ceilDiv(spec.n, tile.bn) * spec.batch >= kEnoughBlocks)
      return tile;
  return kMmaTiles[std::size(kMmaTiles) - 1];
}

bool fitsGrid(const ContractionSpec &spec, const MmaTile &tile) {
  return spec.batch <= 65535 && ceilDiv(spec.m, tile.bm) <= 65535 &&
         ceilDiv(spec.n, tile.bn) <= (int64_t(1) << 31) - 1;
}

std::string printMmaContraction(const Contraction &contraction, const MmaTile &tile, DType half,
                                LaunchShape &launch) {
  const ContractionSpec &spec = contraction.spec;
  const Kernel &kernel = contraction.kernel;
  CudaPrinter printer;
  IndexRanges ranges(kernel);
  ranges.setVariable(spec.b, {0, spec.batch - 1});
  ranges.setVariable(spec.i, {0, spec.m - 1});
  ranges.setVariable(spec.j, {0, spec.n - 1});
  ranges.setVariable(spec.r, {0, spec.k - 1});
  printer.setRanges(&ranges);
  auto v = [](int id) { return "v" + std::to_string(id); };
  const int threads = tile.threads();
  const int warpRows = tile.bm / tile.warpsM, warpColumns = tile.bn / tile.warpsN;
  const int mTiles = warpRows / 16, nTiles = warpColumns / 8;
  // Rows of shared memory hold BK reduction steps plus 8 halves of padding: 20 words a row for
  // BK = 32, so the eight rows a fragment read touches start in eight different bank quads.
  const int row = tile.bk + 8;
  const char *mmaType = half == DType::Float16 ? "f16" : "bf16";
  const char *toHalf = half == DType::Float16 ? "sn_f2h" : "sn_f2bf";

  std::ostringstream out;
  // No cap on registers: the accumulators, fragments and staged loads take ~190, so one block of
  // eight warps per SM; capping them at 128 for two blocks spills.
  out << printer.signature(kernel, threads);
  out << "  // contraction on tensor cores (" << mmaType << " operands, f32 sums): batch " << spec.batch
      << ", m " << spec.m << ", n " << spec.n << ", k " << spec.k << "; tile " << tile.bm << "x"
      << tile.bn << "x" << tile.bk << ", " << tile.warpsM << "x" << tile.warpsN << " warps of "
      << warpRows << "x" << warpColumns << "\n";
  out << "  __shared__ __align__(16) unsigned short sA[2][" << tile.bm << "][" << row << "];\n";
  out << "  __shared__ __align__(16) unsigned short sB[2][" << tile.bn << "][" << row << "];\n";
  out << printer.locals(kernel, 1);
  out << "  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;\n";
  out << "  const int group = lane / 4, quad = lane % 4;\n";
  out << "  const int warpRow = (warp / " << tile.warpsN << ") * " << warpRows
      << ", warpColumn = (warp % " << tile.warpsN << ") * " << warpColumns << ";\n";
  out << "  const long long rowBase = (long long)blockIdx.y * " << tile.bm
      << ", columnBase = (long long)blockIdx.x * " << tile.bn << ";\n";
  out << "  " << v(spec.b) << " = blockIdx.z;\n";
  out << "  float acc[" << mTiles << "][" << nTiles << "][4];\n";
  out << "#pragma unroll\n  for (int p = 0; p < " << mTiles << "; ++p)\n"
      << "#pragma unroll\n    for (int q = 0; q < " << nTiles << "; ++q)\n"
      << "#pragma unroll\n      for (int c = 0; c < 4; ++c) acc[p][q][c] = 0.f;\n";

  // Staging. Each thread moves runs of `run` consecutive reduction steps of one row (lhs) or
  // column (rhs) from global memory to registers, as 16-bit values packed two to a word, and
  // stores each run into shared memory with one wide store. An operand whose reduction index
  // is its unit stride moves pairs: consecutive threads read consecutive addresses. The other
  // moves runs of 8: consecutive threads read consecutive rows of one step (coalesced too), and
  // a run's 16-byte store lands in a different bank quad for each of eight adjacent rows.
  struct Operand {
    const char *shared, *registers, *base;
    int extent, indexVar;
    bool unitStrideK;
    int64_t limit;
    ExprRef value;
  };
  const Operand operands[] = {
      {"sA", "ra", "rowBase", tile.bm, spec.i, spec.lhsUnitStrideK, spec.m, spec.lhs},
      {"sB", "rb", "columnBase", tile.bn, spec.j, spec.rhsUnitStrideK, spec.n, spec.rhs}};
  auto runLength = [](const Operand &o) { return o.unitStrideK ? 2 : 8; };
  auto runs = [&](const Operand &o) { return o.extent * tile.bk / runLength(o) / threads; };
  // The 16-bit pattern of a staged value: the stored bits when the operand reads 16-bit storage
  // directly, else the f32 value narrowed (exactly, by mmaOperandType's check).
  auto bits = [&](const ExprRef &value) {
    if (value->kind == ExprKind::Cast && value->operands[0]->type == half)
      return printer.expr(value->operands[0]);
    return std::string(toHalf) + "(" + printer.expr(value) + ")";
  };
  auto runPosition = [&](const Operand &o, const std::string &indent) {
    int length = runLength(o), perRow = tile.bk / length;
    out << indent << "const int e = tid + u * " << threads << ";\n";
    if (o.unitStrideK)
      out << indent << "const int kk = (e % " << perRow << ") * " << length << ", ii = e / " << perRow << ";\n";
    else
      out << indent << "const int kk = (e / " << o.extent << ") * " << length << ", ii = e % " << o.extent << ";\n";
  };
  auto load = [&](const Operand &o, const char *k) {
    int length = runLength(o);
    out << "#pragma unroll\n    for (int u = 0; u < " << runs(o) << "; ++u) {\n";
    runPosition(o, "      ");
    out << "      " << v(o.indexVar) << " = " << o.base << " + ii;\n";
    out << "#pragma unroll\n      for (int s = 0; s < " << length << "; ++s) {\n";
    out << "        " << v(spec.r) << " = " << k << " + kk + s;\n";
    out << "        const unsigned short h = (" << v(o.indexVar) << " < " << o.limit << "LL && "
        << v(spec.r) << " < " << spec.k << "LL) ? (unsigned short)" << bits(o.value)
        << " : (unsigned short)0;\n";
    out << "        if (s % 2 == 0) " << o.registers << "[u * " << length / 2 << " + s / 2] = h;\n"
        << "        else " << o.registers << "[u * " << length / 2 << " + s / 2] |= (unsigned)h << 16;\n";
    out << "      }\n    }\n";
  };
  auto store = [&](const Operand &o, const char *stage) {
    int length = runLength(o);
    out << "#pragma unroll\n    for (int u = 0; u < " << runs(o) << "; ++u) {\n";
    runPosition(o, "      ");
    if (length == 2)
      out << "      *reinterpret_cast<unsigned *>(&" << o.shared << "[" << stage << "][ii][kk]) = "
          << o.registers << "[u];\n";
    else
      out << "      *reinterpret_cast<uint4 *>(&" << o.shared << "[" << stage << "][ii][kk]) = uint4{"
          << o.registers << "[u * 4], " << o.registers << "[u * 4 + 1], " << o.registers << "[u * 4 + 2], "
          << o.registers << "[u * 4 + 3]};\n";
    out << "    }\n";
  };
  for (const Operand &o : operands)
    out << "  unsigned " << o.registers << "[" << runs(o) * runLength(o) / 2 << "];\n";
  out << "  {\n    const long long k0 = 0;\n";
  for (const Operand &o : operands)
    load(o, "k0");
  for (const Operand &o : operands)
    store(o, "0");
  out << "  }\n  __syncthreads();\n";
  out << "  int stage = 0;\n";
  out << "  for (long long k0 = 0; k0 < " << spec.k << "LL; k0 += " << tile.bk << ", stage ^= 1) {\n";
  out << "    const bool more = k0 + " << tile.bk << " < " << spec.k << "LL;\n";
  out << "    if (more) {\n      const long long next = k0 + " << tile.bk << ";\n";
  for (const Operand &o : operands)
    load(o, "next");
  out << "    }\n";
  // Fragments (PTX ISA, mma.m16n8k16 with .f16/.bf16): lane = 4 * group + quad; A's registers
  // hold rows group and group + 8 at columns 2 * quad (+1) and 2 * quad + 8 (+1); B's hold
  // column group at rows 2 * quad (+1) and 2 * quad + 8 (+1); the f32 sums are rows group and
  // group + 8 at columns 2 * quad (+1).
  out << "#pragma unroll\n    for (int kk = 0; kk < " << tile.bk << "; kk += 16) {\n";
  out << "      unsigned a[" << mTiles << "][4], b[" << nTiles << "][2];\n";
  out << "#pragma unroll\n      for (int p = 0; p < " << mTiles << "; ++p) {\n"
      << "        const unsigned short *top = &sA[stage][warpRow + p * 16 + group][kk + 2 * quad];\n"
      << "        a[p][0] = *reinterpret_cast<const unsigned *>(top);\n"
      << "        a[p][1] = *reinterpret_cast<const unsigned *>(top + 8 * " << row << ");\n"
      << "        a[p][2] = *reinterpret_cast<const unsigned *>(top + 8);\n"
      << "        a[p][3] = *reinterpret_cast<const unsigned *>(top + 8 * " << row << " + 8);\n"
      << "      }\n";
  out << "#pragma unroll\n      for (int q = 0; q < " << nTiles << "; ++q) {\n"
      << "        const unsigned short *column = &sB[stage][warpColumn + q * 8 + group][kk + 2 * quad];\n"
      << "        b[q][0] = *reinterpret_cast<const unsigned *>(column);\n"
      << "        b[q][1] = *reinterpret_cast<const unsigned *>(column + 8);\n"
      << "      }\n";
  out << "#pragma unroll\n      for (int p = 0; p < " << mTiles << "; ++p)\n"
      << "#pragma unroll\n        for (int q = 0; q < " << nTiles << "; ++q)\n"
      << "          asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32." << mmaType << "." << mmaType
      << ".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\"\n"
      << "                       : \"+f\"(acc[p][q][0]), \"+f\"(acc[p][q][1]), \"+f\"(acc[p][q][2]), \"+f\"(acc[p][q][3])\n"
      << "                       : \"r\"(a[p][0]), \"r\"(a[p][1]), \"r\"(a[p][2]), \"r\"(a[p][3]), \"r\"(b[q][0]), \"r\"(b[q][1]));\n";
  out << "    }\n";
  out << "    if (more) {\n";
  for (const Operand &o : operands)
    store(o, "stage ^ 1");
  out << "    }\n    __syncthreads();\n  }\n";

  out << "#pragma unroll\n  for (int p = 0; p < " << mTiles << "; ++p)\n"
      << "#pragma unroll\n    for (int q = 0; q < " << nTiles << "; ++q)\n"
      << "#pragma unroll\n      for (int c = 0; c < 4; ++c) {\n";
  out << "        " << v(spec.i) << " = rowBase + warpRow + p * 16 + group + (c / 2) * 8; " << v(spec.j)
      << " = columnBase + warpColumn + q * 8 + 2 * quad + c % 2;\n";
  out << "        if (" << v(spec.i) << " < " << spec.m << "LL && " << v(spec.j) << " < " << spec.n
      << "LL) {\n";
  out << "          " << v(spec.acc) << " = acc[p][q][c];\n";
  out << printer.statements(spec.epilogue, 5);
  out << "        }\n      }\n}\n";

  launch.grid[0] = uint32_t(ceilDiv(spec.n, tile.bn));
  launch.grid[1] = uint32_t(ceilDiv(spec.m, tile.bm));
  launch.grid[2] = uint32_t(spec.batch);
  launch.block[0] = uint32_t(threads);
  launch.parallelExtent = spec.batch * spec.m * spec.n;
  return out.str();
}

} // namespace sinter::codegen::cuda
