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

bool fitsGrid(const ContractionSpec &spec, int bm, int bn) {
  return spec.batch <= 65535 && ceilDiv(spec.m, bm) <= 65535 && ceilDiv(spec.n, bn) <= (int64_t(1) << 31) - 1;
}

void setTiledLaunch(const ContractionSpec &spec, int bm, int bn, int threads, LaunchShape &launch) {
  launch.grid[0] = uint32_t(ceilDiv(spec.n, bn));
  launch.grid[1] = uint32_t(ceilDiv(spec.m, bm));
  launch.grid[2] = uint32_t(spec.batch);
  launch.block[0] = uint32_t(threads);
  launch.parallelExtent = spec.batch * spec.m * spec.n;
}

std::string printEpilogue(CudaPrinter &printer, const ContractionSpec &spec, const std::string &accumulator,
                          int depth, bool testBounds) {
  std::string pad(2 * depth, ' ');
  std::string open = "{";
  if (testBounds)
    open = "if (v" + std::to_string(spec.i) + " < " + std::to_string(spec.m) + "LL && v" + std::to_string(spec.j) +
           " < " + std::to_string(spec.n) + "LL) {";
  return pad + open + "\n" + pad + "  v" + std::to_string(spec.acc) + " = " + accumulator + ";\n" +
         printer.statements(spec.epilogue, depth + 1) + pad + "}\n";
}

std::string printTiledContraction(const Contraction &contraction, const TileShape &tile,
                                  LaunchShape &launch) {
  const ContractionSpec &spec = contraction.spec;
  const Kernel &kernel = contraction.kernel;
  CudaPrinter printer;
  IndexRanges ranges(kernel);
  setContractionRanges(ranges, spec);
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
  // Two blocks per SM: one block's loads and barriers overlap the other's arithmetic.
  out << printer.signature(kernel, threads, 2);
  out << "  // contraction: batch " << spec.batch << ", m " << spec.m << ", n " << spec.n << ", k "
      << spec.k << "; tile " << tile.bm << "x" << tile.bn << "x" << tile.bk << ", " << tile.tm << "x"
      << tile.tn << " per thread, " << slices << " reduction slice(s)\n";
  // Two stages of shared memory: while the block multiplies one, the next is written into the
  // other, so one barrier per stage suffices.
  out << "  __shared__ __align__(16) " << type << " sA[2][" << slices << "][" << tile.bk << "][" << tile.bm + pad << "];\n";
  out << "  __shared__ __align__(16) " << type << " sB[2][" << slices << "][" << tile.bk << "][" << tile.bn + pad << "];\n";
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
  // Global loads for the next stage go to registers while this stage's products run from shared
  // memory, so their latency hides behind the arithmetic; the registers go to the other stage's
  // shared memory after the products. Consecutive threads walk the operand's unit-stride
  // direction so the global reads coalesce.
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
  auto perThread = [&](const Operand &o) { return (o.extent * stageDepth + threads - 1) / threads; };
  // An operand read from 16-bit storage is staged as read and widened when stored to shared
  // memory, so that no conversion waits on a load before the next load is issued (converting
  // each value as it arrived made the f16 kernels twice as slow as the f32 ones).
  auto widened = [&](const Operand &o) -> const char * {
    if (spec.type != DType::Float32 || o.value->kind != ExprKind::Cast)
      return nullptr;
    DType from = o.value->operands[0]->type;
    return from == DType::Float16 ? "sn_h2f" : from == DType::BFloat16 ? "sn_bf2f" : nullptr;
  };
  auto element = [&](const Operand &o, const std::string &indent) {
    int total = o.extent * stageDepth;
    out << indent << "const int e = tid + u * " << threads << ";\n";
    if (total % threads != 0)
      out << indent << "if (e >= " << total << ") continue;\n";
    if (o.unitStrideK)
      out << indent << "const int kk = e % " << stageDepth << ", ii = e / " << stageDepth << ";\n";
    else
      out << indent << "const int kk = e / " << o.extent << ", ii = e % " << o.extent << ";\n";
  };
  auto load = [&](const Operand &o, const char *k) {
    out << "#pragma unroll\n    for (int u = 0; u < " << perThread(o) << "; ++u) {\n";
    element(o, "      ");
    out << "      " << v(o.indexVar) << " = " << o.base << " + ii; " << v(spec.r) << " = " << k
        << " + kk;\n";
    CudaPrinter::Line value = printer.line({widened(o) ? o.value->operands[0] : o.value}, "      ", true);
    out << value.definitions << "      " << o.registers << "[u] = (" << v(o.indexVar) << " < " << o.limit << "LL && "
        << v(spec.r) << " < " << spec.k << "LL) ? " << value.texts[0] << " : 0;\n    }\n";
  };
  auto store = [&](const Operand &o, const char *stage) {
    out << "#pragma unroll\n    for (int u = 0; u < " << perThread(o) << "; ++u) {\n";
    element(o, "      ");
    out << "      " << o.shared << "[" << stage << "][kk / " << tile.bk << "][kk % " << tile.bk
        << "][ii] = " << (widened(o) ? std::string(widened(o)) + "(" + o.registers + "[u])" : std::string(o.registers) + "[u]")
        << ";\n    }\n";
  };
  for (const Operand &o : operands)
    out << "  " << (widened(o) ? "unsigned short" : type) << " " << o.registers << "[" << perThread(o) << "];\n";
  out << "  {\n    const long long k0 = 0;\n";
  for (const Operand &o : operands)
    load(o, "k0");
  for (const Operand &o : operands)
    store(o, "0");
  out << "  }\n  __syncthreads();\n";
  out << "  int stage = 0;\n";
  out << "  for (long long k0 = 0; k0 < " << spec.k << "LL; k0 += " << stageDepth << ", stage ^= 1) {\n";
  out << "    const bool more = k0 + " << stageDepth << " < " << spec.k << "LL;\n";
  out << "    if (more) {\n";
  out << "      const long long next = k0 + " << stageDepth << ";\n";
  for (const Operand &o : operands)
    load(o, "next");
  out << "    }\n";
  // A thread's rows are groups of four adjacent ones, ty * 4 + (p % 4), the groups
  // 4 * rowThreads apart (likewise its columns), so each group is one 16-byte shared read and a
  // warp's reads of sB cover consecutive words.
  auto fragment = [&](const char *shared, const char *name, int count, const char *thread, int threadsAcross) {
    if (spec.type == DType::Float32) {
      out << "#pragma unroll\n      for (int g = 0; g < " << count / 4 << "; ++g) {\n"
          << "        const float4 f = *reinterpret_cast<const float4 *>(&" << shared
          << "[stage][slice][rr][g * " << 4 * threadsAcross << " + " << thread << " * 4]);\n"
          << "        " << name << "[g * 4] = f.x; " << name << "[g * 4 + 1] = f.y; " << name
          << "[g * 4 + 2] = f.z; " << name << "[g * 4 + 3] = f.w;\n      }\n";
    } else {
      out << "#pragma unroll\n      for (int p = 0; p < " << count << "; ++p) " << name << "[p] = "
          << shared << "[stage][slice][rr][(p / 4) * " << 4 * threadsAcross << " + " << thread
          << " * 4 + p % 4];\n";
    }
  };
  out << "#pragma unroll\n    for (int rr = 0; rr < " << tile.bk << "; ++rr) {\n";
  out << "      " << type << " a[" << tile.tm << "], b[" << tile.tn << "];\n";
  fragment("sA", "a", tile.tm, "ty", rowThreads);
  fragment("sB", "b", tile.tn, "tx", columnThreads);
  out << "#pragma unroll\n      for (int p = 0; p < " << tile.tm << "; ++p)\n"
      << "#pragma unroll\n        for (int q = 0; q < " << tile.tn << "; ++q) acc[p][q] += a[p] * b[q];\n";
  out << "    }\n";
  out << "    if (more) {\n";
  for (const Operand &o : operands)
    store(o, "stage ^ 1");
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
  // The same row and column mapping as the fragments: a warp's stores of one q cover runs of
  // four consecutive columns.
  out << "#pragma unroll\n  for (int p = 0; p < " << tile.tm << "; ++p)\n"
      << "#pragma unroll\n    for (int q = 0; q < " << tile.tn << "; ++q) {\n";
  out << "      " << v(spec.i) << " = rowBase + (p / 4) * " << 4 * rowThreads << " + ty * 4 + p % 4; "
      << v(spec.j) << " = columnBase + (q / 4) * " << 4 * columnThreads << " + tx * 4 + q % 4;\n";
  out << printEpilogue(printer, spec, "acc[p][q]", 3);
  out << "    }\n}\n";

  setTiledLaunch(spec, tile.bm, tile.bn, threads, launch);
  return out.str();
}

} // namespace sinter::codegen::cuda
