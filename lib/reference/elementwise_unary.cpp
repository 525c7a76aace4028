// Reference rules for unary elementwise math and the activations (ai.onnx opset 23). Floats
// compute in their compute type (double for f32/f64, float for f16/bf16; dispatch.h); integers in
// their own type, wrapping on overflow.
#include "elementwise.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace sinter::reference {
namespace {

/// A rule applying `expression` (in terms of `x`, of compute type T) to every element of a float
/// tensor.
#define FLOAT_UNARY(Op, expression)                                                                \
  table.add(OpKind::Op, [](const Node &node, const Inputs &inputs) -> Outputs {                    \
    return {mapUnary<FloatDTypes>(node, *inputs[0], [](auto x) {                                   \
      using T = decltype(x);                                                                       \
      return static_cast<T>(expression);                                                           \
    })};                                                                                           \
  })

/// Numerically stable logistic function.
template <typename T> T sigmoid(T x) {
  if (x >= T(0))
    return T(1) / (T(1) + std::exp(-x));
  T e = std::exp(x);
  return e / (T(1) + e);
}

/// log(1 + exp(x)) without overflow for large x.
template <typename T> T softplus(T x) {
  if (x > T(0))
    return x + std::log1p(std::exp(-x));
  return std::log1p(std::exp(x));
}

} // namespace

void registerUnaryMathRules(RuleTable &table) {
  FLOAT_UNARY(Acos, std::acos(x));
  FLOAT_UNARY(Acosh, std::acosh(x));
  FLOAT_UNARY(Asin, std::asin(x));
  FLOAT_UNARY(Asinh, std::asinh(x));
  FLOAT_UNARY(Atan, std::atan(x));
  FLOAT_UNARY(Atanh, std::atanh(x));
  FLOAT_UNARY(Ceil, std::ceil(x));
  FLOAT_UNARY(Cos, std::cos(x));
  FLOAT_UNARY(Cosh, std::cosh(x));
  FLOAT_UNARY(Erf, std::erf(x));
  FLOAT_UNARY(Exp, std::exp(x));
  FLOAT_UNARY(Floor, std::floor(x));
  FLOAT_UNARY(Log, std::log(x));
  FLOAT_UNARY(Reciprocal, T(1) / x);
  FLOAT_UNARY(Round, std::nearbyint(x)); // default rounding mode: half to even
  FLOAT_UNARY(Sigmoid, sigmoid(x));
  FLOAT_UNARY(Sin, std::sin(x));
  FLOAT_UNARY(Sinh, std::sinh(x));
  FLOAT_UNARY(Softplus, softplus(x));
  FLOAT_UNARY(Softsign, x / (T(1) + std::fabs(x)));
  FLOAT_UNARY(Sqrt, std::sqrt(x));
  FLOAT_UNARY(Tan, std::tan(x));
  FLOAT_UNARY(Tanh, std::tanh(x));
  FLOAT_UNARY(Mish, x * std::tanh(softplus(x)));

  table.add(OpKind::Abs, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {mapUnary<NumericDTypes>(node, *inputs[0], [](auto x) {
      using T = decltype(x);
      if constexpr (std::is_floating_point_v<T>)
        return std::fabs(x);
      else if constexpr (std::is_signed_v<T>)
        return x < T(0) ? wrappingNeg(x) : x; // abs(INT_MIN) wraps to INT_MIN
      else
        return x;
    })};
  });
  table.add(OpKind::Neg, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {mapUnary<SignedNumericDTypes>(node, *inputs[0], [](auto x) {
      using T = decltype(x);
      if constexpr (std::is_floating_point_v<T>)
        return -x;
      else
        return wrappingNeg(x);
    })};
  });
  table.add(OpKind::Sign, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {mapUnary<NumericDTypes>(node, *inputs[0], [](auto x) {
      using T = decltype(x);
      if constexpr (std::is_unsigned_v<T>)
        return x > T(0) ? T(1) : T(0);
      else if constexpr (std::is_floating_point_v<T>)
        return std::isnan(x) ? x : x > T(0) ? T(1) : x < T(0) ? T(-1) : T(0);
      else
        return x > T(0) ? T(1) : x < T(0) ? T(-1) : T(0);
    })};
  });
  table.add(OpKind::Relu, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {mapUnary<NumericDTypes>(node, *inputs[0], [](auto x) {
      using T = decltype(x);
      if constexpr (std::is_unsigned_v<T>)
        return x;
      else
        return x < T(0) ? T(0) : x; // NaN stays NaN
    })};
  });
  table.add(OpKind::BitwiseNot, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {mapUnary<IntegerDTypes>(node, *inputs[0], [](auto x) {
      return static_cast<decltype(x)>(~x);
    })};
  });
  table.add(OpKind::Not, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {mapUnary<BoolDTypes>(node, *inputs[0], [](bool x) { return !x; })};
  });
  table.add(OpKind::IsNaN, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {mapUnaryTo<DType::Bool, FloatDTypes>(node, *inputs[0],
                                                 [](auto x) { return bool(std::isnan(x)); })};
  });
  table.add(OpKind::IsInf, [](const Node &node, const Inputs &inputs) -> Outputs {
    bool negative = node.attrInt("detect_negative", 1) != 0;
    bool positive = node.attrInt("detect_positive", 1) != 0;
    return {mapUnaryTo<DType::Bool, FloatDTypes>(node, *inputs[0], [&](auto x) {
      return std::isinf(x) && (x > 0 ? positive : negative);
    })};
  });
}

void registerActivationRules(RuleTable &table) {
  // Swish (opset 24): x * sigmoid(alpha * x).
  table.add(OpKind::Swish, [](const Node &node, const Inputs &inputs) -> Outputs {
    double alpha = node.attrFloat("alpha", 1.0f);
    return {mapUnary<FloatDTypes>(node, *inputs[0], [&](auto x) {
      using T = decltype(x);
      return x / (T(1) + std::exp(-T(alpha) * x));
    })};
  });
  table.add(OpKind::Celu, [](const Node &node, const Inputs &inputs) -> Outputs {
    double alpha = node.attrFloat("alpha", 1.0f);
    return {mapUnary<FloatDTypes>(node, *inputs[0], [&](auto x) {
      using T = decltype(x);
      T a = T(alpha);
      return std::max(T(0), x) + std::min(T(0), a * (std::exp(x / a) - T(1)));
    })};
  });
  table.add(OpKind::Elu, [](const Node &node, const Inputs &inputs) -> Outputs {
    double alpha = node.attrFloat("alpha", 1.0f);
    return {mapUnary<FloatDTypes>(node, *inputs[0], [&](auto x) {
      using T = decltype(x);
      return x < T(0) ? T(alpha) * (std::exp(x) - T(1)) : x;
    })};
  });
  table.add(OpKind::Gelu, [](const Node &node, const Inputs &inputs) -> Outputs {
    std::string approximate = node.attrString("approximate", "none");
    if (approximate != "none" && approximate != "tanh")
      userError(node.describe(), ": approximate must be 'none' or 'tanh', not '", approximate, "'");
    bool useTanh = approximate == "tanh";
    return {mapUnary<FloatDTypes>(node, *inputs[0], [&](auto x) {
      using T = decltype(x);
      if (useTanh) {
        T inner = T(std::sqrt(2.0 / std::numbers::pi)) * (x + T(0.044715) * x * x * x);
        return T(0.5) * x * (T(1) + std::tanh(inner));
      }
      return T(0.5) * x * (T(1) + std::erf(x / T(std::numbers::sqrt2)));
    })};
  });
  table.add(OpKind::HardSigmoid, [](const Node &node, const Inputs &inputs) -> Outputs {
    double alpha = node.attrFloat("alpha", 0.2f);
    double beta = node.attrFloat("beta", 0.5f);
    return {mapUnary<FloatDTypes>(node, *inputs[0], [&](auto x) {
      using T = decltype(x);
      return std::max(T(0), std::min(T(1), T(alpha) * x + T(beta)));
    })};
  });
  table.add(OpKind::HardSwish, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {mapUnary<FloatDTypes>(node, *inputs[0], [](auto x) {
      using T = decltype(x);
      return x * std::max(T(0), std::min(T(1), T(1.0 / 6.0) * x + T(0.5)));
    })};
  });
  table.add(OpKind::LeakyRelu, [](const Node &node, const Inputs &inputs) -> Outputs {
    double alpha = node.attrFloat("alpha", 0.01f);
    return {mapUnary<FloatDTypes>(node, *inputs[0], [&](auto x) {
      using T = decltype(x);
      return x < T(0) ? T(alpha) * x : x;
    })};
  });
  table.add(OpKind::Selu, [](const Node &node, const Inputs &inputs) -> Outputs {
    double alpha = node.attrFloat("alpha", 1.67326319217681884765625f);
    double gamma = node.attrFloat("gamma", 1.05070102214813232421875f);
    return {mapUnary<FloatDTypes>(node, *inputs[0], [&](auto x) {
      using T = decltype(x);
      return x > T(0) ? T(gamma) * x : T(gamma) * (T(alpha) * std::exp(x) - T(alpha));
    })};
  });
  table.add(OpKind::Shrink, [](const Node &node, const Inputs &inputs) -> Outputs {
    double bias = node.attrFloat("bias", 0.0f);
    double lambd = node.attrFloat("lambd", 0.5f);
    // Numeric inputs of any type: compare and shift in double, then convert back (integers
    // truncate toward zero and saturate, as Cast does).
    return {visitDType<NumericDTypes>(node, inputs[0]->dtype(), [&](auto tag) {
      constexpr DType D = decltype(tag)::value;
      const Tensor &x = *inputs[0];
      Tensor out(D, x.dims());
      for (int64_t i = 0; i < x.elementCount(); ++i) {
        double value = static_cast<double>(loadElement<D>(x, i));
        double result = value < -lambd ? value + bias : value > lambd ? value - bias : 0.0;
        storeElement<D>(out, i, convertValue<D>(result));
      }
      return out;
    })};
  });
  table.add(OpKind::ThresholdedRelu, [](const Node &node, const Inputs &inputs) -> Outputs {
    double alpha = node.attrFloat("alpha", 1.0f);
    return {mapUnary<FloatDTypes>(node, *inputs[0], [&](auto x) {
      using T = decltype(x);
      return x > T(alpha) ? x : T(0);
    })};
  });
}

} // namespace sinter::reference
