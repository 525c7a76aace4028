// Reference rules for the elementwise family (ai.onnx opset 23). Unary math and activations live
// in elementwise_unary.cpp, binary and variadic ops in elementwise_binary.cpp; this file registers
// them all and holds the rest: Cast, CastLike, BitCast, Clip and Where.
#include "elementwise.h"
#include "tensor_helpers.h"

#include <cstring>

namespace sinter::reference {
namespace {

/// Cast's and CastLike's `saturate` and `round_mode`, which only casts into the low-precision
/// floats read.
LowPrecisionRounding castRounding(const Node &node) {
  LowPrecisionRounding rounding;
  rounding.saturate = node.attrInt("saturate", 1) != 0;
  std::string mode = node.attrString("round_mode", "up");
  std::optional<E8M0Rounding> e8m0 = e8m0RoundingFromName(mode);
  if (!e8m0)
    userError(node.describe(), ": round_mode '", mode, "' is not one of up, down, nearest");
  rounding.e8m0 = *e8m0;
  return rounding;
}

Tensor castOf(const Node &node, const Tensor &input) {
  int64_t onnxType = node.attrInt("to", -1);
  std::optional<DType> to = dtypeFromOnnx(static_cast<int>(onnxType));
  if (!to)
    userError(node.describe(), ": cannot cast to ONNX element type ", onnxType,
              " (not supported by sinter)");
  return convertTensor(node, input, *to, castRounding(node));
}

/// Clip: min(max(x, low), high) with optional scalar bounds of x's type. NaN stays NaN; when
/// low > high every element becomes high, as the spec says.
Tensor clipOf(const Node &node, const Inputs &inputs) {
  const Tensor &x = *inputs[0];
  for (int i = 1; i < 3; ++i) {
    if (i >= static_cast<int>(inputs.size()) || !inputs[i])
      continue;
    requireSameDType(node, inputs, 0, i);
    if (inputs[i]->elementCount() != 1)
      userError(node.describe(), ": input ", i, " (", i == 1 ? "min" : "max",
                ") must be a scalar, not of shape ", shapeStr(shapeOf(inputs[i]->dims())));
  }
  const Tensor *low = inputs.size() > 1 ? inputs[1] : nullptr;
  const Tensor *high = inputs.size() > 2 ? inputs[2] : nullptr;
  return visitDType<NumericDTypes>(node, x.dtype(), [&](auto tag) {
    constexpr DType D = decltype(tag)::value;
    using T = ComputeType<D>;
    Tensor out(D, x.dims());
    for (int64_t i = 0; i < x.elementCount(); ++i) {
      T value = loadElement<D>(x, i);
      if (low && value < loadElement<D>(*low, 0))
        value = loadElement<D>(*low, 0);
      if (high && value > loadElement<D>(*high, 0))
        value = loadElement<D>(*high, 0);
      storeElement<D>(out, i, value);
    }
    return out;
  });
}

/// Where(condition, x, y) with three-way broadcasting; copies element bytes, so any dtype works.
Tensor whereOf(const Node &node, const Inputs &inputs) {
  const Tensor &condition = *inputs[0];
  const Tensor &x = *inputs[1];
  const Tensor &y = *inputs[2];
  if (condition.dtype() != DType::Bool)
    userError(node.describe(), ": the condition (input 0) must be bool, not ",
              dtypeName(condition.dtype()));
  requireSameDType(node, inputs, 1, 2);
  std::vector<int64_t> dims = broadcastDims(node, {condition.dims(), x.dims(), y.dims()});
  BroadcastIndexer conditionIndex(condition.dims(), dims), xIndex(x.dims(), dims),
      yIndex(y.dims(), dims);
  Tensor out(x.dtype(), dims);
  size_t size = dtypeSize(x.dtype());
  for (int64_t i = 0; i < out.elementCount(); ++i) {
    bool pick = condition.data<uint8_t>()[conditionIndex(i)] != 0;
    const std::byte *source = pick ? x.data() + xIndex(i) * size : y.data() + yIndex(i) * size;
    std::memcpy(out.data() + i * size, source, size);
  }
  return out;
}

// BitCast (opset 26): the same bytes read as `to`, a type of the same width.
Outputs evalBitCast(const Node &node, const Inputs &inputs) {
  const Tensor &x = requiredInput(node, inputs, 0);
  std::optional<DType> to = dtypeFromOnnx(int(node.attrInt("to", 0)));
  if (!to || dtypeBits(*to) != dtypeBits(x.dtype()))
    userError(node.describe(), ": 'to' must name a type as wide as ", dtypeName(x.dtype()));
  Tensor out(*to, x.dims());
  if (out.byteSize() > 0)
    std::memcpy(out.data(), x.data(), out.byteSize());
  if (dtypeBits(*to) < 8) // the same low bits, in `to`'s canonical byte (i4 sign-extends, u4 not)
    for (int64_t i = 0; i < out.elementCount(); ++i)
      out.data<uint8_t>()[i] = canonicalLowPrecisionByte(*to, out.data<uint8_t>()[i]);
  return {out};
}

} // namespace

void registerElementwiseRules(RuleTable &table) {
  registerUnaryMathRules(table);
  registerActivationRules(table);
  registerBinaryRules(table);
  registerVariadicRules(table);

  table.add(OpKind::Cast, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {castOf(node, *inputs[0])};
  });
  table.add(OpKind::CastLike, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {convertTensor(node, *inputs[0], inputs[1]->dtype(), castRounding(node))};
  });
  table.add(OpKind::Clip, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {clipOf(node, inputs)};
  });
  table.add(OpKind::Where, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {whereOf(node, inputs)};
  });
  table.add(OpKind::BitCast, evalBitCast);
}

} // namespace sinter::reference
