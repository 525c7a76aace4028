// Depthwise convolutions (one input and one output channel per group) read as a window slid
// over each (image, channel) plane on its own, so a backend can generate a direct kernel for
// them instead of running the contraction as a GEMM of one row per group:
//
//   for image, channel, position (row-major over geometry.output):
//     acc = sum over taps t inside X of lhs(channel, 0, t) * X[image][channel][at(position, t)]
//           (at_d = position_d * strides_d - padBegin_d + tap_d * dilations_d)
//     epilogue(b = channel, i = 0, j = image * positions + position, acc)
//
// Grouped convolutions with a few channels a group (RegNet's and ResNeXt's groups of 4 to 16
// channels, a depthwise convolution with a channel multiplier) are the same window over the
// group's C input planes, for each of its M outputs:
//
//   for image, group g, output o < M, position:
//     acc = sum over c < C, taps t of lhs(g, o, r(c, t)) * X[image][g * C + c][at(position, t)]
//     epilogue(b = g, i = o, j = image * positions + position, acc)
//
// where r(c, t) is the reduction's order (conv_layout.h): t * C + c with the channels innermost,
// else c * taps + t.
//
// It restates the contraction's description (contraction.h) when that description's rhs reads
// X directly (no fused prologue): depthwiseWindow checks the restatement against the rhs's
// expressions position by position and tap by tap, so a backend that trusts it computes what the
// naive lowering computes. The CPU's plane-window kernel (cpu_plane_window.h) and the CUDA
// backend's window kernel (cuda_window.h) are built on it.
#pragma once

#include "sinter/codegen/lowering/contraction.h"

#include <optional>

namespace sinter::codegen {

/// A window over a plane of 1 or 2 spatial dims as rows and columns (a 1-d window is one row): what
/// the plane-window kernels of both backends walk, for depthwise convolutions and pooling.
struct PlaneGeometry {
  int64_t inRows = 1, inColumns = 1, outRows = 1, outColumns = 1, kernelRows = 1, kernelColumns = 1;
  int64_t strideRows = 1, strideColumns = 1, dilationRows = 1, dilationColumns = 1;
  int64_t padTop = 0, padLeft = 0;
};

/// `geometry` (rank 1 or 2) as rows and columns.
PlaneGeometry planeGeometry(const WindowGeometry &geometry);

/// A depthwise window (channelsPerGroup = outputsPerGroup = 1), or a grouped one: then
/// `channels` counts the groups and `planeStride` is the distance between groups.
struct DepthwiseWindow {
  int source = -1;               ///< the buffer X
  DType stored = DType::Float32; ///< X's element type: f32, f16 or bf16
  /// X's element as the rhs reads it: the load of X (`load`), through the casts between f32, f16
  /// and bf16 that take it to f32 (none for an f32 X read as it is, one for a 16-bit X widened,
  /// two for an f32 X rounded to f16 on its way in: a graph input under --precision fp16).
  ExprRef read, load;
  int64_t channels = 0, images = 0;
  int64_t imageStride = 0, planeStride = 0; ///< elements of X between images, between channels
  WindowGeometry geometry;                  ///< 1 or 2 spatial dims
  int64_t channelsPerGroup = 1;             ///< C: input planes a group reads
  int64_t outputsPerGroup = 1;              ///< M: the contraction's m
  int64_t channelStride = 0;                ///< elements of X between a group's input planes
  bool channelsInnermost = false;           ///< r = t * C + c (else r = c * taps + t)
  int64_t positions() const;                ///< output positions of a plane
  int64_t taps() const;                     ///< the window's elements
  /// The reduction index of input plane c's tap t.
  int64_t reductionIndex(int64_t c, int64_t t) const {
    return channelsInnermost ? t * channelsPerGroup + c : c * taps() + t;
  }
};

/// The window of `contraction` when it is an f32-accumulated depthwise convolution over 1 or 2
/// spatial dims whose rhs reads X directly: a load of X through casts between f32, f16 and bf16
/// only, under the padding's select with 0 or not; nullopt otherwise. A window whose geometry disagrees with
/// the rhs's expressions is a broken invariant of the convolution's lowering.
std::optional<DepthwiseWindow> depthwiseWindow(const Contraction &contraction);

/// The window of `contraction` as depthwiseWindow finds it, with any number of input and output
/// channels a group: the general form of which depthwiseWindow's is the one-channel case.
std::optional<DepthwiseWindow> groupedWindow(const Contraction &contraction);

} // namespace sinter::codegen
