#include "cuda_contraction.h"

#include "cuda_source.h"

#include <sstream>

namespace sinter::codegen::cuda {

namespace {

constexpr TileShape kTiles[] = {
    {128, 128, 8, 8, 8}, // 256 threads, 64 accumulators each
    {64, 64, 16, 4, 4},  // 256 threads, 16 each
    {32, 32, 16, 4, 4},  // 64 threads, 16 each
};
/// Enough warps to hide latency on the GPUs sinter targets: 8 per SM on an H100/H200's 132.
constexpr int64_t kEnoughWarps = 1024;

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t warpsFor(const ContractionSpec &spec, const TileShape &tile) {
  return ceilDiv(spec.m, tile.bm) * ceilDiv(spec.n, tile.bn) * spec.batch * tile.threads() / 32;
}

} // namespace

TileShape chooseTile(const ContractionSpec &spec) {
  for (const TileShape &tile : kTiles)
    if (warpsFor(spec, tile) >= kEnoughWarps)
      return tile;
  // Too few warps even with the smallest tile: more warps per block, each group on a share of
  // the reduction, when the reduction is deep enough to give each slice several stages.
  TileShape tile = kTiles[std::size(kTiles) - 1];
  for (int slices : {4, 2})
    if (spec.k >= int64_t(slices) * tile.bk * 2) {
      tile.slices = slices;
      break;
    }
  return tile;
}

bool fitsGrid(const ContractionSpec &spec, const TileShape &tile) {
  return spec.batch <= 65535 && ceilDiv(spec.m, tile.bm) <= 65535 &&
         ceilDiv(spec.n, tile.bn) <= (int64_t(1) << 31) - 1;
}

std::string printTiledContraction(const Contraction &contraction, const TileShape &tile,
                                  LaunchShape &launch) {
  const ContractionSpec &spec = contraction.spec;
  const Kernel &kernel = contraction.kernel;
  CudaPrinter printer;
  // The loops below only evaluate lhs, rhs and the epilogue for b, i, j, r inside their extents.
  IndexRanges ranges(kernel);
  ranges.setVariable(spec.b, {0, spec.batch - 1});
  ranges.setVariable(spec.i, {0, spec.m - 1});
  ranges.setVariable(spec.j, {0, spec.n - 1});
  ranges.setVariable(spec.r, {0, spec.k - 1});
  printer.setRanges(&ranges);
  std::string type = cudaStorageType(spec.type);
  auto v = [](int id) { return "v" + std::to_string(id); };
  const int threads = tile.threads(), sliceThreads = tile.sliceThreads();
  const int rowThreads = tile.bm / tile.tm, columnThreads = tile.bn / tile.tn;
  // Four words of padding keep the transposing stores into shared memory free of bank conflicts
  // for BK = 8 and 2-way at worst for BK = 16.
  const int pad = 4;

  const int slices = tile.slices, stageDepth = slices * tile.bk;
  std::ostringstream out;
  out << printer.signature(kernel, threads);
  out << "  // contraction: batch " << spec.batch << ", m " << spec.m << ", n " << spec.n << ", k "
      << spec.k << "; tile " << tile.bm << "x" << tile.bn << "x" << tile.bk << ", " << tile.tm << "x"
      << tile.tn << " per thread, " << slices << " reduction slice(s)\n";
  out << "  __shared__ " << type << " sA[" << slices << "][" << tile.bk << "][" << tile.bm + pad << "];\n";
  out << "  __shared__ " << type << " sB[" << slices << "][" << tile.bk << "][" << tile.bn + pad << "];\n";
  out << printer.locals(kernel, 1);
  out << "  const int tid = threadIdx.x;\n";
  out << "  const int slice = tid / " << sliceThreads << ", local = tid % " << sliceThreads << ";\n";
  out << "  const int tx = local % " << columnThreads << ", ty = local / " << columnThreads << ";\n";
  out << "  const long long rowBase = (long long)blockIdx.y * " << tile.bm
      << ", columnBase = (long long)blockIdx.x * " << tile.bn << ";\n";
  out << "  " << v(spec.b) << " = blockIdx.z;\n";
  out << "  " << type << " acc[" << tile.tm << "][" << tile.tn << "];\n";
  out << "#pragma unroll\n  for (int p = 0; p < " << tile.tm << "; ++p)\n"
      << "#pragma unroll\n    for (int q = 0; q < " << tile.tn << "; ++q) acc[p][q] = 0;\n";
  out << "  for (long long k0 = 0; k0 < " << spec.k << "LL; k0 += " << stageDepth << ") {\n";
  // Stage lhs[rowBase.., k0..] and rhs[k0.., columnBase..] for every slice, consecutive threads
  // walking the operand's unit-stride direction so global reads coalesce.
  auto stage = [&](const char *shared, int extent, bool unitStrideK, int indexVar, const char *base,
                   int64_t limit, const ExprRef &value) {
    out << "    for (int e = tid; e < " << extent * stageDepth << "; e += " << threads << ") {\n";
    if (unitStrideK)
      out << "      const int kk = e % " << stageDepth << ", ii = e / " << stageDepth << ";\n";
    else
      out << "      const int kk = e / " << extent << ", ii = e % " << extent << ";\n";
    out << "      " << v(indexVar) << " = " << base << " + ii; " << v(spec.r) << " = k0 + kk;\n";
    out << "      " << shared << "[kk / " << tile.bk << "][kk % " << tile.bk << "][ii] = (" << v(indexVar)
        << " < " << limit << "LL && " << v(spec.r) << " < " << spec.k << "LL) ? " << printer.expr(value)
        << " : (" << type << ")0;\n";
    out << "    }\n";
  };
  stage("sA", tile.bm, spec.lhsUnitStrideK, spec.i, "rowBase", spec.m, spec.lhs);
  stage("sB", tile.bn, spec.rhsUnitStrideK, spec.j, "columnBase", spec.n, spec.rhs);
  out << "    __syncthreads();\n";
  out << "#pragma unroll\n    for (int rr = 0; rr < " << tile.bk << "; ++rr) {\n";
  out << "      " << type << " a[" << tile.tm << "], b[" << tile.tn << "];\n";
  out << "#pragma unroll\n      for (int p = 0; p < " << tile.tm << "; ++p) a[p] = sA[slice][rr][ty + p * "
      << rowThreads << "];\n";
  out << "#pragma unroll\n      for (int q = 0; q < " << tile.tn << "; ++q) b[q] = sB[slice][rr][tx + q * "
      << columnThreads << "];\n";
  out << "#pragma unroll\n      for (int p = 0; p < " << tile.tm << "; ++p)\n"
      << "#pragma unroll\n        for (int q = 0; q < " << tile.tn << "; ++q) acc[p][q] += a[p] * b[q];\n";
  out << "    }\n    __syncthreads();\n  }\n";
  if (slices > 1) {
    // Slices 1.. hand their sums to slice 0 through shared memory; slice 0 adds them in order.
    out << "  __shared__ " << type << " partial[" << slices - 1 << "][" << tile.tm * tile.tn << "]["
        << sliceThreads << "];\n";
    out << "  if (slice > 0) {\n";
    out << "#pragma unroll\n    for (int p = 0; p < " << tile.tm << "; ++p)\n"
        << "#pragma unroll\n      for (int q = 0; q < " << tile.tn << "; ++q) partial[slice - 1][p * "
        << tile.tn << " + q][local] = acc[p][q];\n";
    out << "  }\n  __syncthreads();\n  if (slice > 0) return;\n";
    out << "  for (int s = 0; s < " << slices - 1 << "; ++s)\n";
    out << "#pragma unroll\n    for (int p = 0; p < " << tile.tm << "; ++p)\n"
        << "#pragma unroll\n      for (int q = 0; q < " << tile.tn << "; ++q) acc[p][q] += partial[s][p * "
        << tile.tn << " + q][local];\n";
  }
  // Each thread's rows are ty + p * rowThreads and columns tx + q * columnThreads: a warp's
  // stores cover consecutive columns.
  out << "#pragma unroll\n  for (int p = 0; p < " << tile.tm << "; ++p)\n"
      << "#pragma unroll\n    for (int q = 0; q < " << tile.tn << "; ++q) {\n";
  out << "      " << v(spec.i) << " = rowBase + ty + p * " << rowThreads << "; " << v(spec.j)
      << " = columnBase + tx + q * " << columnThreads << ";\n";
  out << "      if (" << v(spec.i) << " < " << spec.m << "LL && " << v(spec.j) << " < " << spec.n
      << "LL) {\n";
  out << "        " << v(spec.acc) << " = acc[p][q];\n";
  out << printer.statements(spec.epilogue, 4);
  out << "      }\n    }\n}\n";

  launch.grid[0] = uint32_t(ceilDiv(spec.n, tile.bn));
  launch.grid[1] = uint32_t(ceilDiv(spec.m, tile.bm));
  launch.grid[2] = uint32_t(spec.batch);
  launch.block[0] = uint32_t(threads);
  launch.parallelExtent = spec.batch * spec.m * spec.n;
  return out.str();
}

} // namespace sinter::codegen::cuda
