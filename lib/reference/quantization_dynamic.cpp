// Reference rule for DynamicQuantizeLinear: u8 quantisation of an f32 tensor over its own range
// (widened to include 0), computed in f32 as ONNX specifies:
//   scale = (max(0, max x) - min(0, min x)) / 255 (1 / 255 when the range is empty)
//   zero_point = round_half_even(clamp(-min / scale, 0, 255)), y = saturate(round(x / scale) + zp)
#include "registry.h"
#include "tensor_helpers.h"

#include <algorithm>
#include <cmath>

namespace sinter::reference {
namespace {

Outputs evalDynamicQuantizeLinear(const Node &node, const Inputs &inputs) {
  const Tensor &x = requiredInput(node, inputs, 0);
  if (x.dtype() != DType::Float32)
    userError(node.describe(), ": x must be f32, not ", dtypeName(x.dtype()));
  const float *values = x.data<float>();
  float high = 0, low = 0;
  for (int64_t i = 0; i < x.elementCount(); ++i) {
    high = std::max(high, values[i]);
    low = std::min(low, values[i]);
  }
  float scale = (high == low ? 1.0f : high - low) / 255.0f;
  float zero = std::nearbyint(std::clamp(0.0f - low / scale, 0.0f, 255.0f));
  Tensor y(DType::Uint8, x.dims());
  for (int64_t i = 0; i < x.elementCount(); ++i) {
    float q = std::nearbyint(values[i] / scale) + zero;
    y.data<uint8_t>()[i] = uint8_t(std::isnan(q) ? zero : std::clamp(q, 0.0f, 255.0f));
  }
  return {y, Tensor::scalar(DType::Float32, scale), Tensor::scalar(DType::Uint8, zero)};
}

} // namespace

void registerDynamicQuantizationRules(RuleTable &table) {
  table.add(OpKind::DynamicQuantizeLinear, evalDynamicQuantizeLinear);
}

} // namespace sinter::reference
