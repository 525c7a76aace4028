// A 2-D convolution's rhs read in place from padded input rows, for the blocked contraction
// (cpu_contraction.h): no im2col.
//
// The product's columns are taken on the padded row pitch: output (oy, ox) of an image is column
// oy * pitch + ox, pitch = the output width + (the window's reach - 1) / the column stride. On
// that pitch, kernel element r reads, for consecutive columns, consecutive elements of one phase
// of the padded input (the input's rows and columns split by the strides into stride-y x
// stride-x phases, each holding the rows and columns of one remainder: for stride 1, one phase,
// the padded input itself), at one fixed offset from the column: so the rhs row of r is a
// contiguous run of the slab, and the micro-kernel reads it in place through a per-r offset table
// (a compile-time constant of k entries). The columns ox >= the output width of each row are
// computed and dropped by the epilogue.
//
// Per tile, the packer copies the rows of every channel that the tile's columns reach into stack
// scratch, padded with zeros and split into phases (the slab): about (rows + kernel rows - 1) /
// rows of the input once, where im2col copied it kernel-size / stride^2 times.
//
//   before (im2col):  pack[r][j] = X[c(r), oy(j) * sy + dy(r), ox(j) * sx + dx(r)], per r and column
//   after:            slab[c][py][px][t][u] = padded X[c, t * sy + py, u * sx + px], once per tile;
//                     rhs row r = slab + offset[r]
#pragma once

#include "cpu_contraction.h"

#include <llvm/IR/IRBuilder.h>

#include <cstdint>
#include <span>
#include <vector>

namespace sinter::codegen::llvmgen {

/// The padded-row form of `spec` (a convolution whose window tables are `table`, the i32 layout
/// of ContractionSpec::window's tables, described by `gather`), with its blocking: nullopt unless
/// the window is 2-D, of at most 16 stride phases, over f32 rows of X, every channel read at the
/// same number of taps,
/// the padded pitch costs at most half as many columns again and the slab of every channel fits
/// the stack. The kernel's reduction runs channel by channel (`order[s]`: the r of step s; a
/// convolution whose weights were permuted channels innermost, permute-conv-weights, is walked
/// channel-major again, so that a KC block's runs of one channel share cache lines); the lhs
/// packed at compile time must be permuted to match (permuteReduction). `offsets` receives the
/// table per step: the offset of its run in the slab, from the slab's first column.
std::optional<PaddedWindow> planPaddedWindow(const ContractionSpec &spec, const WindowGather &gather,
                                             std::span<const int32_t> table, const PanelShape &panels,
                                             ContractionBlocking &blocking, std::vector<int32_t> &offsets,
                                             std::vector<int64_t> &order);

/// Rearranges an operand packed at compile time (panels x k x width floats, any number of
/// copies) so that its step s holds what step order[s] held.
void permuteReduction(std::vector<uint8_t> &packed, int64_t k, int64_t width, std::span<const int64_t> order);

/// Copies the slab of one tile: every channel of image `image`, group `batch`, padded rows from
/// the first one output row `outputRow` reaches, into `slab` (padded.channels x slabFloats, zeros
/// outside X). `vectorWidth`: the level's f32 lanes.
void emitPaddedSlab(llvm::IRBuilder<> &b, const PaddedWindow &padded, int64_t vectorWidth, llvm::Value *source,
                    llvm::Value *slab, llvm::Value *batch, llvm::Value *image, llvm::Value *outputRow);

} // namespace sinter::codegen::llvmgen
