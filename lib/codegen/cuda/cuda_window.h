// The CUDA window kernel: one direct kernel for the operations that slide a small window over
// each plane of an NCHW tensor on its own (depthwise.h, pooling.h):
//   - depthwise convolutions (one input and one output channel a group),
//   - grouped convolutions with a few channels a group (RegNet's, ResNeXt's; depthwise.h's
//     groupedWindow), and a depthwise convolution with a channel multiplier,
//   - MaxPool and AveragePool.
// The generic kernel's thread per output recomputes each tap's position (a division and
// remainder of the flattened window), tests its bounds and reads it from global memory:
// ConvNeXt-T b32's 7x7 depthwise layers ran at about 1.2 TFLOP/s that way on the H200, and
// RegNetY-400MF's grouped 3x3 layers took 1.26 ms of its 2.28.
//
// A block stages a band of input rows of a few planes (image, group) in shared memory as f32,
// `fill` where the window reaches past the plane (zero; -inf for a maximum), with a
// convolution's weights beside them. Each thread then computes a vertical run of `run` outputs
// of one column: for each kernel column it reads the run's input column once into registers and
// combines it with every kernel row (a multiply-add by the weight, a maximum, a sum), so a 7x7
// tap costs one operation and about a third of a shared-memory read, with no index arithmetic
// and no bounds test. A grouped convolution's block stages the group's C input planes, and a
// thread computes its run for all of the group's M outputs (or a share of them when there would
// be too few threads), so every staged column it reads serves all of them. Consecutive threads
// take consecutive columns: their shared reads and their epilogues' stores are consecutive
// addresses. The operation's own epilogue (bias, fused activations, a residual, an average's
// count, the store in the output's type) runs per output.
#pragma once

#include "sinter/codegen/backend/backend.h"
#include "sinter/codegen/lowering/depthwise.h"

#include <optional>
#include <string>

namespace sinter::codegen::cuda {

/// How a window operation is cut into blocks; its window as rows and columns.
struct WindowPlan : PlaneGeometry {
  /// What the window computes: a convolution's products with its weights, or a pooling's
  /// maximum or sum of the taps.
  enum class Combine { MultiplyAdd, Max, Add } combine = Combine::MultiplyAdd;
  DepthwiseWindow window; ///< for pooling, one channel and one output a group, and no weights
  int run = 1;                 ///< output rows a thread computes (for each of its outputs)
  int64_t outputsPerThread = 1; ///< of the group's outputs, consecutive ones; divides them
  int64_t bandRows = 1;        ///< output rows a block computes of each of its planes (a multiple of run, or all)
  int64_t bands = 1;           ///< bands a plane is cut into
  int64_t planesPerBlock = 1;  ///< consecutive planes (image, group; image-major) a block computes
  int64_t sharedRows = 1, sharedColumns = 1; ///< the input staged for one input plane's band
  int threads = 128;
  int64_t planes() const { return window.images * window.channels; }
  int64_t outputSplits() const { return window.outputsPerGroup / outputsPerThread; }
  /// A block's items for one plane: (output split, run, output column), a thread an item.
  int64_t items() const { return outputSplits() * ((bandRows + run - 1) / run) * outColumns; }
  int64_t blocks() const { return (planes() + planesPerBlock - 1) / planesPerBlock * bands; }
};

/// The plan for `group` when it is a pooling (pooling.h) or a depthwise or grouped convolution
/// that the kernel takes (X read directly, at most 121 taps, strides up to 4; a convolution of
/// more than one group, of at most 16 input and 32 output channels; a band's staged input and
/// the group's weights within the shared-memory budget); nullopt otherwise.
std::optional<WindowPlan> planWindowKernel(const LoweredGroup &group);

/// The kernel's CUDA C and its launch shape, for the group planWindowKernel planned.
std::string printWindowKernel(const LoweredGroup &group, const WindowPlan &plan, LaunchShape &launch);

} // namespace sinter::codegen::cuda
