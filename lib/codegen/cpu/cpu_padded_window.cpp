// Design note. The plan reads everything off the window tables that rhsWindowTable built and
// checked against the gather expression (cpu_contraction.cpp): per r the channel offset and the
// displacement (dy, dx), per output position the window's origin. With strides (sy, sx) the
// origins are (by0 + oy * sy, bx0 + ox * sx), so kernel element r of output (oy, ox) reads X at
//
//   (firstRow + oy * sy + ey, firstColumn + ox * sx + ex),  ey = dy(r) - lowY, ex = dx(r) - lowX
//
// (low: the least displacement; firstRow = by0 + lowY, firstColumn = bx0 + lowX). A tile whose
// first column is on output row oy0 copies phase (py, px) of each channel: slab row t, column u
// holding X at (firstRow + (oy0 + t) * sy + py, firstColumn + u * sx + px). Element (oy, ox) of r
// is then phase (ey % sy, ex % sx), row oy - oy0 + ey / sy, column ox + ex / sx: on the pitch,
// column j' = oy * pitch + ox of the tile that starts at j'0 = oy0 * pitch + ox0 reads
//
//   (j' - j'0) + ox0 + offset[r],  offset[r] = channel * slab + phase * phase size
//                                               + ey / sy * pitch + ex / sx
//
// so the rhs row of r is the slab at ox0 + offset[r]. The tile loop (cpu_contraction.cpp)
// copies the slab once per tile and hands the micro-kernel the slab at ox0 and the table at kc;
// the epilogue walks the output rows the tile's columns cover and skips the columns
// ox >= outputWidth.
#include "cpu_padded_window.h"
#include "cpu_kernel_frame.h"

#include "sinter/support/error.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace sinter::codegen::llvmgen {

namespace {

/// The largest slab (floats) a tile keeps on its thread's stack: as large as the rhs pack it
/// replaces may be (KC 384 x NC 256). (At most 2^31 / 4 bytes, so the offsets fit in i32.)
constexpr int64_t kMaxSlabFloats = 384 * 256;

/// Strided windows: at most this many phases (stride rows x stride columns) in the slab.
constexpr int64_t kMaxPhases = 16;

} // namespace

std::optional<PaddedWindow> planPaddedWindow(const ContractionSpec &spec, const WindowGather &gather,
                                             std::span<const int32_t> table, const PanelShape &panels,
                                             ContractionBlocking &blocking, std::vector<int32_t> &offsets,
                                             std::vector<int64_t> &order) {
  if (!spec.window || gather.dims != 2 || gather.sourceType != DType::Float32)
    return std::nullopt;
  const ConvolutionWindow &window = *spec.window;
  const WindowGeometry &geometry = window.geometry;
  if (geometry.rank() != 2 || window.stride[1] != 1 || gather.rowLength != geometry.output[1] ||
      window.positions != geometry.output[0] * geometry.output[1] || spec.n % window.positions != 0)
    return std::nullopt;
  const int64_t strideY = geometry.strides[0], strideX = geometry.strides[1];
  if (strideY < 1 || strideX < 1 || strideY * strideX > kMaxPhases || gather.rowStep != strideX)
    return std::nullopt;
  const int64_t outputWidth = geometry.output[1], outputRows = geometry.output[0];
  // The channels: offsets 0, s, 2s, ... (in whatever order r visits them), each `taps` times.
  auto channelOffset = [&](int64_t r) { return int64_t(table[size_t(r * 3)]); };
  auto displacement = [&](int64_t r, int64_t d) { return int64_t(table[size_t(r * 3 + 1 + d)]); };
  int64_t channelStride = 0, lastOffset = 0;
  for (int64_t r = 0; r < spec.k; ++r) {
    if (channelOffset(r) < 0)
      return std::nullopt;
    lastOffset = std::max(lastOffset, channelOffset(r));
    if (channelOffset(r) > 0 && (channelStride == 0 || channelOffset(r) < channelStride))
      channelStride = channelOffset(r);
  }
  const int64_t channels = channelStride == 0 ? 1 : lastOffset / channelStride + 1;
  if (spec.k % channels != 0 || spec.k / channels < 2)
    return std::nullopt; // a single tap is a pointwise convolution, read in place elsewhere
  const int64_t taps = spec.k / channels;
  std::vector<int64_t> uses(size_t(channels), 0);
  int64_t lowY = std::numeric_limits<int64_t>::max(), highY = std::numeric_limits<int64_t>::min();
  int64_t lowX = lowY, highX = highY;
  for (int64_t r = 0; r < spec.k; ++r) {
    if (channelStride > 0 && channelOffset(r) % channelStride != 0)
      return std::nullopt;
    if (++uses[size_t(channelStride > 0 ? channelOffset(r) / channelStride : 0)] > taps)
      return std::nullopt;
    lowY = std::min(lowY, displacement(r, 0));
    highY = std::max(highY, displacement(r, 0));
    lowX = std::min(lowX, displacement(r, 1));
    highX = std::max(highX, displacement(r, 1));
  }
  // Origins (by0 + oy * strideY, bx0 + ox * strideX).
  const int32_t *origins = table.data() + gather.positionsAt;
  const int64_t by0 = origins[0], bx0 = origins[1];
  for (int64_t p = 0; p < window.positions; ++p)
    if (origins[p * 2] != by0 + p / outputWidth * strideY || origins[p * 2 + 1] != bx0 + p % outputWidth * strideX)
      return std::nullopt;

  PaddedWindow padded;
  padded.source = gather.source;
  padded.channels = channels;
  padded.channelStride = channelStride;
  padded.rowStride = window.stride[0];
  padded.height = window.extent[0];
  padded.width = window.extent[1];
  padded.outputWidth = outputWidth;
  padded.positions = window.positions;
  padded.images = spec.n / window.positions;
  padded.imageStride = window.imageStride;
  padded.groupStride = window.groupStride;
  padded.strideY = strideY;
  padded.strideX = strideX;
  padded.pitch = outputWidth + (highX - lowX) / strideX;
  padded.columns = (outputRows - 1) * padded.pitch + outputWidth;
  padded.firstRow = by0 + lowY;
  padded.firstColumn = bx0 + lowX;
  // The wider pitch computes columns the output drops, in whole panels per image, where the
  // packed window's panels run across images: at most 15% more than those (a 3x3 window at 7x7,
  // one image: 61 columns against 49, both two 32-column panels; eight images, 8 x 64 against
  // 416, is not; a 5x5 one at 7x7, 73 against 49, is not). And the copy saves little where an
  // input element is in few windows: below two on average (a 2x2 window at stride 2: one) the
  // row packer is kept. A 3x3 window at stride 2 (2.25) gains since the phases are copied with
  // shuffles, not gathers (docs/performance.md: 128 channels at 56x56, batch 8, AVX2 24 -> 14 ms).
  if (20 * padded.images * roundUp(padded.columns, panels.columns) > 23 * roundUp(spec.n, panels.columns) ||
      taps < 2 * strideY * strideX)
    return std::nullopt;

  // Blocks over each image's padded columns, the images as more batches.
  ContractionSpec onPitch = spec;
  onPitch.n = padded.columns;
  onPitch.batch = spec.batch * padded.images;
  ContractionBlocking chosen = chooseBlocking(onPitch, panels);
  // A tile's nc columns reach (nc - 1) / pitch + 2 output rows at most, and each row the window's
  // rows beyond it; one more row holds the reads of the columns past the row's end. Narrower
  // tiles where the slab of every channel would not fit.
  const int64_t phases = strideY * strideX;
  auto slabRows = [&] { return (chosen.nc - 1) / padded.pitch + 2 + (highY - lowY) / strideY + 1; };
  while (channels * phases * slabRows() * padded.pitch > kMaxSlabFloats && chosen.nc > panels.columns) {
    chosen.nc = roundUp(chosen.nc / 2, panels.columns);
    chosen.nBlocks = ceilDiv(padded.columns, chosen.nc);
    chosen.tiles = onPitch.batch * chosen.mBlocks * chosen.nBlocks;
  }
  padded.slabRows = slabRows();
  if (channels * padded.slabFloats() > kMaxSlabFloats)
    return std::nullopt;
  // The furthest read of a block (from the slab at ox0 < pitch, column < nc) stays in the slab.
  SINTER_ASSERT((padded.pitch - 1) + (chosen.nc - 1) + (highY - lowY) / strideY * padded.pitch +
                        (highX - lowX) / strideX <
                    padded.phaseFloats(),
                "a padded window's reads leave its slab");
  auto channelOf = [&](int64_t r) { return channelStride > 0 ? channelOffset(r) / channelStride : 0; };
  order.resize(size_t(spec.k));
  for (int64_t r = 0; r < spec.k; ++r)
    order[size_t(r)] = r;
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return channelOf(x) < channelOf(y); });
  offsets.assign(size_t(spec.k), 0);
  for (int64_t step = 0; step < spec.k; ++step) {
    const int64_t r = order[size_t(step)];
    const int64_t y = displacement(r, 0) - lowY, x = displacement(r, 1) - lowX;
    const int64_t channel = channelOf(r);
    offsets[size_t(step)] = int32_t(channel * padded.slabFloats() + (y % strideY * strideX + x % strideX) * padded.phaseFloats() +
                                 y / strideY * padded.pitch + x / strideX);
  }
  blocking = chosen;
  return padded;
}

void permuteReduction(std::vector<uint8_t> &packed, int64_t k, int64_t width, std::span<const int64_t> order) {
  const size_t row = size_t(width) * sizeof(float), block = size_t(k) * row;
  SINTER_ASSERT(packed.size() % block == 0 && order.size() == size_t(k), "a packed operand is not k x ", width,
                " panels");
  std::vector<uint8_t> panel(block);
  for (size_t first = 0; first < packed.size(); first += block) {
    std::memcpy(panel.data(), packed.data() + first, block);
    for (int64_t step = 0; step < k; ++step)
      std::memcpy(packed.data() + first + size_t(step) * row, panel.data() + size_t(order[size_t(step)]) * row, row);
  }
}

void emitPaddedSlab(llvm::IRBuilder<> &b, const PaddedWindow &padded, int64_t vectorWidth, llvm::Value *source,
                    llvm::Value *slab, llvm::Value *batch, llvm::Value *image, llvm::Value *outputRow) {
  llvm::Type *f32 = b.getFloatTy();
  const unsigned lanes = unsigned(vectorWidth);
  auto *vector = llvm::FixedVectorType::get(f32, lanes);
  auto constant = [&](int64_t value) { return b.getInt64(uint64_t(value)); };
  auto laneRange = [&](llvm::Value *from, llvm::Value *to) { return laneRangeMask(b, from, to, vectorWidth); };
  llvm::Value *zeros = llvm::ConstantAggregateZero::get(vector);
  llvm::Value *imageBase = b.CreateAdd(b.CreateMul(batch, constant(padded.groupStride)),
                                       b.CreateMul(image, constant(padded.imageStride)));
  // Slab row t of row phase py is X's row (outputRow + t) * strideY + py + firstRow.
  llvm::Value *row0 = b.CreateAdd(b.CreateMul(outputRow, constant(padded.strideY)), constant(padded.firstRow));
  // Whole vectors of a slab row are stored as they are; a last part vector under a mask.
  const int64_t wholeColumns = padded.pitch / vectorWidth * vectorWidth;
  emitLoop(b, constant(0), constant(padded.channels), 1, [&](llvm::Value *c) {
    llvm::Value *channelBase = b.CreateAdd(imageBase, b.CreateMul(c, constant(padded.channelStride)));
    llvm::Value *channelSlab = b.CreateInBoundsGEP(f32, slab, b.CreateMul(c, constant(padded.slabFloats())));
    for (int64_t py = 0; py < padded.strideY; ++py)
      for (int64_t px = 0; px < padded.strideX; ++px) {
        // Slab column u of column phase px is X's column u * strideX + at; the columns outside X
        // (and the rows) are padding, zero.
        const int64_t at = px + padded.firstColumn;
        llvm::Value *phaseSlab =
            b.CreateConstInBoundsGEP1_64(f32, channelSlab, uint64_t((py * padded.strideX + px) * padded.phaseFloats()));
        emitLoop(b, constant(0), constant(padded.slabRows), 1, [&](llvm::Value *t) {
          llvm::Value *y = b.CreateAdd(row0, b.CreateAdd(b.CreateMul(t, constant(padded.strideY)), constant(py)));
          llvm::Value *inside = b.CreateVectorSplat(lanes, b.CreateICmpULT(y, constant(padded.height)));
          // X's row y (column 0). Not inbounds: for padding rows and columns the address is
          // outside X, and is never read.
          llvm::Value *from =
              b.CreateGEP(f32, source, b.CreateAdd(channelBase, b.CreateMul(y, constant(padded.rowStride))));
          llvm::Value *to = b.CreateInBoundsGEP(f32, phaseSlab, b.CreateMul(t, constant(padded.pitch)));
          // Slab columns u .. u + lanes - 1: X's columns at + u * strideX + e for e < lanes *
          // strideX, read as strideX contiguous vectors (lanes inside X's row) whose every
          // strideX-th element is kept.
          auto columns = [&](llvm::Value *u) {
            llvm::Value *first = b.CreateAdd(constant(at), b.CreateMul(u, constant(padded.strideX)));
            std::vector<llvm::Value *> parts;
            for (int64_t q = 0; q < padded.strideX; ++q) {
              llvm::Value *start = b.CreateAdd(first, constant(q * vectorWidth));
              llvm::Value *read = b.CreateAnd(
                  inside, laneRange(b.CreateNeg(start), b.CreateSub(constant(padded.width), start)));
              parts.push_back(b.CreateMaskedLoad(vector, b.CreateGEP(f32, from, start), llvm::Align(4), read, zeros));
            }
            return padded.strideX == 1 ? parts[0] : everyStepLane(b, parts, padded.strideX);
          };
          if (wholeColumns > 0)
            emitLoop(b, constant(0), constant(wholeColumns), vectorWidth, [&](llvm::Value *u) {
              b.CreateAlignedStore(columns(u), b.CreateInBoundsGEP(f32, to, u), llvm::Align(4));
            }, "slab.x");
          if (wholeColumns < padded.pitch)
            b.CreateMaskedStore(columns(constant(wholeColumns)), b.CreateInBoundsGEP(f32, to, constant(wholeColumns)),
                                llvm::Align(4), laneRange(constant(0), constant(padded.pitch - wholeColumns)));
        }, "slab.row");
      }
  }, "slab.channel");
}

} // namespace sinter::codegen::llvmgen
