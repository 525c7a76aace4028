// Inference for elementwise ops: unary math, activations, binary and variadic ops with numpy
// broadcasting, comparisons and logic (bool results), Where, Cast, CastLike and BitCast. Dtype
// checks follow the ONNX type constraints of each op at opset 23.
#include "infer_rules.h"

namespace sinter::infer {
namespace {

bool isSignedNumeric(DType t) { return isFloat(t) || (isInteger(t) && isSigned(t)); }
/// ONNX's type set for Pow's base.
bool isPowBase(DType t) { return isFloat(t) || t == DType::Int32 || t == DType::Int64; }
/// Floats and 32/64-bit integers: PRelu (and MatMul, Gemm, most reductions).
bool isWideNumeric(DType t) {
  return isFloat(t) || t == DType::Int32 || t == DType::Int64 || t == DType::Uint32 ||
         t == DType::Uint64;
}
bool isNumericNoBf16(DType t) { return isNumeric(t) && t != DType::BFloat16; }

Types floatUnary(const InferContext &ctx) {
  ctx.requireDType(0, isFloatType, "a float type");
  return {ctx.type(0)};
}

Types numericUnary(const InferContext &ctx) {
  ctx.requireDType(0, isNumeric, "a numeric (non-bool) type");
  return {ctx.type(0)};
}

Types signedUnary(const InferContext &ctx) {
  ctx.requireDType(0, isSignedNumeric, "a float or signed integer type");
  return {ctx.type(0)};
}

Types floatPredicate(const InferContext &ctx) {
  ctx.requireDType(0, isFloatType, "a float type");
  return {{DType::Bool, ctx.shape(0)}};
}

/// Binary op whose inputs share one dtype, accepted by `accept`; the result has `result` dtype,
/// or the inputs' dtype when `result` is null.
Types binary(const InferContext &ctx, bool (*accept)(DType), const char *what,
             std::optional<DType> result = std::nullopt) {
  ctx.requireDType(0, accept, what);
  ctx.requireSameDType(0, 1);
  return {{result.value_or(ctx.dtype(0)), broadcastInputs(ctx, {0, 1})}};
}

Types arithmetic(const InferContext &ctx) {
  return binary(ctx, isNumeric, "a numeric (non-bool) type");
}
Types bitwise(const InferContext &ctx) { return binary(ctx, isIntegerType, "an integer type"); }
Types logical(const InferContext &ctx) { return binary(ctx, isBool, "bool"); }
Types comparison(const InferContext &ctx) {
  return binary(ctx, isNumeric, "a numeric (non-bool) type", DType::Bool);
}

Types variadic(const InferContext &ctx, bool (*accept)(DType), const char *what) {
  std::vector<int> inputs;
  for (int i = 0; i < ctx.numInputs(); ++i) {
    if (!ctx.hasInput(i))
      ctx.fail("input ", i, " is missing (", ctx.node().opName(), " has no optional inputs)");
    ctx.requireSameDType(0, i);
    inputs.push_back(i);
  }
  ctx.requireDType(0, accept, what);
  return {{ctx.dtype(0), broadcastInputs(ctx, inputs)}};
}

Types clip(const InferContext &ctx) {
  ctx.requireDType(0, isNumeric, "a numeric (non-bool) type");
  for (int i = 1; i <= 2; ++i) {
    if (!ctx.hasInput(i))
      continue;
    ctx.requireSameDType(0, i);
    auto count = elementCount(ctx.shape(i));
    if (count && *count != 1)
      ctx.failInput(i, "must be a scalar (one element)");
  }
  return {ctx.type(0)};
}

Types pow(const InferContext &ctx) {
  ctx.requireDType(0, isPowBase, "a float type, i32 or i64");
  ctx.requireDType(1, isNumeric, "a numeric (non-bool) type");
  return {{ctx.dtype(0), broadcastInputs(ctx, {0, 1})}};
}

Types prelu(const InferContext &ctx) {
  ctx.requireDType(0, isWideNumeric, "a float type or a 32/64-bit integer");
  ctx.requireSameDType(0, 1);
  requireUnidirectionalBroadcast(ctx, 1, ctx.shape(0));
  return {ctx.type(0)};
}

Types bitShift(const InferContext &ctx) {
  std::string direction = ctx.node().attrString("direction", "");
  if (direction != "LEFT" && direction != "RIGHT")
    ctx.fail("attribute 'direction' must be \"LEFT\" or \"RIGHT\", not \"", direction, "\"");
  // Opset 28 added the signed integer types.
  return binary(ctx, isIntegerType, "an integer type");
}

Types where(const InferContext &ctx) {
  ctx.requireDType(0, isBool, "bool");
  ctx.requireSameDType(1, 2);
  return {{ctx.dtype(1), broadcastInputs(ctx, {0, 1, 2})}};
}

Types cast(const InferContext &ctx) {
  if (!ctx.node().hasAttr("to"))
    ctx.fail("attribute 'to' is required");
  DType to = dtypeFromOnnxAttr(ctx, ctx.node().attrInt("to", 0), "to");
  return {{to, ctx.shape(0)}};
}

Types gelu(const InferContext &ctx) {
  std::string approximate = ctx.node().attrString("approximate", "none");
  if (approximate != "none" && approximate != "tanh")
    ctx.fail("attribute 'approximate' must be \"none\" or \"tanh\", not \"", approximate, "\"");
  return floatUnary(ctx);
}

/// BitCast (opset 26): the input's shape in `to`, which must be as wide as the input's type.
Types bitCast(const InferContext &ctx) {
  DType to = dtypeFromOnnxAttr(ctx, ctx.node().attrInt("to", 0), "to");
  if (dtypeBits(to) != dtypeBits(ctx.dtype(0))) // i4 and u4 are alike; i4 and i8 are not
    ctx.fail("cannot reinterpret ", dtypeName(ctx.dtype(0)), " as ", dtypeName(to),
             ": BitCast needs two types of one width");
  return {{to, ctx.shape(0)}};
}

} // namespace

void registerElementwiseInference(InferTable &table) {
  // Float-only unary math and activations.
  for (OpKind kind :
       {OpKind::Acos, OpKind::Acosh, OpKind::Asin, OpKind::Asinh, OpKind::Atan, OpKind::Atanh,
        OpKind::Ceil, OpKind::Cos, OpKind::Cosh, OpKind::Erf, OpKind::Exp, OpKind::Floor,
        OpKind::Log, OpKind::Mish, OpKind::Reciprocal, OpKind::Round, OpKind::Sigmoid,
        OpKind::Sin, OpKind::Sinh, OpKind::Softplus, OpKind::Softsign, OpKind::Sqrt, OpKind::Tan,
        OpKind::Tanh, OpKind::Elu, OpKind::HardSigmoid, OpKind::HardSwish, OpKind::LeakyRelu,
        OpKind::Selu, OpKind::ThresholdedRelu, OpKind::Swish,
        OpKind::Celu}) // Celu: f32 only before opset 28
    table.add(kind, floatUnary);
  table.add(OpKind::Gelu, gelu);
  // SwiGLU (opset 28): A * sigmoid(alpha * A) * B with A and B of one shape, not broadcast.
  table.add(OpKind::SwiGLU, [](const InferContext &ctx) -> Types {
    ctx.requireDType(0, isFloatType, "a float type");
    ctx.requireSameDType(0, 1);
    ctx.requireRank(1, ctx.rank(0));
    Shape shape = ctx.shape(0);
    for (size_t d = 0; d < shape.size(); ++d)
      shape[d] = mergeDims(ctx, shape[d], ctx.shape(1)[d], detail::concat("dim ", d, " of A and B"));
    return {{ctx.dtype(0), shape}};
  });
  table.add(OpKind::Abs, numericUnary);
  table.add(OpKind::Sign, numericUnary);
  table.add(OpKind::Shrink, [](const InferContext &ctx) -> Types {
    ctx.requireDType(0, isNumericNoBf16, "a numeric type other than bool and bf16");
    return {ctx.type(0)};
  });
  table.add(OpKind::Neg, signedUnary);
  table.add(OpKind::Relu, signedUnary);
  table.add(OpKind::BitwiseNot, [](const InferContext &ctx) -> Types {
    ctx.requireDType(0, isIntegerType, "an integer type");
    return {ctx.type(0)};
  });
  table.add(OpKind::Not, [](const InferContext &ctx) -> Types {
    ctx.requireDType(0, isBool, "bool");
    return {ctx.type(0)};
  });
  table.add(OpKind::IsNaN, floatPredicate);
  table.add(OpKind::IsInf, floatPredicate);
  table.add(OpKind::Clip, clip);

  for (OpKind kind : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div})
    table.add(kind, arithmetic);
  table.add(OpKind::Mod, [](const InferContext &ctx) -> Types {
    int64_t fmod = ctx.node().attrInt("fmod", 0);
    if (fmod != 0 && fmod != 1)
      ctx.fail("attribute 'fmod' must be 0 or 1, not ", fmod);
    return arithmetic(ctx);
  });
  table.add(OpKind::Pow, pow);
  table.add(OpKind::PRelu, prelu);
  table.add(OpKind::BitShift, bitShift);
  for (OpKind kind : {OpKind::BitwiseAnd, OpKind::BitwiseOr, OpKind::BitwiseXor})
    table.add(kind, bitwise);
  for (OpKind kind : {OpKind::And, OpKind::Or, OpKind::Xor})
    table.add(kind, logical);
  for (OpKind kind :
       {OpKind::Greater, OpKind::GreaterOrEqual, OpKind::Less, OpKind::LessOrEqual})
    table.add(kind, comparison);
  table.add(OpKind::Equal, [](const InferContext &ctx) {
    return binary(ctx, [](DType) { return true; }, "any type", DType::Bool);
  });
  table.add(OpKind::Where, where);

  table.add(OpKind::Max, [](const InferContext &ctx) {
    return variadic(ctx, isNumeric, "a numeric (non-bool) type");
  });
  table.add(OpKind::Min, [](const InferContext &ctx) {
    return variadic(ctx, isNumeric, "a numeric (non-bool) type");
  });
  table.add(OpKind::Sum,
            [](const InferContext &ctx) { return variadic(ctx, isFloatType, "a float type"); });
  table.add(OpKind::Mean,
            [](const InferContext &ctx) { return variadic(ctx, isFloatType, "a float type"); });

  table.add(OpKind::Cast, cast);
  table.add(OpKind::CastLike, [](const InferContext &ctx) -> Types {
    return {{ctx.dtype(1), ctx.shape(0)}};
  });
  table.add(OpKind::BitCast, bitCast);
}

} // namespace sinter::infer
