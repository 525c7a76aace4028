// Depthwise convolution for the CPU backend: a direct kernel, not an implicit GEMM.
//
// A depthwise convolution (one input channel per group, one output channel per group) is a
// contraction of m = 1 per group over the window's k = KH x KW taps: the blocked GEMM of
// cpu_contraction.h runs it as a one-row micro-kernel over an im2col panel, so its time goes to
// the gather, not to the arithmetic. This kernel instead copies a band of one channel's plane,
// zero-padded, into scratch, and computes each output row a few vectors at a time: per tap one
// broadcast weight and one vector load (for stride s, s vectors' worth shuffled down to one) into
// a fused multiply-add, with no bounds test and no table. The contraction's epilogue (bias, fused
// activations, the output's index) runs over the finished band through the kernel-IR emitter, as
// the blocked kernel's does.
//
// The kernel's parallel index is (image, channel, band of output rows); bands are as tall as
// keeps the padded input in L1/L2, shorter when there are too few planes to share between
// threads.
#pragma once

#include "sinter/codegen/backend/backend.h"
#include "sinter/codegen/lowering/contraction.h"

#include <llvm/IR/Module.h>

#include <optional>
#include <string>

namespace sinter::codegen::llvmgen {

/// A depthwise convolution as planned once for every level: its window in two spatial dims (a
/// 1-d convolution is one of height 1), its bands and the scratch each band is copied to.
struct DepthwiseConvolution {
  int source = -1;                  ///< the buffer X
  int64_t channels = 0, images = 0; ///< the contraction's batch (groups) and images
  int64_t imageStride = 0, planeStride = 0;
  int64_t inRows = 0, inColumns = 0, outRows = 0, outColumns = 0;
  int64_t kernelRows = 0, kernelColumns = 0;
  int64_t strideRows = 1, strideColumns = 1, dilationRows = 1, dilationColumns = 1;
  int64_t padTop = 0, padLeft = 0;
  int64_t bandRows = 0, bands = 0;            ///< output rows a tile computes; tiles per plane
  int64_t paddedRows = 0, paddedColumns = 0;  ///< the scratch a band of input is copied to
  int64_t tiles() const { return images * channels * bands; }
};

/// When `group` is an f32 depthwise convolution (2-d or 1-d, X read directly, strides up to 4,
/// at most 121 taps): packs its weights into `launch` (a derived constant that replaces them,
/// channel-major), sets the parallel extent over tiles, and returns the plan every level's
/// kernel is emitted from. nullopt otherwise.
std::optional<DepthwiseConvolution> planDepthwiseConvolution(const LoweredGroup &group, LaunchShape &launch);

/// Adds `plan`'s kernel for `cpuLevel` to `module` (entry point `void NAME(void *const *args,
/// int64_t begin, int64_t end)` over tiles) and returns the described kernel for the manifest.
Kernel emitDepthwiseConvolution(const LoweredGroup &group, const DepthwiseConvolution &plan,
                                const std::string &cpuLevel, llvm::Module &module, bool hasF16c);

} // namespace sinter::codegen::llvmgen
