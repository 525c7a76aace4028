// Lowering of elementwise ops: each is an injective rule over its broadcast inputs.
#include "sinter/codegen/kernel/low_precision_cast.h"
#include "lowering_rules.h"

#include "sinter/support/error.h"

#include <cmath>

namespace sinter::codegen {
namespace {

/// Input i at the output index, numpy-broadcast.
ExprRef operand(const RuleContext &ctx, int i, const std::vector<ExprRef> &index) {
  return ctx.input(i)(broadcastIndex(index, ctx.inputDims(i)));
}

ExprRef k(const ExprRef &like, double value) { return typedConstant(like->type, value); }

ExprRef less(ExprRef a, ExprRef b) { return binary(BinaryOp::Lt, a, b); }

template <UnaryOp Op>
ExprRef unaryRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  return unary(Op, operand(ctx, 0, index));
}

template <BinaryOp Op>
ExprRef binaryRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  return binary(Op, operand(ctx, 0, index), operand(ctx, 1, index));
}

template <BinaryOp Op>
ExprRef variadicRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  ExprRef result = operand(ctx, 0, index);
  for (int i = 1; i < ctx.node().numInputs(); ++i)
    result = binary(Op, result, operand(ctx, i, index));
  return result;
}

ExprRef meanRule(const RuleContext &ctx, int output, const std::vector<ExprRef> &index) {
  ExprRef sum = variadicRule<BinaryOp::Add>(ctx, output, index);
  return fdiv(sum, k(sum, ctx.node().numInputs()));
}

/// ONNX Div: integer division truncates (C semantics), float is IEEE.
ExprRef divRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  return fdiv(operand(ctx, 0, index), operand(ctx, 1, index));
}

/// Mod: fmod=1 is C fmod (sign of the dividend); fmod=0 takes the divisor's sign (floor
/// division), for floats (opset 28) as for integers, with a zero remainder signed like the divisor.
ExprRef modRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  ExprRef a = operand(ctx, 0, index), b = operand(ctx, 1, index);
  ExprRef r = binary(BinaryOp::Rem, a, b);
  if (ctx.node().attrInt("fmod", 0) == 1)
    return r;
  ExprRef zero = k(r, 0);
  ExprRef signsDiffer = binary(BinaryOp::Ne, less(r, zero), less(b, zero));
  ExprRef isZero = binary(BinaryOp::Eq, r, zero);
  ExprRef adjust = binary(BinaryOp::LogicalAnd, unary(UnaryOp::Not, isZero), signsDiffer);
  ExprRef floored = select(adjust, fadd(r, b), r);
  if (!isFloat(a->type))
    return floored;
  return select(isZero, select(less(b, zero), k(r, -0.0), zero), floored);
}

ExprRef powRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  ExprRef a = operand(ctx, 0, index);
  ExprRef b = cast(operand(ctx, 1, index), a->type);
  return binary(BinaryOp::Pow, a, b);
}

/// The unsigned type of the same width as an integer type.
DType unsignedOf(DType type) {
  switch (type) {
  case DType::Int8: return DType::Uint8;
  case DType::Int16: return DType::Uint16;
  case DType::Int32: return DType::Uint32;
  case DType::Int64: return DType::Uint64;
  default: return type;
  }
}

/// BitShift. The kernel IR's shifts are logical and give 0 for an amount of the width or more,
/// so a signed operand (opset 28) shifts as its unsigned bits: a negative amount reads as a huge
/// one (0 left), and an arithmetic right shift of a negative x is ~(~x >> n), which is -1 when
/// every bit is shifted out.
ExprRef bitShiftRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  bool left = ctx.node().attrString("direction", "") == "LEFT";
  BinaryOp op = left ? BinaryOp::Shl : BinaryOp::Shr;
  ExprRef a = operand(ctx, 0, index), b = operand(ctx, 1, index);
  DType type = a->type, bits = unsignedOf(type);
  if (bits == type)
    return binary(op, a, b);
  ExprRef x = cast(a, bits), amount = cast(b, bits);
  if (left)
    return cast(binary(op, x, amount), type);
  ExprRef negative = less(a, k(a, 0));
  ExprRef flipped = select(negative, unary(UnaryOp::BitNot, x), x);
  ExprRef shifted = binary(op, flipped, amount);
  return cast(select(negative, unary(UnaryOp::BitNot, shifted), shifted), type);
}

ExprRef notRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  return unary(UnaryOp::Not, operand(ctx, 0, index));
}

ExprRef reluRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  ExprRef x = operand(ctx, 0, index);
  return fmax(x, k(x, 0));
}

ExprRef reciprocalRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  ExprRef x = operand(ctx, 0, index);
  return fdiv(k(x, 1), x);
}

ExprRef softplusRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  // log(1 + exp(x)), computed as max(x, 0) + log(1 + exp(-|x|)) to avoid overflow.
  ExprRef x = operand(ctx, 0, index);
  ExprRef tail = unary(UnaryOp::Log, fadd(k(x, 1), unary(UnaryOp::Exp, unary(UnaryOp::Neg, unary(UnaryOp::Abs, x)))));
  return fadd(fmax(x, k(x, 0)), tail);
}

ExprRef softsignRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  ExprRef x = operand(ctx, 0, index);
  return fdiv(x, fadd(k(x, 1), unary(UnaryOp::Abs, x)));
}

ExprRef mishRule(const RuleContext &ctx, int output, const std::vector<ExprRef> &index) {
  ExprRef x = operand(ctx, 0, index);
  return fmul(x, unary(UnaryOp::Tanh, softplusRule(ctx, output, index)));
}

ExprRef eluRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  ExprRef x = operand(ctx, 0, index);
  ExprRef alpha = k(x, ctx.node().attrFloat("alpha", 1.0f));
  ExprRef negative = fmul(alpha, fsub(unary(UnaryOp::Exp, x), k(x, 1)));
  return select(less(x, k(x, 0)), negative, x);
}

ExprRef celuRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  // max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
  ExprRef x = operand(ctx, 0, index);
  ExprRef alpha = k(x, ctx.node().attrFloat("alpha", 1.0f));
  ExprRef negative = fmul(alpha, fsub(unary(UnaryOp::Exp, fdiv(x, alpha)), k(x, 1)));
  return fadd(fmax(x, k(x, 0)), fmin(k(x, 0), negative));
}

/// x * sigmoid(alpha * x), as x / (1 + exp(-alpha * x)).
ExprRef swishOf(ExprRef x, double alpha) {
  return fdiv(x, fadd(k(x, 1), unary(UnaryOp::Exp, fmul(k(x, -alpha), x))));
}

ExprRef swishRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  return swishOf(operand(ctx, 0, index), ctx.node().attrFloat("alpha", 1.0f));
}

ExprRef swigluRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  return fmul(swishOf(operand(ctx, 0, index), ctx.node().attrFloat("alpha", 1.0f)), operand(ctx, 1, index));
}

ExprRef seluRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  ExprRef x = operand(ctx, 0, index);
  ExprRef alpha = k(x, ctx.node().attrFloat("alpha", 1.67326319217681884765625f));
  ExprRef gamma = k(x, ctx.node().attrFloat("gamma", 1.05070102214813232421875f));
  ExprRef negative = fsub(fmul(alpha, unary(UnaryOp::Exp, x)), alpha);
  return fmul(gamma, select(binary(BinaryOp::Le, x, k(x, 0)), negative, x));
}

ExprRef leakyReluRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  ExprRef x = operand(ctx, 0, index);
  ExprRef alpha = k(x, ctx.node().attrFloat("alpha", 0.01f));
  return select(less(x, k(x, 0)), fmul(alpha, x), x);
}

ExprRef preluRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  ExprRef x = operand(ctx, 0, index), slope = operand(ctx, 1, index);
  return select(less(x, k(x, 0)), fmul(slope, x), x);
}

ExprRef thresholdedReluRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  ExprRef x = operand(ctx, 0, index);
  ExprRef alpha = k(x, ctx.node().attrFloat("alpha", 1.0f));
  return select(binary(BinaryOp::Gt, x, alpha), x, k(x, 0));
}

ExprRef hardSigmoidRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  ExprRef x = operand(ctx, 0, index);
  ExprRef alpha = k(x, ctx.node().attrFloat("alpha", 0.2f));
  ExprRef beta = k(x, ctx.node().attrFloat("beta", 0.5f));
  return fmax(k(x, 0), fmin(k(x, 1), fadd(fmul(alpha, x), beta)));
}

ExprRef hardSwishRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  ExprRef x = operand(ctx, 0, index);
  ExprRef gate = fmax(k(x, 0), fmin(k(x, 1), fadd(fmul(k(x, 1.0 / 6.0), x), k(x, 0.5))));
  return fmul(x, gate);
}

ExprRef shrinkRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  ExprRef x = operand(ctx, 0, index);
  ExprRef bias = k(x, ctx.node().attrFloat("bias", 0.0f));
  ExprRef lambd = k(x, ctx.node().attrFloat("lambd", 0.5f));
  ExprRef low = select(less(x, unary(UnaryOp::Neg, lambd)), fadd(x, bias), k(x, 0));
  return select(binary(BinaryOp::Gt, x, lambd), fsub(x, bias), low);
}

ExprRef geluRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  ExprRef x = operand(ctx, 0, index);
  if (ctx.node().attrString("approximate", "none") == "tanh") {
    // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    ExprRef inner = fmul(k(x, 0.7978845608028654), fadd(x, fmul(k(x, 0.044715), fmul(x, fmul(x, x)))));
    return fmul(fmul(k(x, 0.5), x), fadd(k(x, 1), unary(UnaryOp::Tanh, inner)));
  }
  // x Phi(x), Phi(x) = 0.5 (1 + erf(x / sqrt(2))). A result stored in 16 bits takes the gate as
  // its own op, which a backend may compute more cheaply than erf to well below a 16-bit
  // rounding (CUDA: cudaPrelude's sn_normal_cdf, within 3e-7); a float32 result keeps erf.
  const DType stored = ctx.node().output(0)->dtype();
  if (stored == DType::Float16 || stored == DType::BFloat16)
    return fmul(x, unary(UnaryOp::NormalCdf, x));
  return fmul(fmul(k(x, 0.5), x), fadd(k(x, 1), unary(UnaryOp::Erf, fmul(x, k(x, 0.7071067811865476)))));
}

ExprRef clipRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  ExprRef x = operand(ctx, 0, index);
  if (ctx.hasInput(1))
    x = fmax(x, firstElement(ctx, 1));
  if (ctx.hasInput(2))
    x = fmin(x, firstElement(ctx, 2));
  return x;
}

ExprRef whereRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  return select(operand(ctx, 0, index), operand(ctx, 1, index), operand(ctx, 2, index));
}

ExprRef castRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  DType to = ctx.node().output(0)->dtype();
  ExprRef x = operand(ctx, 0, index);
  if (isLowPrecision(to) || isLowPrecision(x->type)) {
    // Cast's saturate and round_mode choose how a value narrows into a low-precision float.
    LowPrecisionRounding rounding;
    rounding.saturate = ctx.node().attrInt("saturate", 1) != 0;
    std::optional<E8M0Rounding> e8m0 = e8m0RoundingFromName(ctx.node().attrString("round_mode", "up"));
    if (!e8m0)
      userError(ctx.node().describe(), ": round_mode '", ctx.node().attrString("round_mode", ""),
                "' is not one of up, down, nearest");
    rounding.e8m0 = *e8m0;
    return cast(castLowPrecision(x, to, rounding), computeType(to));
  }
  // Through the storage type, so f32 -> f16 rounds even though both compute as f32.
  return cast(cast(x, to), computeType(to));
}

/// BitCast (opset 26): the input's bits as `to` (a type of the same width); a bool is its byte.
ExprRef bitCastRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  DType from = ctx.node().input(0)->dtype(), to = ctx.node().output(0)->dtype();
  ExprRef x = cast(operand(ctx, 0, index), from); // the stored form (f16 from its f32 value)
  if (from == DType::Bool || to == DType::Bool)
    return cast(cast(x, DType::Uint8), computeType(to)); // a bool's byte is 0 or 1
  if (dtypeBits(to) < 8) { // the same low bits, in `to`'s canonical byte (i4 sign-extends)
    int bits = dtypeBits(to);
    ExprRef low = binary(BinaryOp::BitAnd, bitcast(x, DType::Uint8), intConstant((1 << bits) - 1, DType::Uint8));
    if (isSigned(to))
      low = binary(BinaryOp::Sub, binary(BinaryOp::BitXor, low, intConstant(1 << (bits - 1), DType::Uint8)),
                   intConstant(1 << (bits - 1), DType::Uint8));
    return bitcast(low, to);
  }
  return cast(bitcast(x, to), computeType(to));
}

ExprRef isInfRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  ExprRef x = operand(ctx, 0, index);
  bool negative = ctx.node().attrInt("detect_negative", 1) != 0;
  bool positive = ctx.node().attrInt("detect_positive", 1) != 0;
  ExprRef inf = unary(UnaryOp::IsInf, x);
  if (negative && positive)
    return inf;
  ExprRef sign = negative ? less(x, k(x, 0)) : binary(BinaryOp::Gt, x, k(x, 0));
  if (!negative && !positive)
    return boolConstant(false);
  return binary(BinaryOp::LogicalAnd, inf, sign);
}

ExprRef sigmoidRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  return unary(UnaryOp::Sigmoid, operand(ctx, 0, index));
}

} // namespace

void registerElementwiseLowering(LoweringTable &table) {
  table.addInjective(OpKind::Abs, unaryRule<UnaryOp::Abs>);
  table.addInjective(OpKind::Acos, unaryRule<UnaryOp::Acos>);
  table.addInjective(OpKind::Acosh, unaryRule<UnaryOp::Acosh>);
  table.addInjective(OpKind::Asin, unaryRule<UnaryOp::Asin>);
  table.addInjective(OpKind::Asinh, unaryRule<UnaryOp::Asinh>);
  table.addInjective(OpKind::Atan, unaryRule<UnaryOp::Atan>);
  table.addInjective(OpKind::Atanh, unaryRule<UnaryOp::Atanh>);
  table.addInjective(OpKind::BitwiseNot, unaryRule<UnaryOp::BitNot>);
  table.addInjective(OpKind::Ceil, unaryRule<UnaryOp::Ceil>);
  table.addInjective(OpKind::Cos, unaryRule<UnaryOp::Cos>);
  table.addInjective(OpKind::Cosh, unaryRule<UnaryOp::Cosh>);
  table.addInjective(OpKind::Erf, unaryRule<UnaryOp::Erf>);
  table.addInjective(OpKind::Exp, unaryRule<UnaryOp::Exp>);
  table.addInjective(OpKind::Floor, unaryRule<UnaryOp::Floor>);
  table.addInjective(OpKind::IsNaN, unaryRule<UnaryOp::IsNaN>);
  table.addInjective(OpKind::IsInf, isInfRule);
  table.addInjective(OpKind::Log, unaryRule<UnaryOp::Log>);
  table.addInjective(OpKind::Neg, unaryRule<UnaryOp::Neg>);
  table.addInjective(OpKind::Not, notRule);
  table.addInjective(OpKind::Round, unaryRule<UnaryOp::RoundEven>);
  table.addInjective(OpKind::Sign, unaryRule<UnaryOp::Sign>);
  table.addInjective(OpKind::Sin, unaryRule<UnaryOp::Sin>);
  table.addInjective(OpKind::Sinh, unaryRule<UnaryOp::Sinh>);
  table.addInjective(OpKind::Sqrt, unaryRule<UnaryOp::Sqrt>);
  table.addInjective(OpKind::Tan, unaryRule<UnaryOp::Tan>);
  table.addInjective(OpKind::Tanh, unaryRule<UnaryOp::Tanh>);
  table.addInjective(OpKind::Sigmoid, sigmoidRule);
  table.addInjective(OpKind::Relu, reluRule);
  table.addInjective(OpKind::Reciprocal, reciprocalRule);
  table.addInjective(OpKind::Softplus, softplusRule);
  table.addInjective(OpKind::Softsign, softsignRule);
  table.addInjective(OpKind::Mish, mishRule);
  table.addInjective(OpKind::Celu, celuRule);
  table.addInjective(OpKind::Swish, swishRule);
  table.addInjective(OpKind::SwiGLU, swigluRule);
  table.addInjective(OpKind::Clip, clipRule);
  table.addInjective(OpKind::Elu, eluRule);
  table.addInjective(OpKind::Gelu, geluRule);
  table.addInjective(OpKind::HardSigmoid, hardSigmoidRule);
  table.addInjective(OpKind::HardSwish, hardSwishRule);
  table.addInjective(OpKind::LeakyRelu, leakyReluRule);
  table.addInjective(OpKind::Selu, seluRule);
  table.addInjective(OpKind::Shrink, shrinkRule);
  table.addInjective(OpKind::ThresholdedRelu, thresholdedReluRule);

  table.addInjective(OpKind::Add, binaryRule<BinaryOp::Add>);
  table.addInjective(OpKind::Sub, binaryRule<BinaryOp::Sub>);
  table.addInjective(OpKind::Mul, binaryRule<BinaryOp::Mul>);
  table.addInjective(OpKind::Div, divRule);
  table.addInjective(OpKind::Mod, modRule);
  table.addInjective(OpKind::Pow, powRule);
  table.addInjective(OpKind::PRelu, preluRule);
  table.addInjective(OpKind::BitShift, bitShiftRule);
  table.addInjective(OpKind::BitwiseAnd, binaryRule<BinaryOp::BitAnd>);
  table.addInjective(OpKind::BitwiseOr, binaryRule<BinaryOp::BitOr>);
  table.addInjective(OpKind::BitwiseXor, binaryRule<BinaryOp::BitXor>);
  table.addInjective(OpKind::And, binaryRule<BinaryOp::LogicalAnd>);
  table.addInjective(OpKind::Or, binaryRule<BinaryOp::LogicalOr>);
  table.addInjective(OpKind::Xor, binaryRule<BinaryOp::Ne>);
  table.addInjective(OpKind::Equal, binaryRule<BinaryOp::Eq>);
  table.addInjective(OpKind::Less, binaryRule<BinaryOp::Lt>);
  table.addInjective(OpKind::LessOrEqual, binaryRule<BinaryOp::Le>);
  table.addInjective(OpKind::Greater, binaryRule<BinaryOp::Gt>);
  table.addInjective(OpKind::GreaterOrEqual, binaryRule<BinaryOp::Ge>);
  table.addInjective(OpKind::Max, variadicRule<BinaryOp::Max>);
  table.addInjective(OpKind::Min, variadicRule<BinaryOp::Min>);
  table.addInjective(OpKind::Sum, variadicRule<BinaryOp::Add>);
  table.addInjective(OpKind::Mean, meanRule);
  table.addInjective(OpKind::Where, whereRule);
  table.addInjective(OpKind::Cast, castRule);
  table.addInjective(OpKind::CastLike, castRule);
  table.addInjective(OpKind::BitCast, bitCastRule);
}

} // namespace sinter::codegen
