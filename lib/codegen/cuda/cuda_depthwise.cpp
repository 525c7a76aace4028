// Design note. One block computes `bandRows` output rows of `planesPerBlock` consecutive planes
// (plane = image * channels + channel):
//
//   stage:    sX[p][sr][sc] = X[plane p][band's first input row + sr][sc - padLeft] (0 outside)
//             sW[p][t]      = lhs(channel of p, 0, t)             (the taps, through the lhs)
//   compute:  item = (p, run of `run` output rows, output column ox), a thread an item;
//             for kx: column[q] = sX[p][run's first row * strideRows + q][ox * strideColumns +
//                                   kx * dilationColumns]
//                     for ky, u: acc[u] += sW[p][ky * kernelColumns + kx] *
//                                          column[u * strideRows + ky * dilationRows]
//             epilogue per u: b = channel, i = 0, j = image * positions + oy * outColumns + ox
//
// Staged rows cover whole runs (the band's rows rounded up to a run), so no read of `column`
// leaves the plane's staged input; rows past the input are zeros there and their outputs are
// never stored.
#include "cuda_depthwise.h"

#include "cuda_contraction.h"
#include "cuda_source.h"

#include <algorithm>
#include <sstream>

namespace sinter::codegen::cuda {
namespace {

constexpr int64_t kMaxTaps = 121;             ///< the taps are unrolled: up to 11 x 11
constexpr int64_t kMaxStride = 4;
constexpr int kRun = 4;                       ///< output rows a thread computes
constexpr int64_t kSharedFloats = 3072;       ///< a block's staged input: 12 KiB, many blocks an SM
constexpr int64_t kMaxSharedFloats = 8192;    ///< 32 KiB, within the 48 KiB of static shared memory
constexpr int64_t kEnoughBlocks = 132 * 8;    ///< eight blocks on each of an H200's SMs
constexpr int kMaxThreads = 256;
constexpr int64_t kStagingChunk = 16;         ///< staged elements a thread loads before storing them

int64_t roundUp(int64_t value, int64_t multiple) { return ceilDiv(value, multiple) * multiple; }

/// Elements of X a staging load reads at once (8 bytes), when every row of every plane starts at
/// a multiple of it; 1 otherwise (element by element).
int stagingVector(const DepthwisePlan &plan) {
  const DepthwiseWindow &window = plan.window;
  const int vector = window.stored == DType::Float32 ? 2 : 4;
  bool aligned = plan.inColumns % vector == 0 && window.imageStride % vector == 0 && window.planeStride % vector == 0;
  return aligned ? vector : 1;
}

} // namespace

std::optional<DepthwisePlan> planDepthwise(const LoweredGroup &group) {
  if (!group.contraction)
    return std::nullopt;
  std::optional<DepthwiseWindow> window = depthwiseWindow(*group.contraction);
  if (!window)
    return std::nullopt;
  const WindowGeometry &geometry = window->geometry;
  const size_t dims = geometry.rank();
  for (size_t d = 0; d < dims; ++d)
    if (geometry.strides[d] > kMaxStride || geometry.padBegin[d] < 0)
      return std::nullopt;
  if (group.contraction->spec.k > kMaxTaps)
    return std::nullopt;
  DepthwisePlan plan;
  plan.window = *window;
  static_cast<PlaneGeometry &>(plan) = planeGeometry(geometry);
  plan.run = int(std::min<int64_t>(kRun, plan.outRows));
  plan.sharedColumns = (plan.outColumns - 1) * plan.strideColumns + (plan.kernelColumns - 1) * plan.dilationColumns + 1;
  auto sharedRows = [&](int64_t bandRows) {
    return (roundUp(bandRows, plan.run) - 1) * plan.strideRows + (plan.kernelRows - 1) * plan.dilationRows + 1;
  };
  auto halved = [&](int64_t bandRows) { return std::max<int64_t>(plan.run, roundUp(ceilDiv(bandRows, 2), plan.run)); };
  const int64_t taps = group.contraction->spec.k;
  auto planeFloats = [&](int64_t bandRows) { return sharedRows(bandRows) * plan.sharedColumns + taps; };
  // Bands: as tall as the shared-memory budget allows, then shorter while there are too few
  // blocks to fill the GPU.
  int64_t bandRows = plan.outRows;
  while (bandRows > plan.run && planeFloats(bandRows) > kSharedFloats)
    bandRows = halved(bandRows);
  while (bandRows > plan.run && plan.planes() * ceilDiv(plan.outRows, bandRows) < kEnoughBlocks)
    bandRows = halved(bandRows);
  if (planeFloats(bandRows) > kMaxSharedFloats)
    return std::nullopt; // a row too wide to stage
  plan.bandRows = bandRows;
  plan.bands = ceilDiv(plan.outRows, bandRows);
  plan.sharedRows = sharedRows(bandRows);
  // Small planes: several to a block, while the block has threads to spare and the grid blocks.
  const int64_t items = ceilDiv(bandRows, plan.run) * plan.outColumns;
  const int64_t blocksOfOne = plan.planes() * plan.bands;
  plan.planesPerBlock = std::max<int64_t>(
      1, std::min({int64_t(kMaxThreads) / items, kSharedFloats / planeFloats(bandRows), blocksOfOne / kEnoughBlocks}));
  // Threads: the block's items in as few rounds of at most kMaxThreads as they take, evenly.
  const int64_t blockItems = items * plan.planesPerBlock;
  plan.threads = int(std::clamp<int64_t>(roundUp(ceilDiv(blockItems, ceilDiv(blockItems, kMaxThreads)), 32), 32,
                                         kMaxThreads));
  if (plan.blocks() > (int64_t(1) << 31) - 1 || plan.planes() > (int64_t(1) << 31) - 1 ||
      plan.inRows * plan.inColumns > (int64_t(1) << 31) - 1)
    return std::nullopt; // the kernel's block and plane indices, and a plane's offsets, are int

  return plan;
}

std::string printDepthwise(const Contraction &contraction, const DepthwisePlan &plan, LaunchShape &launch) {
  const ContractionSpec &spec = contraction.spec;
  const Kernel &kernel = contraction.kernel;
  const DepthwiseWindow &window = plan.window;
  CudaPrinter printer;
  IndexRanges ranges(kernel);
  setContractionRanges(ranges, spec);
  printer.setRanges(&ranges);
  auto v = [](int id) { return "v" + std::to_string(id); };
  const int64_t planeShared = plan.sharedRows * plan.sharedColumns, taps = spec.k;
  const int64_t runs = ceilDiv(plan.bandRows, plan.run), items = runs * plan.outColumns;
  const int64_t columnLength = (plan.run - 1) * plan.strideRows + (plan.kernelRows - 1) * plan.dilationRows + 1;
  // The address of X's element (plane, y, x), and an element loaded from X as the rhs reads it
  // (through its casts to f32, as the printer prints them).
  const std::string elementAddress = "b" + std::to_string(window.source) + " + (long long)(plane / " +
                                     std::to_string(window.channels) + ") * " + std::to_string(window.imageStride) +
                                     "LL + (long long)(plane % " + std::to_string(window.channels) + ") * " +
                                     std::to_string(window.planeStride) + "LL + y * " +
                                     std::to_string(plan.inColumns) + " + x";
  auto widened = [&](const std::string &element) { return printer.exprReading(window.read, window.load.get(), element); };

  std::ostringstream out;
  out << printer.signature(kernel, plan.threads);
  out << "  // depthwise: " << window.images << " images x " << window.channels << " channels, " << plan.outRows
      << "x" << plan.outColumns << " outputs of a " << plan.kernelRows << "x" << plan.kernelColumns
      << " window; bands of " << plan.bandRows << " rows, " << plan.planesPerBlock << " plane(s) a block, runs of "
      << plan.run << "\n";
  out << "  __shared__ float sX[" << plan.planesPerBlock * planeShared << "];\n";
  out << "  __shared__ float sW[" << plan.planesPerBlock * taps << "];\n";
  out << printer.locals(kernel, 1);
  out << "  const long long band = blockIdx.x % " << plan.bands << "LL, plane0 = (blockIdx.x / " << plan.bands
      << "LL) * " << plan.planesPerBlock << "LL;\n";
  out << "  const int row0 = (int)band * " << plan.bandRows << ";\n";
  // Stage the band's input rows, widened to f32, zero outside the plane. A thread loads a chunk
  // of its elements into registers, then stores them: the chunk's loads are in flight together,
  // so staging costs about one round trip to memory, not one per element a thread stages.
  const int vector = stagingVector(plan);
  if (vector > 1) {
    // 8-byte loads of `vector` elements along the row (rows start at multiples of it), each
    // element stored where it goes; the pad columns get zeros from items of their own.
    const int64_t groups = plan.inColumns / vector, rowItems = plan.planesPerBlock * plan.sharedRows;
    const int64_t loads = rowItems * groups;
    const int64_t chunk = std::min<int64_t>(kStagingChunk / 2, ceilDiv(loads, plan.threads));
    const char *raw = window.stored == DType::Float32 ? "float2" : "uint2";
    auto locate = [&](const char *pad) {
      out << pad << "const int p = e / " << plan.sharedRows * groups << ", r = e / " << groups << " % "
          << plan.sharedRows << ", g = e % " << groups << ";\n";
    };
    out << "  for (int base = 0; base < " << loads << "; base += " << chunk * plan.threads << ") {\n";
    out << "    " << raw << " s[" << chunk << "];\n";
    out << "#pragma unroll\n    for (int u = 0; u < " << chunk << "; ++u) {\n";
    out << "      const int e = base + threadIdx.x + u * " << plan.threads << ";\n";
    out << "      s[u] = " << (window.stored == DType::Float32 ? "make_float2(0.0f, 0.0f)" : "make_uint2(0u, 0u)") << ";\n";
    out << "      if (e < " << loads << ") {\n";
    locate("        ");
    out << "        const int y = row0 * " << plan.strideRows << " - " << plan.padTop << " + r, x = g * " << vector
        << ";\n";
    out << "        const int plane = (int)plane0 + p;\n";
    out << "        if (plane < " << plan.planes() << " && y >= 0 && y < " << plan.inRows << ")\n";
    out << "          s[u] = *reinterpret_cast<const " << raw << " *>(" << elementAddress << ");\n";
    out << "      }\n    }\n";
    out << "#pragma unroll\n    for (int u = 0; u < " << chunk << "; ++u) {\n";
    out << "      const int e = base + threadIdx.x + u * " << plan.threads << ";\n";
    out << "      if (e < " << loads << ") {\n";
    locate("        ");
    out << "        float *to = sX + p * " << planeShared << " + r * " << plan.sharedColumns << " + " << plan.padLeft
        << " + g * " << vector << ";\n";
    for (int t = 0; t < vector; ++t) {
      std::string lane = window.stored == DType::Float32
                             ? std::string("s[u].") + (t ? "y" : "x")
                             : std::string("(unsigned short)(s[u].") + (t < 2 ? "x" : "y") + (t % 2 ? " >> 16)" : ")");
      out << "        if (" << plan.padLeft << " + g * " << vector << " + " << t << " < " << plan.sharedColumns
          << ") to[" << t << "] = " << widened(lane) << ";\n";
    }
    out << "      }\n    }\n  }\n";
    const int64_t right = std::max<int64_t>(0, plan.sharedColumns - plan.padLeft - plan.inColumns);
    const int64_t padCells = plan.padLeft + right;
    if (padCells > 0) {
      out << "  for (int e = threadIdx.x; e < " << rowItems * padCells << "; e += " << plan.threads << ") {\n";
      out << "    const int k = e % " << padCells << ", row = e / " << padCells << ";\n";
      out << "    sX[(row / " << plan.sharedRows << ") * " << planeShared << " + (row % " << plan.sharedRows << ") * "
          << plan.sharedColumns << " + (k < " << plan.padLeft << " ? k : " << plan.inColumns << " + k)] = 0.0f;\n";
      out << "  }\n";
    }
  } else {
    const int64_t staged = plan.planesPerBlock * planeShared;
    const int64_t chunk = std::min<int64_t>(kStagingChunk, ceilDiv(staged, plan.threads));
    out << "  for (int base = 0; base < " << staged << "; base += " << chunk * plan.threads << ") {\n";
    out << "    float s[" << chunk << "];\n";
    out << "#pragma unroll\n    for (int u = 0; u < " << chunk << "; ++u) {\n";
    out << "      const int e = base + threadIdx.x + u * " << plan.threads << ";\n";
    out << "      s[u] = 0.0f;\n";
    out << "      if (e < " << staged << ") {\n";
    out << "        const int p = e / " << planeShared << ", rest = e % " << planeShared << ";\n";
    out << "        const int y = row0 * " << plan.strideRows << " - " << plan.padTop << " + rest / "
        << plan.sharedColumns << ", x = rest % " << plan.sharedColumns << " - " << plan.padLeft << ";\n";
    out << "        const int plane = (int)plane0 + p;\n";
    out << "        if (plane < " << plan.planes() << " && y >= 0 && y < " << plan.inRows << " && x >= 0 && x < "
        << plan.inColumns << ")\n";
    out << "          s[u] = " << widened("*(" + elementAddress + ")") << ";\n";
    out << "      }\n    }\n";
    out << "#pragma unroll\n    for (int u = 0; u < " << chunk << "; ++u) {\n";
    out << "      const int e = base + threadIdx.x + u * " << plan.threads << ";\n";
    out << "      if (e < " << staged << ") sX[e] = s[u];\n";
    out << "    }\n  }\n";
  }
  // The taps, through the contraction's lhs (the weights as stored, or a fused scale of them).
  out << "  for (int e = threadIdx.x; e < " << plan.planesPerBlock * taps << "; e += " << plan.threads << ") {\n";
  out << "    const long long plane = plane0 + e / " << taps << ";\n";
  out << "    " << v(spec.b) << " = plane % " << window.channels << "LL; " << v(spec.i) << " = 0; " << v(spec.r)
      << " = e % " << taps << ";\n";
  CudaPrinter::Line weight = printer.line({spec.lhs}, "    ", true);
  out << "    float w = 0.0f;\n";
  out << "    if (plane < " << plan.planes() << "LL) {\n" << weight.definitions << "      w = " << weight.texts[0]
      << ";\n    }\n";
  out << "    sW[e] = w;\n  }\n";
  out << "  __syncthreads();\n";
  // A thread an item: a run of outputs down one column.
  out << "  for (int item = threadIdx.x; item < " << plan.planesPerBlock * items << "; item += " << plan.threads
      << ") {\n";
  out << "    const int p = item / " << items << ", rest = item % " << items << ";\n";
  out << "    const long long plane = plane0 + p;\n";
  out << "    if (plane >= " << plan.planes() << "LL) continue;\n";
  out << "    const int runRow = (rest / " << plan.outColumns << ") * " << plan.run << ", ox = rest % "
      << plan.outColumns << ";\n";
  out << "    const float *xs = sX + p * " << planeShared << " + runRow * " << plan.strideRows * plan.sharedColumns
      << " + ox * " << plan.strideColumns << ";\n";
  out << "    const float *ws = sW + p * " << taps << ";\n";
  out << "    float acc[" << plan.run << "];\n";
  out << "#pragma unroll\n    for (int u = 0; u < " << plan.run << "; ++u) acc[u] = 0.0f;\n";
  out << "#pragma unroll\n    for (int kx = 0; kx < " << plan.kernelColumns << "; ++kx) {\n";
  out << "      float column[" << columnLength << "];\n";
  out << "#pragma unroll\n      for (int q = 0; q < " << columnLength << "; ++q) column[q] = xs[q * "
      << plan.sharedColumns << " + kx * " << plan.dilationColumns << "];\n";
  out << "#pragma unroll\n      for (int ky = 0; ky < " << plan.kernelRows << "; ++ky) {\n";
  out << "        const float w = ws[ky * " << plan.kernelColumns << " + kx];\n";
  out << "#pragma unroll\n        for (int u = 0; u < " << plan.run << "; ++u) acc[u] += w * column[u * "
      << plan.strideRows << " + ky * " << plan.dilationRows << "];\n";
  out << "      }\n    }\n";
  out << "    const long long image = plane / " << window.channels << "LL;\n";
  out << "    " << v(spec.b) << " = plane % " << window.channels << "LL; " << v(spec.i) << " = 0;\n";
  out << "#pragma unroll\n    for (int u = 0; u < " << plan.run << "; ++u) {\n";
  out << "      const int oy = row0 + runRow + u;\n";
  out << "      if (runRow + u >= " << plan.bandRows << " || oy >= " << plan.outRows << ") break;\n";
  out << "      " << v(spec.j) << " = image * " << window.positions() << "LL + oy * " << plan.outColumns
      << "LL + ox;\n";
  out << printEpilogue(printer, spec, "acc[u]", 3, false);
  out << "    }\n  }\n}\n";

  launch.grid[0] = uint32_t(plan.blocks());
  launch.block[0] = uint32_t(plan.threads);
  launch.parallelExtent = spec.batch * spec.m * spec.n;
  return out.str();
}

} // namespace sinter::codegen::cuda
