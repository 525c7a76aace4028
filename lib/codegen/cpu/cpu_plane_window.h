// Kernels that slide a window over each channel's plane on its own, for the CPU backend:
// depthwise convolutions and pooling (MaxPool, AveragePool). Direct kernels, not an implicit
// GEMM or one scalar loop per output.
//
// A depthwise convolution (one input channel per group, one output channel per group) is a
// contraction of m = 1 per group over the window's KH x KW taps: the blocked GEMM of
// cpu_contraction.h would run it as a one-row micro-kernel over an im2col panel, its time going
// to the gather, not to the arithmetic; pooling's naive kernel tests every tap's bounds. This
// kernel instead copies a band of one channel's plane, padded, into scratch, and computes each
// output row a few vectors at a time: per tap one vector load (for column stride s, from the
// band's rows split into s phases as they are copied) and one multiply-add with a broadcast
// weight, or a maximum, or a sum, with no bounds test and no table. The group's epilogue (bias,
// an average's division, fused activations, the output's index) runs over the finished band
// through the kernel-IR emitter, as the blocked kernel's does.
//
// The kernel's parallel index is (image, channel, band of output rows); bands are as tall as
// keeps the padded input and the band's outputs in L1, shorter when there are too few planes to
// share between threads.
#pragma once

#include "sinter/codegen/backend/backend.h"
#include "sinter/codegen/lowering/depthwise.h"

#include <llvm/IR/Module.h>

#include <optional>
#include <string>

namespace sinter::codegen::llvmgen {

/// A plane window as planned once for every level: what it combines, its window in two spatial
/// dims (a 1-d window is one of height 1), its bands and the scratch each band is copied to.
struct PlaneWindow : PlaneGeometry {
  enum class Combine { MultiplyAdd, Max, Add }; ///< a depthwise convolution, MaxPool, AveragePool
  Combine combine = Combine::MultiplyAdd;
  int source = -1;                  ///< the buffer X
  int64_t channels = 0, images = 0; ///< planes: images x channels
  int64_t imageStride = 0, planeStride = 0;
  int64_t bandRows = 0, bands = 0;           ///< output rows a tile computes; tiles per plane
  int64_t paddedRows = 0, paddedColumns = 0; ///< the scratch a band of input is copied to
  /// A scratch row's layout: at column stride s > 1 it is s phases of phaseColumns floats, padded
  /// column c at phase c % s, index c / s (every tap of a strided row then a plain vector load);
  /// rowPitch = s * phaseColumns. At stride 1, both are paddedColumns.
  int64_t phaseColumns = 0, rowPitch = 0;
  int64_t tiles() const { return images * channels * bands; }
  int64_t taps() const { return kernelRows * kernelColumns; }
};

/// When `group` is an f32 depthwise convolution (X read directly, strides up to 4, at most 121
/// taps): packs its weights into `launch` (a derived constant that replaces them,
/// channel-major), sets the parallel extent over tiles and returns the plan. nullopt otherwise.
std::optional<PlaneWindow> planDepthwiseConvolution(const LoweredGroup &group, LaunchShape &launch);

/// The same for a group with a pooling description (pooling.h) of that kind.
std::optional<PlaneWindow> planPooling(const LoweredGroup &group, LaunchShape &launch);

/// Adds `plan`'s kernel for `cpuLevel` to `module` (entry point `void NAME(void *const *args,
/// int64_t begin, int64_t end)` over tiles) and returns the described kernel for the manifest.
Kernel emitPlaneWindow(const LoweredGroup &group, const PlaneWindow &plan, const std::string &cpuLevel,
                       llvm::Module &module, bool hasF16c);

} // namespace sinter::codegen::llvmgen
