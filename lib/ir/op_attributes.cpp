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

WindowGeometry windowGeometry(const Node &node, const std::vector<int64_t> &input,
                              const std::vector<int64_t> &kernel, bool ceilMode) {
  // Divisions rounding towards negative and positive infinity (the span below may be negative
  // only where it is rejected; strides are positive).
  auto floorDiv = [](int64_t a, int64_t b) { return a / b - ((a % b != 0) && (a < 0)); };
  auto ceilDiv = [](int64_t a, int64_t b) { return a / b + ((a % b != 0) && (a > 0)); };
  const size_t rank = input.size();
  if (kernel.size() != rank)
    userError(node.describe(), ": the kernel has ", kernel.size(), " dims but the input has ", rank, " spatial dims");
  WindowGeometry g;
  g.input = input;
  g.kernel = kernel;
  for (int64_t extent : kernel)
    if (extent < 1)
      userError(node.describe(), ": kernel extent ", extent, " must be >= 1");
  g.strides = spatialAttribute(node, "strides", rank, 1, 1);
  g.dilations = spatialAttribute(node, "dilations", rank, 1, 1);
  std::vector<int64_t> pads = spatialAttribute(node, "pads", 2 * rank, 0, 0);
  std::string autoPad = node.attrString("auto_pad", "NOTSET");
  g.padBegin.assign(rank, 0);
  g.padEnd.assign(rank, 0);
  g.output.assign(rank, 0);
  for (size_t i = 0; i < rank; ++i) {
    int64_t stride = g.strides[i], window = g.window(i);
    if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      g.output[i] = ceilDiv(input[i], stride);
      int64_t total = std::max<int64_t>(0, (g.output[i] - 1) * stride + window - input[i]);
      int64_t half = total / 2;
      g.padBegin[i] = autoPad == "SAME_UPPER" ? half : total - half;
      g.padEnd[i] = total - g.padBegin[i];
      continue;
    }
    if (autoPad == "NOTSET" || autoPad.empty()) {
      g.padBegin[i] = pads[i];
      g.padEnd[i] = pads[rank + i];
    } else if (autoPad != "VALID") {
      userError(node.describe(), ": unknown auto_pad '", autoPad, "'");
    }
    int64_t span = input[i] + g.padBegin[i] + g.padEnd[i] - window;
    if (span < 0)
      userError(node.describe(), ": the window (", window, ") is larger than the padded input (",
                input[i] + g.padBegin[i] + g.padEnd[i], ") along spatial dim ", i);
    g.output[i] = (ceilMode ? ceilDiv(span, stride) : floorDiv(span, stride)) + 1;
    if (ceilMode && (g.output[i] - 1) * stride >= input[i] + g.padBegin[i])
      --g.output[i];
  }
  return g;
}

} // namespace sinter
