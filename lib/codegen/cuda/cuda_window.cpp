// Design note. One block computes `bandRows` output rows of `planesPerBlock` consecutive planes
// (plane = image * groups + group; a group is a channel of a depthwise convolution or a
// pooling), each of C input planes and M outputs (1 and 1 for depthwise and pooling, which has
// no weights and combines the taps by a maximum or a sum instead):
//
//   stage:    sX[p][c][sr][sc] = X[image][group * C + c][band's first input row + sr][sc - padLeft]
//                                (0 outside)
//             sW[p][o][r]      = lhs(group of p, o, r)            (the weights, through the lhs)
//   compute:  item = (p, split, run of `run` output rows, output column ox), a thread an item,
//             which computes outputs o of split * outputsPerThread and the next outputsPerThread - 1;
//             for c, kx: column[q] = sX[p][c][run's first row * strideRows + q][ox * strideColumns +
//                                      kx * dilationColumns]
//                        for ky, o, u: acc[o][u] += sW[p][o][r(c, ky * kernelColumns + kx)] *
//                                                   column[u * strideRows + ky * dilationRows]
//             epilogue per o, u: b = group, i = o, j = image * positions + oy * outColumns + ox
//
// Staged rows cover whole runs (the band's rows rounded up to a run), so no read of `column`
// leaves the plane's staged input; rows past the input are zeros there and their outputs are
// never stored.
#include "cuda_window.h"

#include "cuda_contraction.h"
#include "cuda_source.h"

#include "sinter/support/error.h"

#include <algorithm>
#include <sstream>

namespace sinter::codegen::cuda {
namespace {

constexpr int64_t kMaxTaps = 121;             ///< the taps are unrolled: up to 11 x 11
constexpr int64_t kMaxStride = 4;
constexpr int kRun = 4;                       ///< output rows a thread computes
constexpr int kMaxAccumulators = 32;          ///< a thread's outputs: the group's outputs x the run
constexpr int64_t kMaxOutputsPerGroup = 32;   ///< more, and the group is a GEMM for the tensor cores
constexpr int64_t kMaxChannelsPerGroup = 16;  ///< likewise
constexpr int64_t kSharedFloats = 3072;       ///< a block's staged input: 12 KiB, many blocks an SM
constexpr int64_t kMaxSharedFloats = 8192;    ///< 32 KiB, within the 48 KiB of static shared memory
constexpr int64_t kEnoughBlocks = 132 * 8;    ///< eight blocks on each of an H200's SMs
constexpr int kMaxThreads = 256;
constexpr int64_t kEnoughThreads = 132 * 1024; ///< half the threads an H200 keeps resident
constexpr int64_t kStagingChunk = 16;         ///< staged elements a thread loads before storing them

int64_t roundUp(int64_t value, int64_t multiple) { return ceilDiv(value, multiple) * multiple; }

/// Elements of X a staging load reads at once (8 bytes), when every row of every plane starts at
/// a multiple of it; 1 otherwise (element by element).
int stagingVector(const WindowPlan &plan) {
  const DepthwiseWindow &window = plan.window;
  const int vector = window.stored == DType::Float32 ? 2 : 4;
  bool aligned = plan.inColumns % vector == 0 && window.imageStride % vector == 0 && window.channelStride % vector == 0;
  return aligned ? vector : 1;
}

/// The plan for `window` (with `weights` weights a group: none for pooling), or nullopt.
std::optional<WindowPlan> planWindow(const DepthwiseWindow &window, int64_t weights, WindowPlan::Combine combine) {
  const WindowGeometry &geometry = window.geometry;
  const size_t dims = geometry.rank();
  for (size_t d = 0; d < dims; ++d)
    if (geometry.strides[d] > kMaxStride || geometry.padBegin[d] < 0)
      return std::nullopt;
  if (window.taps() > kMaxTaps)
    return std::nullopt;
  WindowPlan plan;
  plan.window = window;
  plan.combine = combine;
  static_cast<PlaneGeometry &>(plan) = planeGeometry(geometry);
  const int64_t outputs = window.outputsPerGroup, channels = window.channelsPerGroup;
  plan.run = int(std::min<int64_t>({kRun, plan.outRows, std::max<int64_t>(1, kMaxAccumulators / outputs)}));
  plan.sharedColumns = (plan.outColumns - 1) * plan.strideColumns + (plan.kernelColumns - 1) * plan.dilationColumns + 1;
  auto sharedRows = [&](int64_t bandRows) {
    return (roundUp(bandRows, plan.run) - 1) * plan.strideRows + (plan.kernelRows - 1) * plan.dilationRows + 1;
  };
  auto halved = [&](int64_t bandRows) { return std::max<int64_t>(plan.run, roundUp(ceilDiv(bandRows, 2), plan.run)); };
  auto planeFloats = [&](int64_t bandRows) { return channels * sharedRows(bandRows) * plan.sharedColumns + weights; };
  // Runs as long as the staged input of one allows (a wide plane of many channels).
  while (plan.run > 1 && planeFloats(plan.run) > kMaxSharedFloats)
    plan.run = std::max(1, plan.run / 2);
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
  // A group's outputs: a thread computes all of them for its run, which reads each staged column
  // once for all, unless that leaves too few threads to keep the GPU's warps busy: then the
  // fewest splits of them that give enough.
  plan.outputsPerThread = outputs;
  const int64_t columnsOfRuns = plan.planes() * plan.bands * ceilDiv(bandRows, plan.run) * plan.outColumns;
  for (int64_t splits = 1; splits <= outputs; ++splits)
    if (outputs % splits == 0) {
      plan.outputsPerThread = outputs / splits;
      if (columnsOfRuns * splits >= kEnoughThreads)
        break;
    }
  // Small planes: several to a block, while the block has threads to spare and the grid blocks.
  const int64_t items = plan.items();
  const int64_t blocksOfOne = plan.planes() * plan.bands;
  plan.planesPerBlock = std::max<int64_t>(
      1, std::min({int64_t(kMaxThreads) / items, kSharedFloats / planeFloats(bandRows), blocksOfOne / kEnoughBlocks}));
  // Threads: the block's items in as few rounds of at most kMaxThreads as they take, evenly.
  const int64_t blockItems = items * plan.planesPerBlock;
  plan.threads = int(std::clamp<int64_t>(roundUp(ceilDiv(blockItems, ceilDiv(blockItems, kMaxThreads)), 32), 32,
                                         kMaxThreads));
  if (plan.blocks() > (int64_t(1) << 31) - 1 || plan.planes() * channels > (int64_t(1) << 31) - 1 ||
      plan.inRows * plan.inColumns > (int64_t(1) << 31) - 1)
    return std::nullopt; // the kernel's block and plane indices, and a plane's offsets, are int

  return plan;
}

} // namespace

std::optional<WindowPlan> planWindowKernel(const LoweredGroup &group) {
  if (group.pooling) {
    // Pooling: the window over each (image, channel) plane, with no weights.
    const Pooling &pooling = *group.pooling;
    DepthwiseWindow window;
    window.source = pooling.source;
    window.stored = pooling.load->type;
    window.read = pooling.read;
    window.load = pooling.load;
    window.channels = pooling.channels;
    window.images = pooling.images;
    window.geometry = pooling.geometry;
    const PlaneGeometry plane = planeGeometry(pooling.geometry);
    window.planeStride = window.channelStride = plane.inRows * plane.inColumns;
    window.imageStride = window.channels * window.planeStride;
    return planWindow(window, 0, pooling.max ? WindowPlan::Combine::Max : WindowPlan::Combine::Add);
  }
  if (!group.contraction)
    return std::nullopt;
  // Depthwise, or grouped with a few channels a group; an ungrouped convolution (one group) is a
  // GEMM for the tensor cores, as is a group of many channels.
  std::optional<DepthwiseWindow> window = groupedWindow(*group.contraction);
  if (!window || window->outputsPerGroup > kMaxOutputsPerGroup || window->channelsPerGroup > kMaxChannelsPerGroup)
    return std::nullopt;
  if (window->channels == 1 && (window->channelsPerGroup > 1 || window->outputsPerGroup > 1))
    return std::nullopt;
  return planWindow(*window, window->outputsPerGroup * group.contraction->spec.k, WindowPlan::Combine::MultiplyAdd);
}

std::string printWindowKernel(const LoweredGroup &group, const WindowPlan &plan, LaunchShape &launch) {
  using Combine = WindowPlan::Combine;
  const bool weighted = plan.combine == Combine::MultiplyAdd;
  SINTER_ASSERT(weighted ? group.contraction.has_value() : group.pooling.has_value(), "window kernel ",
                group.kernel.name, " has no description to print");
  const Kernel &kernel = weighted ? group.contraction->kernel : group.pooling->kernel;
  const DepthwiseWindow &window = plan.window;
  CudaPrinter printer;
  IndexRanges ranges(kernel);
  if (weighted) {
    setContractionRanges(ranges, group.contraction->spec);
  } else {
    const Pooling &pooling = *group.pooling;
    ranges.setVariable(pooling.image, {0, pooling.images - 1});
    ranges.setVariable(pooling.channel, {0, pooling.channels - 1});
    ranges.setVariable(pooling.position, {0, window.positions() - 1});
  }
  printer.setRanges(&ranges);
  auto v = [](int id) { return "v" + std::to_string(id); };
  const int64_t channels = window.channelsPerGroup, outputs = window.outputsPerGroup;
  const int64_t k = weighted ? group.contraction->spec.k : 0;
  const int64_t planeShared = plan.sharedRows * plan.sharedColumns, groupShared = channels * planeShared;
  const int64_t taps = window.taps(), weights = outputs * k;
  const int64_t runs = ceilDiv(plan.bandRows, plan.run), items = plan.items(), splitItems = runs * plan.outColumns;
  const int64_t perThread = plan.outputsPerThread;
  const int64_t columnLength = (plan.run - 1) * plan.strideRows + (plan.kernelRows - 1) * plan.dilationRows + 1;
  // Staging walks input planes: the block's planes' C input planes each, `plane` counting them
  // over the whole input (image-major), which are X's channels in order.
  const int64_t stagedPlanes = plan.planesPerBlock * channels, inputPlanes = plan.planes() * channels;
  const int64_t inputChannels = window.channels * channels;
  // The address of X's element (input plane, y, x), and an element loaded from X as the rhs reads
  // it (through its casts to f32, as the printer prints them).
  const std::string elementAddress = "b" + std::to_string(window.source) + " + (long long)(plane / " +
                                     std::to_string(inputChannels) + ") * " + std::to_string(window.imageStride) +
                                     "LL + (long long)(plane % " + std::to_string(inputChannels) + ") * " +
                                     std::to_string(window.channelStride) + "LL + y * " +
                                     std::to_string(plan.inColumns) + " + x";
  auto widened = [&](const std::string &element) { return printer.exprReading(window.read, window.load.get(), element); };
  // What the window's cells hold outside X: a maximum's identity, else zero (the sum's, and the
  // padding's of a convolution).
  const bool maximum = plan.combine == Combine::Max;
  const std::string fill = maximum ? "__int_as_float(0xff800000)" : "0.0f";

  std::ostringstream out;
  out << printer.signature(kernel, plan.threads);
  const char *what = !weighted ? (maximum ? "max pooling" : "sum pooling")
                     : channels == 1 && outputs == 1 ? "depthwise"
                                                     : "grouped";
  out << "  // " << what << ": " << window.images << " images x " << window.channels << " groups of " << channels
      << " input and " << outputs << " output channels, " << plan.outRows << "x" << plan.outColumns
      << " outputs of a " << plan.kernelRows << "x" << plan.kernelColumns << " window; bands of " << plan.bandRows
      << " rows, " << plan.planesPerBlock << " plane(s) a block, runs of " << plan.run << "\n";
  out << "  __shared__ float sX[" << plan.planesPerBlock * groupShared << "];\n";
  if (weighted)
    out << "  __shared__ float sW[" << plan.planesPerBlock * weights << "];\n";
  out << printer.locals(kernel, 1);
  out << "  const long long band = blockIdx.x % " << plan.bands << "LL, plane0 = (blockIdx.x / " << plan.bands
      << "LL) * " << plan.planesPerBlock << "LL;\n";
  out << "  const int row0 = (int)band * " << plan.bandRows << ";\n";
  // Stage the band's input rows, widened to f32, `fill` outside the plane. A thread loads a chunk
  // of its elements into registers, then stores them: the chunk's loads are in flight together,
  // so staging costs about one round trip to memory, not one per element a thread stages.
  const int vector = stagingVector(plan);
  if (vector > 1) {
    // 8-byte loads of `vector` elements along the row (rows start at multiples of it), each
    // element stored where it goes; the pad columns get `fill` from items of their own. A row
    // outside X loads the bits of `fill` in X's type.
    const int64_t groups = plan.inColumns / vector, rowItems = stagedPlanes * plan.sharedRows;
    const int64_t loads = rowItems * groups;
    const int64_t chunk = std::min<int64_t>(kStagingChunk / 2, ceilDiv(loads, plan.threads));
    const char *raw = window.stored == DType::Float32 ? "float2" : "uint2";
    const std::string rawFill =
        window.stored == DType::Float32 ? "make_float2(" + fill + ", " + fill + ")"
        : !maximum                      ? "make_uint2(0u, 0u)"
        : window.stored == DType::Float16 ? "make_uint2(0xfc00fc00u, 0xfc00fc00u)"
                                          : "make_uint2(0xff80ff80u, 0xff80ff80u)";
    auto locate = [&](const char *pad) {
      out << pad << "const int p = e / " << plan.sharedRows * groups << ", r = e / " << groups << " % "
          << plan.sharedRows << ", g = e % " << groups << ";\n";
    };
    out << "  for (int base = 0; base < " << loads << "; base += " << chunk * plan.threads << ") {\n";
    out << "    " << raw << " s[" << chunk << "];\n";
    out << "#pragma unroll\n    for (int u = 0; u < " << chunk << "; ++u) {\n";
    out << "      const int e = base + threadIdx.x + u * " << plan.threads << ";\n";
    out << "      s[u] = " << rawFill << ";\n";
    out << "      if (e < " << loads << ") {\n";
    locate("        ");
    out << "        const int y = row0 * " << plan.strideRows << " - " << plan.padTop << " + r, x = g * " << vector
        << ";\n";
    out << "        const int plane = (int)plane0 * " << channels << " + p;\n";
    out << "        if (plane < " << inputPlanes << " && y >= 0 && y < " << plan.inRows << ")\n";
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
          << plan.sharedColumns << " + (k < " << plan.padLeft << " ? k : " << plan.inColumns << " + k)] = " << fill
          << ";\n";
      out << "  }\n";
    }
  } else {
    const int64_t staged = stagedPlanes * planeShared;
    const int64_t chunk = std::min<int64_t>(kStagingChunk, ceilDiv(staged, plan.threads));
    out << "  for (int base = 0; base < " << staged << "; base += " << chunk * plan.threads << ") {\n";
    out << "    float s[" << chunk << "];\n";
    out << "#pragma unroll\n    for (int u = 0; u < " << chunk << "; ++u) {\n";
    out << "      const int e = base + threadIdx.x + u * " << plan.threads << ";\n";
    out << "      s[u] = " << fill << ";\n";
    out << "      if (e < " << staged << ") {\n";
    out << "        const int p = e / " << planeShared << ", rest = e % " << planeShared << ";\n";
    out << "        const int y = row0 * " << plan.strideRows << " - " << plan.padTop << " + rest / "
        << plan.sharedColumns << ", x = rest % " << plan.sharedColumns << " - " << plan.padLeft << ";\n";
    out << "        const int plane = (int)plane0 * " << channels << " + p;\n";
    out << "        if (plane < " << inputPlanes << " && y >= 0 && y < " << plan.inRows << " && x >= 0 && x < "
        << plan.inColumns << ")\n";
    out << "          s[u] = " << widened("*(" + elementAddress + ")") << ";\n";
    out << "      }\n    }\n";
    out << "#pragma unroll\n    for (int u = 0; u < " << chunk << "; ++u) {\n";
    out << "      const int e = base + threadIdx.x + u * " << plan.threads << ";\n";
    out << "      if (e < " << staged << ") sX[e] = s[u];\n";
    out << "    }\n  }\n";
  }
  if (weighted) {
    // The weights, through the contraction's lhs (as stored, or a fused scale of them).
    const ContractionSpec &spec = group.contraction->spec;
    out << "  for (int e = threadIdx.x; e < " << plan.planesPerBlock * weights << "; e += " << plan.threads << ") {\n";
    out << "    const long long plane = plane0 + e / " << weights << ";\n";
    out << "    " << v(spec.b) << " = plane % " << window.channels << "LL; " << v(spec.i) << " = "
        << (outputs == 1 ? "0" : "e / " + std::to_string(k) + " % " + std::to_string(outputs)) << "; " << v(spec.r)
        << " = e % " << k << ";\n";
    CudaPrinter::Line weight = printer.line({spec.lhs}, "    ", true);
    out << "    float w = 0.0f;\n";
    out << "    if (plane < " << plan.planes() << "LL) {\n" << weight.definitions << "      w = " << weight.texts[0]
        << ";\n    }\n";
    out << "    sW[e] = w;\n  }\n";
  }
  out << "  __syncthreads();\n";
  // A thread an item: a run of outputs down one column.
  out << "  for (int item = threadIdx.x; item < " << plan.planesPerBlock * items << "; item += " << plan.threads
      << ") {\n";
  out << "    const int p = item / " << items << ", rest = item % " << items << ";\n";
  out << "    const long long plane = plane0 + p;\n";
  out << "    if (plane >= " << plan.planes() << "LL) continue;\n";
  if (plan.outputSplits() > 1)
    out << "    const int o0 = rest / " << splitItems << " * " << perThread << ";\n";
  out << "    const int runRow = (rest" << (plan.outputSplits() > 1 ? " % " + std::to_string(splitItems) : "") << " / "
      << plan.outColumns << ") * " << plan.run << ", ox = rest % " << plan.outColumns << ";\n";
  out << "    const float *xs = sX + p * " << groupShared << " + runRow * " << plan.strideRows * plan.sharedColumns
      << " + ox * " << plan.strideColumns << ";\n";
  if (weighted)
    out << "    const float *ws = sW + p * " << weights
        << (plan.outputSplits() > 1 ? " + o0 * " + std::to_string(k) : "") << ";\n";
  out << "    float acc[" << perThread * plan.run << "];\n";
  out << "#pragma unroll\n    for (int u = 0; u < " << perThread * plan.run << "; ++u) acc[u] = "
      << (maximum ? fill : "0.0f") << ";\n";
  // A group's input planes one after another (not unrolled: each is a whole window's work); within
  // one, tap t of output o is weight o * k + r(c, t).
  std::string xs = "xs", ws = "ws", pad = "    ";
  const int64_t tapStep = window.channelsInnermost ? channels : 1;
  if (channels > 1) {
    out << "#pragma unroll 1\n    for (int c = 0; c < " << channels << "; ++c) {\n";
    out << "      const float *xc = xs + c * " << planeShared << ";\n";
    out << "      const float *wc = ws + c" << (window.channelsInnermost ? "" : " * " + std::to_string(taps)) << ";\n";
    xs = "xc", ws = "wc", pad = "      ";
  }
  out << "#pragma unroll\n" << pad << "for (int kx = 0; kx < " << plan.kernelColumns << "; ++kx) {\n";
  out << pad << "  float column[" << columnLength << "];\n";
  out << "#pragma unroll\n" << pad << "  for (int q = 0; q < " << columnLength << "; ++q) column[q] = " << xs << "[q * "
      << plan.sharedColumns << " + kx * " << plan.dilationColumns << "];\n";
  out << "#pragma unroll\n" << pad << "  for (int ky = 0; ky < " << plan.kernelRows << "; ++ky) {\n";
  const std::string tap = "(ky * " + std::to_string(plan.kernelColumns) + " + kx)";
  const std::string cell = "column[u * " + std::to_string(plan.strideRows) + " + ky * " +
                           std::to_string(plan.dilationRows) + "]";
  if (!weighted) {
    // A NaN tap never wins the maximum (fmaxf takes the other operand), as in the reference.
    out << "#pragma unroll\n" << pad << "    for (int u = 0; u < " << plan.run << "; ++u) acc[u] = "
        << (maximum ? "fmaxf(acc[u], " + cell + ")" : "acc[u] + " + cell) << ";\n";
  } else if (perThread == 1 && tapStep == 1) {
    out << pad << "    const float w = " << ws << "[ky * " << plan.kernelColumns << " + kx];\n";
    out << "#pragma unroll\n" << pad << "    for (int u = 0; u < " << plan.run << "; ++u) acc[u] += w * " << cell
        << ";\n";
  } else {
    out << "#pragma unroll\n" << pad << "    for (int o = 0; o < " << perThread << "; ++o) {\n";
    out << pad << "      const float w = " << ws << "[o * " << k << " + " << tap << " * " << tapStep << "];\n";
    out << "#pragma unroll\n" << pad << "      for (int u = 0; u < " << plan.run << "; ++u) acc[o * " << plan.run
        << " + u] += w * " << cell << ";\n";
    out << pad << "    }\n";
  }
  out << pad << "  }\n" << pad << "}\n";
  if (channels > 1)
    out << "    }\n";
  // The epilogue per output: the contraction's (b = group, i = output, j = image's position), or
  // the pooling's (image, channel, position).
  out << "    const long long image = plane / " << window.channels << "LL;\n";
  std::string accumulator = "acc[u]", position = v(weighted ? group.contraction->spec.j : group.pooling->position);
  pad = "    ";
  if (!weighted) {
    out << "    " << v(group.pooling->image) << " = image; " << v(group.pooling->channel) << " = plane % "
        << window.channels << "LL;\n";
  } else {
    const ContractionSpec &spec = group.contraction->spec;
    out << "    " << v(spec.b) << " = plane % " << window.channels << "LL;";
    if (outputs == 1) {
      out << " " << v(spec.i) << " = 0;\n";
    } else if (perThread == 1) {
      out << " " << v(spec.i) << " = o0;\n";
    } else {
      out << "\n#pragma unroll\n    for (int o = 0; o < " << perThread << "; ++o) {\n";
      out << "      " << v(spec.i) << " = " << (plan.outputSplits() > 1 ? "o0 + " : "") << "o;\n";
      accumulator = "acc[o * " + std::to_string(plan.run) + " + u]";
      pad = "      ";
    }
  }
  out << "#pragma unroll\n" << pad << "for (int u = 0; u < " << plan.run << "; ++u) {\n";
  out << pad << "  const int oy = row0 + runRow + u;\n";
  out << pad << "  if (runRow + u >= " << plan.bandRows << " || oy >= " << plan.outRows << ") break;\n";
  out << pad << "  " << position << " = " << (weighted ? "image * " + std::to_string(window.positions()) + "LL + " : "")
      << "oy * " << plan.outColumns << "LL + ox;\n";
  if (weighted) {
    out << printEpilogue(printer, group.contraction->spec, accumulator, perThread == 1 ? 3 : 4, false);
  } else {
    out << pad << "  {\n" << pad << "    " << v(group.pooling->acc) << " = " << accumulator << ";\n"
        << printer.statements(group.pooling->epilogue, 4) << pad << "  }\n";
  }
  out << pad << "}\n";
  if (perThread > 1)
    out << "    }\n";
  out << "  }\n}\n";

  launch.grid[0] = uint32_t(plan.blocks());
  launch.block[0] = uint32_t(plan.threads);
  launch.parallelExtent = weighted ? group.contraction->spec.batch * group.contraction->spec.m * group.contraction->spec.n
                                   : plan.planes() * window.positions();
  return out.str();
}

} // namespace sinter::codegen::cuda
