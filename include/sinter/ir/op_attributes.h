// Typed decoders of the attributes that several libraries read (shape inference, the reference,
// passes, lowering): each attribute's ONNX default is written once, here, not at every call site.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sinter {

class Node;

/// `epsilon` of BatchNormalization, InstanceNormalization, LayerNormalization,
/// GroupNormalization and RMSNormalization: added to the variance (ONNX default 1e-5).
float normalizationEpsilon(const Node &node);

/// `reduction` of ScatterElements and ScatterND: how an update combines with the element it
/// lands on (ONNX default "none": it replaces it). UserError naming the node for another name.
enum class ScatterReduction { None, Add, Mul, Max, Min };
ScatterReduction scatterReduction(const Node &node);

/// DepthToSpace's and SpaceToDepth's attributes: `blocksize` (required, positive) and `mode`,
/// the order of the block's elements in the channel dim: DCR (ONNX default: depth, column, row:
/// the block position outermost) or CRD (the channel outermost). UserError naming the node for a
/// missing or non-positive blocksize or another mode.
struct BlockRearrangement {
  int64_t blockSize = 1;
  bool channelsOutermost = false; ///< mode CRD
};
BlockRearrangement blockRearrangement(const Node &node);

/// Resize's attributes with their ONNX defaults (opset 19): `mode`, `coordinate_transformation_mode`
/// and `nearest_mode` (kept as named; their users reject what they do not know), `cubic_coeff_a`,
/// `extrapolation_value`, `exclude_outside`, `antialias`. UserError naming the node for an
/// unknown mode.
enum class ResizeMode { Nearest, Linear, Cubic };
struct ResizeAttributes {
  ResizeMode mode = ResizeMode::Nearest;
  std::string coordinateMode = "half_pixel", nearestMode = "round_prefer_floor";
  float cubicA = -0.75f, extrapolationValue = 0.0f;
  bool excludeOutside = false, antialias = false;
};
ResizeAttributes resizeAttributes(const Node &node);

/// A per-spatial-dim attribute of a sliding-window op (strides, dilations, pads, ...): its
/// `count` values, or `fallback` repeated when absent. UserError naming the node when it has
/// another count or a value below `minimum`.
std::vector<int64_t> spatialAttribute(const Node &node, const std::string &name, size_t count,
                                      int64_t fallback, int64_t minimum);

/// The spatial geometry of a sliding-window op (Conv, MaxPool, AveragePool, LpPool; ONNX opset
/// 22/23), for the reference and for lowering alike. Along spatial dim i, output position o
/// reads the inputs at
///   o * stride - padBegin + k * dilation,   k in [0, kernel)
/// where positions outside [0, input) are padding. The output extent is
///   explicit pads:  floor((input + padBegin + padEnd - window) / stride) + 1, with
///                   window = (kernel - 1) * dilation + 1; ceil_mode takes the ceiling instead and
///                   then drops a last window that would start in the end padding;
///   VALID:          the same with no padding;
///   SAME_UPPER/LOWER: ceil(input / stride), padded by (output - 1) * stride + window - input
///                   (never negative), the odd element at the end (UPPER) or the beginning (LOWER).
struct WindowGeometry {
  std::vector<int64_t> input, kernel, strides, dilations, padBegin, padEnd, output;

  size_t rank() const { return input.size(); }
  int64_t window(size_t i) const { return (kernel[i] - 1) * dilations[i] + 1; }
  /// Input coordinate along dim i of kernel element k of output position o.
  int64_t position(size_t i, int64_t o, int64_t k) const { return o * strides[i] - padBegin[i] + k * dilations[i]; }
};

/// Resolves `strides`, `dilations`, `pads` and `auto_pad` of `node` for spatial input dims
/// `input` and a kernel of `kernel` (ceilMode: MaxPool's and AveragePool's ceil_mode). UserError
/// naming the node for a kernel extent below 1, an unknown auto_pad, or a window larger than its
/// padded input.
WindowGeometry windowGeometry(const Node &node, const std::vector<int64_t> &input,
                              const std::vector<int64_t> &kernel, bool ceilMode);

} // namespace sinter
