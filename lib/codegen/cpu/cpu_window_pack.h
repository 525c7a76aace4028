// A convolution's run-time rhs (its input windows, im2col) packed by rows of output positions,
// for the blocked contraction (cpu_contraction.h): vector copies instead of one gather per
// element.
//
// Consecutive columns j of the product that lie in one output row (the innermost spatial dim)
// read, for one r, input elements `step` apart along the input's innermost dim. The packer cuts
// a tile's columns into segments that stay within one output row and one panel, and copies each
// segment for every r of the KC block with masked vector loads (a gather when step > 1): lanes
// whose window element falls in the padding, and rows whose outer coordinates do, read as 0.
// The tables (ContractionSpec::window, cpu_contraction.cpp's rhsWindowTable) give each segment's
// origin and each r's channel offset and displacements, as for the element-wise packer.
#pragma once

#include "cpu_contraction.h"

#include <llvm/IR/IRBuilder.h>

namespace sinter::codegen::llvmgen {

/// Where the packer runs: the tile's coordinates and the buffers, as values at the builder.
struct WindowPackSite {
  llvm::Value *source = nullptr;  ///< X (f32)
  llvm::Value *table = nullptr;   ///< the window tables (i32)
  llvm::Value *pack = nullptr;    ///< panels of `width` columns, interleaved per r of the block
  llvm::Value *batch = nullptr, *column0 = nullptr, *columns = nullptr; ///< i64
  llvm::Value *reduction0 = nullptr, *reductionLength = nullptr;         ///< i64: kc, kLen
};

/// Packs columns [column0, column0 + columns) of the KC block [kc, kc + kLen) into `site.pack`:
/// panel p, r offset rr, lane l at ((p * kLen) + rr) * width + l; lanes past the tile's last
/// column are 0. `vectorWidth` is the level's f32 lanes; `width` a multiple of it. Needs
/// gather.rowLength > 0 and an f32 source.
void emitWindowPack(llvm::IRBuilder<> &b, const WindowGather &gather, const ConvolutionWindow &window,
                    int64_t width, int64_t vectorWidth, const WindowPackSite &site);

} // namespace sinter::codegen::llvmgen
