// Reference rules for binary and variadic elementwise ops with numpy broadcasting (ai.onnx
// opset 23): arithmetic, Pow, Mod, bit and logic ops, comparisons, PRelu, Max/Min/Sum/Mean.
// Integers compute in integer arithmetic (wrapping; division truncates toward zero and a zero
// divisor is a UserError); floats in their compute type (dispatch.h).
#include "elementwise.h"

#include <cmath>
#include <string>

namespace sinter::reference {

void requireSameDType(const Node &node, const Inputs &inputs, int first, int second) {
  if (inputs[first]->dtype() != inputs[second]->dtype())
    userError(node.describe(), ": input ", first, " is ", dtypeName(inputs[first]->dtype()),
              " but input ", second, " is ", dtypeName(inputs[second]->dtype()),
              "; they must have the same element type");
}

namespace {

[[noreturn]] void divisionByZero(const Node &node) {
  userError(node.describe(), ": integer division by zero");
}

/// Integer a / b, truncating toward zero; the one overflowing case (MIN / -1) wraps to MIN.
template <typename T> T integerDivide(const Node &node, T a, T b) {
  if (b == T(0))
    divisionByZero(node);
  if constexpr (std::is_signed_v<T>)
    if (b == T(-1))
      return wrappingNeg(a);
  return static_cast<T>(a / b);
}

/// Mod. With `fmod` the result takes the dividend's sign (C's % and fmod); without, the divisor's
/// (Python's %, numpy.mod).
template <typename T> T modulo(const Node &node, T a, T b, bool fmod) {
  if constexpr (std::is_floating_point_v<T>) {
    T remainder = std::fmod(a, b);
    if (fmod)
      return remainder;
    if (remainder != T(0) && ((remainder < T(0)) != (b < T(0))))
      remainder += b;
    else if (remainder == T(0))
      remainder = std::copysign(T(0), b);
    return remainder;
  } else {
    if (b == T(0))
      divisionByZero(node);
    if constexpr (std::is_signed_v<T>) {
      if (b == T(-1))
        return T(0); // avoids MIN % -1, which overflows in C++
      T remainder = static_cast<T>(a % b);
      if (!fmod && remainder != T(0) && ((remainder < T(0)) != (b < T(0))))
        remainder = static_cast<T>(remainder + b);
      return remainder;
    } else {
      return static_cast<T>(a % b);
    }
  }
}

/// Integer base ** integer exponent by repeated squaring, wrapping. A negative exponent gives the
/// truncated reciprocal (0 unless |base| is 1); zero to a negative power divides by zero.
template <typename T> T integerPower(const Node &node, T base, int64_t exponent) {
  if (exponent < 0) {
    if (base == T(0))
      divisionByZero(node);
    if (base == T(1))
      return T(1);
    if constexpr (std::is_signed_v<T>)
      if (base == T(-1))
        return exponent % 2 == 0 ? T(1) : T(-1);
    return T(0);
  }
  T result = T(1);
  while (exponent > 0) {
    if (exponent & 1)
      result = wrappingMul(result, base);
    base = wrappingMul(base, base);
    exponent >>= 1;
  }
  return result;
}

/// Pow: base and exponent may have different types; the result has the base's. Integer base with
/// integer exponent stays in integers; otherwise it computes in the base's float compute type (or
/// double for an integer base, truncating back as Cast does).
Tensor power(const Node &node, const Tensor &base, const Tensor &exponent) {
  std::vector<int64_t> dims = broadcastDims(node, {base.dims(), exponent.dims()});
  BroadcastIndexer baseIndex(base.dims(), dims), exponentIndex(exponent.dims(), dims);
  return visitDType<NumericDTypes>(node, base.dtype(), [&](auto baseTag) {
    constexpr DType B = decltype(baseTag)::value;
    using T = ComputeType<B>;
    Tensor out(B, dims);
    visitDType<NumericDTypes>(node, exponent.dtype(), [&](auto exponentTag) {
      constexpr DType E = decltype(exponentTag)::value;
      for (int64_t i = 0; i < out.elementCount(); ++i) {
        T x = loadElement<B>(base, baseIndex(i));
        auto y = loadElement<E>(exponent, exponentIndex(i));
        if constexpr (kIsInteger<B> && kIsInteger<E>) {
          int64_t power = y;
          if constexpr (std::is_same_v<decltype(y), uint64_t>)
            power = y > uint64_t(INT64_MAX) ? INT64_MAX : int64_t(y);
          storeElement<B>(out, i, integerPower<T>(node, x, power));
        } else if constexpr (kIsFloat<B>) {
          storeElement<B>(out, i, std::pow(x, static_cast<T>(y)));
        } else {
          double result = std::pow(static_cast<double>(x), static_cast<double>(y));
          storeElement<B>(out, i, convertValue<B>(result));
        }
      }
    });
    return out;
  });
}

/// PRelu: x < 0 ? slope * x : x, with slope broadcast to x's shape (unidirectionally).
Tensor preluOf(const Node &node, const Inputs &inputs) {
  requireSameDType(node, inputs, 0, 1);
  const Tensor &x = *inputs[0];
  const Tensor &slope = *inputs[1];
  if (broadcastDims(node, {x.dims(), slope.dims()}) != x.dims())
    userError(node.describe(), ": slope of shape ", shapeStr(shapeOf(slope.dims())),
              " does not broadcast to the input's shape ", shapeStr(shapeOf(x.dims())));
  BroadcastIndexer slopeIndex(slope.dims(), x.dims());
  return visitDType<NumericDTypes>(node, x.dtype(), [&](auto tag) {
    constexpr DType D = decltype(tag)::value;
    using T = ComputeType<D>;
    Tensor out(D, x.dims());
    for (int64_t i = 0; i < x.elementCount(); ++i) {
      T value = loadElement<D>(x, i);
      T factor = loadElement<D>(slope, slopeIndex(i));
      if constexpr (std::is_unsigned_v<T>)
        storeElement<D>(out, i, value); // never negative
      else if constexpr (kIsInteger<D>)
        storeElement<D>(out, i, value < T(0) ? wrappingMul(factor, value) : value);
      else
        storeElement<D>(out, i, value < T(0) ? factor * value : value);
    }
    return out;
  });
}

/// Max, Min, Sum, Mean over any number of inputs with broadcasting: folds `combine` left to
/// right, then applies `finish` (Mean's division).
template <typename List, typename Combine, typename Finish>
Tensor foldVariadic(const Node &node, const Inputs &inputs, Combine combine, Finish finish) {
  std::vector<std::vector<int64_t>> shapes;
  for (size_t i = 0; i < inputs.size(); ++i) {
    requireSameDType(node, inputs, 0, static_cast<int>(i));
    shapes.push_back(inputs[i]->dims());
  }
  std::vector<int64_t> dims = broadcastDims(node, shapes);
  std::vector<BroadcastIndexer> indexers;
  for (const auto &shape : shapes)
    indexers.emplace_back(shape, dims);
  return visitDType<List>(node, inputs[0]->dtype(), [&](auto tag) {
    constexpr DType D = decltype(tag)::value;
    using T = ComputeType<D>;
    Tensor out(D, dims);
    for (int64_t i = 0; i < out.elementCount(); ++i) {
      T accumulator = loadElement<D>(*inputs[0], indexers[0](i));
      for (size_t k = 1; k < inputs.size(); ++k)
        accumulator = combine(accumulator, loadElement<D>(*inputs[k], indexers[k](i)));
      storeElement<D>(out, i, finish(accumulator, static_cast<int64_t>(inputs.size())));
    }
    return out;
  });
}

/// numpy.maximum / numpy.minimum: a NaN in either operand gives NaN.
template <typename T> T maximum(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    if (std::isnan(a) || std::isnan(b))
      return std::isnan(a) ? a : b;
  return a < b ? b : a;
}
template <typename T> T minimum(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    if (std::isnan(a) || std::isnan(b))
      return std::isnan(a) ? a : b;
  return b < a ? b : a;
}

/// +, - and * for any compute type: wrapping for integers.
template <typename T> T add(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return wrappingAdd(a, b);
  else
    return a + b;
}
template <typename T> T subtract(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return wrappingSub(a, b);
  else
    return a - b;
}
template <typename T> T multiply(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return wrappingMul(a, b);
  else
    return a * b;
}

#define BINARY_RULE(Op, List, kBoolResult, expression)                                             \
  table.add(OpKind::Op, [](const Node &node, const Inputs &inputs) -> Outputs {                    \
    return {mapBinary<List, kBoolResult>(node, inputs, [&](auto a, auto b) {                       \
      using T [[maybe_unused]] = decltype(a);                                                      \
      (void)node;                                                                                  \
      return expression;                                                                           \
    })};                                                                                           \
  })

} // namespace

void registerBinaryRules(RuleTable &table) {
  BINARY_RULE(Add, NumericDTypes, false, add<T>(a, b));
  BINARY_RULE(Sub, NumericDTypes, false, subtract<T>(a, b));
  BINARY_RULE(Mul, NumericDTypes, false, multiply<T>(a, b));
  table.add(OpKind::Div, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {mapBinary<NumericDTypes>(node, inputs, [&](auto a, auto b) {
      using T = decltype(a);
      if constexpr (std::is_integral_v<T>)
        return integerDivide<T>(node, a, b);
      else
        return T(a / b);
    })};
  });
  table.add(OpKind::Mod, [](const Node &node, const Inputs &inputs) -> Outputs {
    bool fmod = node.attrInt("fmod", 0) != 0;
    return {mapBinary<NumericDTypes>(node, inputs, [&](auto a, auto b) {
      return modulo<decltype(a)>(node, a, b, fmod);
    })};
  });
  table.add(OpKind::Pow, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {power(node, *inputs[0], *inputs[1])};
  });
  // SwiGLU (opset 28): A * sigmoid(alpha * A) * B.
  table.add(OpKind::SwiGLU, [](const Node &node, const Inputs &inputs) -> Outputs {
    double alpha = node.attrFloat("alpha", 1.0f);
    return {mapBinary<FloatDTypes>(node, inputs, [&](auto a, auto b) {
      using T = decltype(a);
      return a / (T(1) + std::exp(-T(alpha) * a)) * b;
    })};
  });
  table.add(OpKind::PRelu, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {preluOf(node, inputs)};
  });
  table.add(OpKind::BitShift, [](const Node &node, const Inputs &inputs) -> Outputs {
    std::string direction = node.attrString("direction", "");
    if (direction != "LEFT" && direction != "RIGHT")
      userError(node.describe(), ": direction must be 'LEFT' or 'RIGHT', not '", direction, "'");
    bool left = direction == "LEFT";
    // Unsigned types as opset 23 has them; signed types as opset 28 added them (right shifts are
    // arithmetic). A shift by a negative amount or by the width or more leaves only the fill.
    return {mapBinary<IntegerDTypes>(node, inputs, [&](auto a, auto b) {
      using T = decltype(a);
      using Unsigned = std::make_unsigned_t<T>;
      constexpr int width = sizeof(T) * 8;
      bool outOfRange = b >= T(width);
      if constexpr (std::is_signed_v<T>)
        outOfRange = outOfRange || b < T(0);
      if (outOfRange) { // C++ leaves these shifts undefined
        if constexpr (std::is_signed_v<T>)
          if (!left && a < T(0))
            return T(-1);
        return T(0);
      }
      if (left)
        return static_cast<T>(static_cast<Unsigned>(static_cast<Unsigned>(a) << b));
      return static_cast<T>(a >> b); // arithmetic for signed T (C++20)
    })};
  });
  BINARY_RULE(BitwiseAnd, IntegerDTypes, false, T(a & b));
  BINARY_RULE(BitwiseOr, IntegerDTypes, false, T(a | b));
  BINARY_RULE(BitwiseXor, IntegerDTypes, false, T(a ^ b));
  BINARY_RULE(And, BoolDTypes, false, a && b);
  BINARY_RULE(Or, BoolDTypes, false, a || b);
  BINARY_RULE(Xor, BoolDTypes, false, a != b);
  BINARY_RULE(Equal, AllDTypes, true, a == b);
  BINARY_RULE(Greater, NumericDTypes, true, a > b);
  BINARY_RULE(GreaterOrEqual, NumericDTypes, true, a >= b);
  BINARY_RULE(Less, NumericDTypes, true, a < b);
  BINARY_RULE(LessOrEqual, NumericDTypes, true, a <= b);
}

void registerVariadicRules(RuleTable &table) {
  table.add(OpKind::Max, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {foldVariadic<NumericDTypes>(
        node, inputs, [](auto a, auto b) { return maximum(a, b); },
        [](auto value, int64_t) { return value; })};
  });
  table.add(OpKind::Min, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {foldVariadic<NumericDTypes>(
        node, inputs, [](auto a, auto b) { return minimum(a, b); },
        [](auto value, int64_t) { return value; })};
  });
  table.add(OpKind::Sum, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {foldVariadic<NumericDTypes>(
        node, inputs, [](auto a, auto b) { return add(a, b); },
        [](auto value, int64_t) { return value; })};
  });
  table.add(OpKind::Mean, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {foldVariadic<FloatDTypes>(
        node, inputs, [](auto a, auto b) { return a + b; },
        [](auto value, int64_t count) { return value / static_cast<decltype(value)>(count); })};
  });
}

} // namespace sinter::reference
