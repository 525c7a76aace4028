#include "sinter/ir/op_attributes.h"

#include "sinter/ir/graph.h"
#include "sinter/support/error.h"

#include <algorithm>
#include <string>

namespace sinter {

float normalizationEpsilon(const Node &node) { return node.attrFloat("epsilon", 1e-5f); }

ScatterReduction scatterReduction(const Node &node) {
  std::string name = node.attrString("reduction", "none");
  if (name == "none")
    return ScatterReduction::None;
  if (name == "add")
    return ScatterReduction::Add;
  if (name == "mul")
    return ScatterReduction::Mul;
  if (name == "max")
    return ScatterReduction::Max;
  if (name == "min")
    return ScatterReduction::Min;
  userError(node.describe(), ": unknown reduction '", name, "'");
}

BlockRearrangement blockRearrangement(const Node &node) {
  BlockRearrangement rearrangement;
  if (!node.hasAttr("blocksize"))
    userError(node.describe(), ": attribute 'blocksize' is required");
  rearrangement.blockSize = node.attrInt("blocksize", 1);
  if (rearrangement.blockSize <= 0)
    userError(node.describe(), ": attribute 'blocksize' must be positive, not ", rearrangement.blockSize);
  std::string mode = node.attrString("mode", "DCR");
  if (mode != "DCR" && mode != "CRD")
    userError(node.describe(), ": attribute 'mode' must be DCR or CRD, not \"", mode, "\"");
  rearrangement.channelsOutermost = mode == "CRD";
  return rearrangement;
}

ResizeAttributes resizeAttributes(const Node &node) {
  ResizeAttributes attributes;
  std::string mode = node.attrString("mode", "nearest");
  if (mode == "nearest")
    attributes.mode = ResizeMode::Nearest;
  else if (mode == "linear")
    attributes.mode = ResizeMode::Linear;
  else if (mode == "cubic")
    attributes.mode = ResizeMode::Cubic;
  else
    userError(node.describe(), ": unknown mode '", mode, "'");
  attributes.coordinateMode = node.attrString("coordinate_transformation_mode", attributes.coordinateMode);
  attributes.nearestMode = node.attrString("nearest_mode", attributes.nearestMode);
  attributes.cubicA = node.attrFloat("cubic_coeff_a", attributes.cubicA);
  attributes.extrapolationValue = node.attrFloat("extrapolation_value", attributes.extrapolationValue);
  attributes.excludeOutside = node.attrInt("exclude_outside", 0) != 0;
  attributes.antialias = node.attrInt("antialias", 0) != 0;
  return attributes;
}

DimRange shapeRange(const Node &node, int64_t rank) {
  auto clamp = [rank](int64_t axis) { return std::clamp<int64_t>(axis < 0 ? axis + rank : axis, 0, rank); };
  return {clamp(node.attrInt("start", 0)), clamp(node.attrInt("end", rank))};
}

TfIdfAttributes tfIdfAttributes(const Node &node) {
  TfIdfAttributes attributes;
  std::string mode = node.attrString("mode", "");
  if (mode == "TF")
    attributes.mode = TfIdfMode::Tf;
  else if (mode == "IDF")
    attributes.mode = TfIdfMode::Idf;
  else if (mode == "TFIDF")
    attributes.mode = TfIdfMode::TfIdf;
  else
    userError(node.describe(), ": mode '", mode, "' is not one of TF, IDF, TFIDF");
  attributes.minGram = node.attrInt("min_gram_length", 0);
  attributes.maxGram = node.attrInt("max_gram_length", 0);
  if (attributes.minGram < 1 || attributes.maxGram < attributes.minGram)
    userError(node.describe(), ": n-gram lengths must satisfy 1 <= min_gram_length (", attributes.minGram,
              ") <= max_gram_length (", attributes.maxGram, ")");
  attributes.maxSkip = node.attrInt("max_skip_count", 0);
  if (attributes.maxSkip < 0)
    userError(node.describe(), ": max_skip_count must not be negative");
  if (!node.attrStrings("pool_strings").empty())
    userError(node.describe(), ": pool_strings needs string tensors, which sinter does not have");
  std::vector<int64_t> indexes = node.attrInts("ngram_indexes");
  std::vector<int64_t> pool = node.attrInts("pool_int64s");
  std::vector<int64_t> counts = node.attrInts("ngram_counts");
  std::vector<float> weights = node.attrFloats("weights");
  if (counts.size() < size_t(attributes.maxGram))
    userError(node.describe(), ": ngram_counts has ", counts.size(), " entries; max_gram_length needs ",
              attributes.maxGram);
  for (size_t n = 0; n < counts.size(); ++n) {
    int64_t end = n + 1 < counts.size() ? counts[n + 1] : int64_t(pool.size());
    if (counts[n] < 0 || end < counts[n] || end > int64_t(pool.size()) || (end - counts[n]) % int64_t(n + 1) != 0)
      userError(node.describe(), ": ngram_counts ", counts[n], " does not split pool_int64s into whole ", n + 1,
                "-grams");
    for (int64_t at = counts[n]; at < end; at += int64_t(n + 1))
      attributes.grams.push_back({std::vector<int64_t>(pool.begin() + at, pool.begin() + at + int64_t(n + 1)), 0, 1});
  }
  if (indexes.size() != attributes.grams.size())
    userError(node.describe(), ": ngram_indexes has ", indexes.size(), " entries for ", attributes.grams.size(),
              " n-grams");
  if (!weights.empty() && weights.size() != indexes.size())
    userError(node.describe(), ": weights has ", weights.size(), " entries for ", indexes.size(), " n-grams");
  for (size_t g = 0; g < attributes.grams.size(); ++g) {
    if (indexes[g] < 0)
      userError(node.describe(), ": ngram_indexes has a negative entry ", indexes[g]);
    attributes.grams[g].column = indexes[g];
    if (!weights.empty())
      attributes.grams[g].weight = double(weights[g]);
    attributes.width = std::max(attributes.width, indexes[g] + 1);
  }
  return attributes;
}

std::vector<int64_t> spatialAttribute(const Node &node, const std::string &name, size_t count,
                                      int64_t fallback, int64_t minimum) {
  std::vector<int64_t> values = node.attrInts(name, std::vector<int64_t>(count, fallback));
  if (values.size() != count)
    userError(node.describe(), ": attribute '", name, "' has ", values.size(), " values; expected ", count);
  for (int64_t value : values)
    if (value < minimum)
      userError(node.describe(), ": attribute '", name, "' has value ", value, "; it must be >= ", minimum);
  return values;
}

namespace {

/// a + b, a * b: a UserError naming the node and the dim on overflow (attributes are the user's,
/// so any int64 may arrive).
struct CheckedWindowArithmetic {
  const Node &node;
  size_t dim;

  int64_t add(int64_t a, int64_t b) const {
    int64_t result;
    if (__builtin_add_overflow(a, b, &result))
      overflow();
    return result;
  }
  int64_t mul(int64_t a, int64_t b) const {
    int64_t result;
    if (__builtin_mul_overflow(a, b, &result))
      overflow();
    return result;
  }
  [[noreturn]] void overflow() const {
    userError(node.describe(), ": the window arithmetic of spatial dim ", dim, " overflows 64 bits");
  }
};

AutoPad autoPadOf(const Node &node) {
  std::string autoPad = node.attrString("auto_pad", "NOTSET");
  if (autoPad == "NOTSET" || autoPad.empty())
    return AutoPad::NotSet;
  if (autoPad == "VALID")
    return AutoPad::Valid;
  if (autoPad == "SAME_UPPER")
    return AutoPad::SameUpper;
  if (autoPad == "SAME_LOWER")
    return AutoPad::SameLower;
  userError(node.describe(), ": attribute 'auto_pad' must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, not \"",
            autoPad, "\"");
}

} // namespace

WindowAttributes windowAttributes(const Node &node, size_t rank) {
  WindowAttributes attributes;
  attributes.autoPad = autoPadOf(node);
  attributes.strides = spatialAttribute(node, "strides", rank, 1, 1);
  attributes.dilations = spatialAttribute(node, "dilations", rank, 1, 1);
  attributes.pads = spatialAttribute(node, "pads", 2 * rank, 0, 0);
  if (attributes.autoPad != AutoPad::NotSet) // auto_pad decides the padding; explicit pads are ignored
    attributes.pads.assign(2 * rank, 0);
  if (node.info().findAttribute("ceil_mode")) {
    int64_t ceilMode = node.attrInt("ceil_mode", 0);
    if (ceilMode != 0 && ceilMode != 1)
      userError(node.describe(), ": attribute 'ceil_mode' must be 0 or 1, not ", ceilMode);
    attributes.ceilMode = ceilMode == 1;
  }
  if (node.info().findAttribute("output_padding")) {
    attributes.outputPadding = spatialAttribute(node, "output_padding", rank, 0, 0);
    attributes.outputShape = node.attrInts("output_shape");
    if (!attributes.outputShape.empty() && attributes.outputShape.size() != rank)
      userError(node.describe(), ": attribute 'output_shape' has ", attributes.outputShape.size(),
                " values; expected ", rank);
    for (int64_t extent : attributes.outputShape)
      if (extent < 0)
        userError(node.describe(), ": attribute 'output_shape' has the negative extent ", extent);
  }
  return attributes;
}

WindowExtent windowExtent(const Node &node, const WindowAttributes &attributes, size_t i, int64_t input,
                          int64_t kernel) {
  CheckedWindowArithmetic checked{node, i};
  const size_t rank = attributes.strides.size();
  const int64_t stride = attributes.strides[i];
  const int64_t window = checked.add(checked.mul(kernel - 1, attributes.dilations[i]), 1);
  WindowExtent extent;
  if (attributes.samePadding()) {
    extent.output = input / stride + (input % stride != 0);
    int64_t total = std::max<int64_t>(0, checked.add(checked.add(checked.mul(extent.output - 1, stride), window), -input));
    int64_t half = total / 2;
    extent.padBegin = attributes.autoPad == AutoPad::SameUpper ? half : total - half;
    extent.padEnd = total - extent.padBegin;
    return extent;
  }
  extent.padBegin = attributes.pads[i];
  extent.padEnd = attributes.pads[rank + i];
  int64_t padded = checked.add(checked.add(input, extent.padBegin), extent.padEnd);
  if (padded < window)
    userError(node.describe(), ": spatial dim ", i, " of the input is ", input, " (", padded,
              " with padding), smaller than the ", window, "-wide (dilated) kernel");
  int64_t span = padded - window;
  extent.output = (attributes.ceilMode ? checked.add(span, stride - 1) : span) / stride + 1;
  // A window may not start in the end padding (PyTorch's rule, adopted by ONNX).
  if (attributes.ceilMode && (extent.output - 1) * stride >= input + extent.padBegin)
    --extent.output;
  return extent;
}

WindowExtent transposedWindowExtent(const Node &node, const WindowAttributes &attributes, size_t i,
                                    int64_t input, int64_t kernel) {
  CheckedWindowArithmetic checked{node, i};
  const size_t rank = attributes.strides.size();
  const int64_t stride = attributes.strides[i];
  const int64_t window = checked.add(checked.mul(kernel - 1, attributes.dilations[i]), 1);
  const int64_t natural = checked.add(checked.add(checked.mul(stride, input - 1), attributes.outputPadding[i]), window);
  WindowExtent extent;
  if (!attributes.outputShape.empty() || attributes.samePadding()) {
    int64_t target = attributes.outputShape.empty() ? checked.mul(input, stride) : attributes.outputShape[i];
    int64_t total = natural - target;
    if (total < 0 && attributes.outputShape.empty())
      target = natural; // SAME_* never pads negatively
    extent.padBegin = total <= 0 ? 0 : attributes.autoPad == AutoPad::SameUpper ? total / 2 : total - total / 2;
    extent.output = target;
  } else {
    extent.padBegin = attributes.pads[i];
    extent.output = checked.add(natural, -checked.add(attributes.pads[i], attributes.pads[rank + i]));
  }
  if (extent.output < 0)
    userError(node.describe(), ": the output extent along spatial dim ", i, " would be ", extent.output,
              "; the pads are larger than the output");
  extent.padEnd = natural - extent.padBegin - extent.output;
  return extent;
}

WindowGeometry windowGeometry(const Node &node, const std::vector<int64_t> &input,
                              const std::vector<int64_t> &kernel) {
  const size_t rank = input.size();
  if (kernel.size() != rank)
    userError(node.describe(), ": the kernel has ", kernel.size(), " dims but the input has ", rank, " spatial dims");
  for (int64_t extent : kernel)
    if (extent < 1)
      userError(node.describe(), ": kernel extent ", extent, " must be >= 1");
  const WindowAttributes attributes = windowAttributes(node, rank);
  const bool transposed = node.kind() == OpKind::ConvTranspose;
  WindowGeometry g;
  g.input = input;
  g.kernel = kernel;
  g.strides = attributes.strides;
  g.dilations = attributes.dilations;
  for (size_t i = 0; i < rank; ++i) {
    WindowExtent extent = transposed ? transposedWindowExtent(node, attributes, i, input[i], kernel[i])
                                     : windowExtent(node, attributes, i, input[i], kernel[i]);
    g.padBegin.push_back(extent.padBegin);
    g.padEnd.push_back(extent.padEnd);
    g.output.push_back(extent.output);
  }
  return g;
}

} // namespace sinter
