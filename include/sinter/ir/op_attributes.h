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

/// TfIdfVectorizer's attributes, checked once for shape inference, the reference and lowering:
/// mode (TF, IDF or TFIDF), 1 <= min_gram_length <= max_gram_length, max_skip_count >= 0, and the
/// integer pool split into its n-grams: pool_int64s holds the 1-grams, then the 2-grams, ...,
/// ngram_counts[n - 1] giving where the n-grams start, ngram_indexes each n-gram's output column
/// and weights (optional) its weight. UserError naming the node for pool_strings (sinter has no
/// string tensors), counts that do not split the pool into whole n-grams, or index and weight
/// lists of another length than the n-grams'.
enum class TfIdfMode { Tf, Idf, TfIdf };
struct TfIdfGram {
  std::vector<int64_t> tokens;
  int64_t column = 0;
  double weight = 1; ///< 1 without weights
};
struct TfIdfAttributes {
  TfIdfMode mode = TfIdfMode::Tf;
  int64_t minGram = 1, maxGram = 1, maxSkip = 0;
  std::vector<TfIdfGram> grams; ///< in pool order
  int64_t width = 0;            ///< the output's columns: the largest ngram_indexes entry + 1
};
TfIdfAttributes tfIdfAttributes(const Node &node);

/// Shape's `start` and `end` (ONNX defaults 0 and the rank) for an input of `rank` dims: a
/// negative value counts from the end, and both are clamped into [0, rank], as ONNX does. Shape
/// gives dims [start, end), none when end <= start.
struct DimRange {
  int64_t start = 0, end = 0;
  int64_t size() const { return end > start ? end - start : 0; }
};
DimRange shapeRange(const Node &node, int64_t rank);

/// A per-spatial-dim attribute of a sliding-window op (strides, dilations, pads, ...): its
/// `count` values, or `fallback` repeated when absent. UserError naming the node when it has
/// another count or a value below `minimum`.
std::vector<int64_t> spatialAttribute(const Node &node, const std::string &name, size_t count,
                                      int64_t fallback, int64_t minimum);

/// `auto_pad`: NOTSET (the explicit pads; an empty string means the same), VALID (no padding),
/// SAME_UPPER and SAME_LOWER (padding derived from the output extent, the odd element at the end
/// or at the beginning).
enum class AutoPad { NotSet, Valid, SameUpper, SameLower };

/// The window attributes of Conv, ConvTranspose and the pools (ONNX opset 22/23) for `rank`
/// spatial dims, each default written here once: strides and dilations 1, pads 0 (rank begins,
/// then rank ends; all 0 unless auto_pad is NOTSET, which alone reads them), auto_pad NOTSET,
/// ceil_mode 0 (the pools'), and ConvTranspose's output_padding 0 and output_shape none (its
/// spatial extents). Shape inference, the reference and lowering
/// all decode them through this. UserError naming the node for a count that does not match,
/// a stride or dilation below 1, a negative pad, an unknown auto_pad, a ceil_mode not 0 or 1.
struct WindowAttributes {
  std::vector<int64_t> strides, dilations, pads, outputPadding, outputShape;
  AutoPad autoPad = AutoPad::NotSet;
  bool ceilMode = false;

  bool samePadding() const { return autoPad == AutoPad::SameUpper || autoPad == AutoPad::SameLower; }
};
WindowAttributes windowAttributes(const Node &node, size_t rank);

/// One spatial dim of a window: the padding before and after it and the output's extent.
struct WindowExtent {
  int64_t padBegin = 0, padEnd = 0, output = 0;
};

/// Spatial dim i of Conv or a pool, for an input extent and a kernel extent (>= 1). Output
/// position o reads the inputs at
///   o * stride - padBegin + k * dilation,   k in [0, kernel)
/// where positions outside [0, input) are padding. The output extent is
///   NOTSET:         floor((input + padBegin + padEnd - window) / stride) + 1, with
///                   window = (kernel - 1) * dilation + 1; ceil_mode takes the ceiling instead and
///                   then drops a last window that would start in the end padding;
///   VALID:          the same with no padding;
///   SAME_UPPER/LOWER: ceil(input / stride), padded by (output - 1) * stride + window - input
///                   (never negative), the odd element at the end (UPPER) or the beginning (LOWER).
/// UserError naming the node when the window is larger than its padded input or the arithmetic
/// overflows.
WindowExtent windowExtent(const Node &node, const WindowAttributes &attributes, size_t i, int64_t input,
                          int64_t kernel);

/// Spatial dim i of ConvTranspose, the adjoint of Conv: input position p scatters into output
/// position p * stride - padBegin + k * dilation. The natural output extent is
///   stride * (input - 1) + output_padding + window - padBegin - padEnd;
/// output_shape or SAME_* (which aims at input * stride) fixes it instead, and the total padding
/// follows from the formula, split with the odd element at the end for SAME_UPPER and at the
/// beginning otherwise. A negative total (an output larger than the natural one) pads nothing at
/// the beginning: an explicit output_shape grows at the end (as ONNX's reference implementation
/// and onnxruntime do), while SAME_* keeps the natural extent (as ONNX's shape inference and
/// onnxruntime do; the spec's formula would shift the output). UserError naming the node for a
/// negative output extent or overflowing arithmetic.
WindowExtent transposedWindowExtent(const Node &node, const WindowAttributes &attributes, size_t i,
                                    int64_t input, int64_t kernel);

/// The whole spatial geometry of a sliding-window op, each dim by windowExtent (Conv, the
/// pools) or transposedWindowExtent (ConvTranspose, where `position` maps an input position to
/// the output position it scatters into), for the reference and for lowering alike.
struct WindowGeometry {
  std::vector<int64_t> input, kernel, strides, dilations, padBegin, padEnd, output;

  size_t rank() const { return input.size(); }
  int64_t window(size_t i) const { return (kernel[i] - 1) * dilations[i] + 1; }
  /// Conv and pools: the input coordinate along dim i of kernel element k of output position o.
  /// ConvTranspose: the output coordinate that input position o reaches through kernel element k.
  int64_t position(size_t i, int64_t o, int64_t k) const { return o * strides[i] - padBegin[i] + k * dilations[i]; }
};

/// Resolves the window attributes of `node` for spatial input dims `input` and a kernel of
/// `kernel`: windowExtent per dim, or transposedWindowExtent for ConvTranspose. UserError naming
/// the node for a kernel extent below 1 or a kernel of another rank, and as the two above.
WindowGeometry windowGeometry(const Node &node, const std::vector<int64_t> &input,
                              const std::vector<int64_t> &kernel);

} // namespace sinter
