#include "dispatch.h"

namespace sinter::reference {
namespace {
// visitDType needs a node for its message; these helpers are only called for dtypes every tensor
// can have, so a missing case is internal.
template <typename Fn> decltype(auto) visitAnyDType(DType dtype, Fn &&fn) {
  switch (dtype) {
#define DTYPE(Name, text, size, onnx, bits)                                                            \
  case DType::Name:                                                                                \
    return fn(DTypeConstant<DType::Name>{});
#include "sinter/ir/dtypes.def"
  }
  SINTER_ASSERT(false, "unhandled dtype");
}
} // namespace

double loadAsDouble(const Tensor &tensor, int64_t i) {
  return visitAnyDType(tensor.dtype(), [&](auto tag) -> double {
    constexpr DType D = decltype(tag)::value;
    return static_cast<double>(loadElement<D>(tensor, i));
  });
}

void storeFromDouble(Tensor &tensor, int64_t i, double value) {
  visitAnyDType(tensor.dtype(), [&](auto tag) {
    constexpr DType D = decltype(tag)::value;
    storeElement<D>(tensor, i, convertValue<D>(value));
  });
}

Tensor convertTensor(const Node &node, const Tensor &input, DType to,
                     LowPrecisionRounding rounding) {
  Tensor out(to, input.dims());
  if (isLowPrecisionFloat(to)) {
    // Every element's value is exact as a double, except 64-bit integers beyond 2^53, which
    // are far out of every low-precision float's range and saturate (or overflow) anyway.
    auto *codes = out.data<uint8_t>();
    for (int64_t i = 0; i < input.elementCount(); ++i)
      codes[i] = encodeLowPrecisionFloat(to, loadAsDouble(input, i), rounding);
    return out;
  }
  visitAnyDType(input.dtype(), [&](auto fromTag) {
    constexpr DType From = decltype(fromTag)::value;
    visitAnyDType(to, [&](auto toTag) {
      constexpr DType To = decltype(toTag)::value;
      for (int64_t i = 0; i < input.elementCount(); ++i)
        storeElement<To>(out, i, convertValue<To>(loadElement<From>(input, i)));
    });
  });
  return out;
}

std::optional<std::vector<int64_t>> optionalIntsInput(const Node &node, const Tensor *input,
                                                      int inputIndex) {
  if (!input)
    return std::nullopt;
  if (input->dtype() != DType::Int64 && input->dtype() != DType::Int32)
    userError(node.describe(), ": input ", inputIndex, " must be int64 or int32, not ",
              dtypeName(input->dtype()));
  if (input->rank() > 1)
    userError(node.describe(), ": input ", inputIndex, " must be a scalar or 1-D, not rank ",
              input->rank());
  return input->toInts();
}

int64_t scalarIntInput(const Node &node, const Tensor *input, int inputIndex, int64_t fallback) {
  std::optional<std::vector<int64_t>> values = optionalIntsInput(node, input, inputIndex);
  if (!values)
    return fallback;
  if (values->size() != 1)
    userError(node.describe(), ": input ", inputIndex, " must hold one value, not ",
              values->size());
  return values->front();
}

} // namespace sinter::reference
