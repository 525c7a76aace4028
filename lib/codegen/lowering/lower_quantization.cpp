// Lowering of QuantizeLinear and DequantizeLinear: injective rules, each element computed from
// the input element and its scale and zero point, with the reference evaluator's arithmetic
// (lib/reference/quantization.cpp):
//   QuantizeLinear    x / scale rounded to the division type; integer outputs round half to
//                     even, add the zero point and clamp (a NaN quotient gives the zero point);
//                     low-precision float outputs add the zero point and narrow with Cast's
//                     rules (`saturate`)
//   DequantizeLinear  (x - zero point) as float32 (exact for integers; the low-precision floats
//                     subtract their values), times the scale in float32 (float64 when the scale
//                     or the output is f64)
// The scale's shape picks per-tensor (one element), per-axis (1-D along `axis`) or blocked
// (`block_size` elements along `axis` share one scale) parameters.
#include "sinter/codegen/kernel/low_precision_cast.h"
#include "lowering_rules.h"

#include "sinter/support/error.h"

#include <limits>

namespace sinter::codegen {
namespace {

/// The index into input `parameter` (the scale or the zero point) of the element at `index`.
std::vector<ExprRef> parameterIndex(const RuleContext &ctx, const std::vector<ExprRef> &index,
                                    int parameter) {
  std::vector<int64_t> dims = ctx.inputDims(parameter);
  std::vector<int64_t> xDims = ctx.inputDims(0);
  if (productOf(dims, 0, dims.size()) == 1)
    return std::vector<ExprRef>(dims.size(), intConstant(0)); // per tensor (rank 0 or 1)
  int64_t axis = normalizedAxis(ctx.node(), ctx.node().attrInt("axis", 1), int64_t(xDims.size()));
  int64_t blockSize = ctx.node().attrInt("block_size", 0);
  if (blockSize <= 0)
    return {index[axis]}; // per axis: a 1-D scale
  std::vector<ExprRef> blocked = index;
  blocked[axis] = div(index[axis], blockSize);
  return blocked;
}

/// The float type QuantizeLinear divides in (see lib/reference/quantization.cpp).
DType divisionType(const RuleContext &ctx) {
  if (int64_t precision = ctx.node().attrInt("precision", 0)) {
    std::optional<DType> dtype = dtypeFromOnnx(int(precision));
    if (!dtype || !isFloat(*dtype))
      userError(ctx.node().describe(), ": precision ", precision, " is not a float type");
    return *dtype;
  }
  DType x = ctx.node().input(0)->dtype(), scale = ctx.node().input(1)->dtype();
  if (!isFloat(x) || !isFloat(scale) || x == DType::Float64 || scale == DType::Float64)
    return DType::Float64;
  return x == scale ? x : DType::Float32;
}

/// Rounds a compute-type float to `type`'s precision and back (f16 / bf16 compute as f32).
ExprRef roundTo(const ExprRef &value, DType type) {
  return cast(cast(value, type), computeType(type));
}

ExprRef quantizeRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  DType out = ctx.node().output(0)->dtype();
  DType division = divisionType(ctx);
  DType compute = computeType(division);
  std::vector<ExprRef> at = parameterIndex(ctx, index, 1);
  std::vector<ExprRef> zeroAt = ctx.hasInput(2) ? parameterIndex(ctx, index, 2) : at;
  ExprRef numerator = roundTo(cast(ctx.input(0)(index), compute), division);
  ExprRef denominator = roundTo(cast(ctx.input(1)(at), compute), division);
  ExprRef quotient = roundTo(binary(BinaryOp::Div, numerator, denominator), division);
  bool hasZeroPoint = ctx.hasInput(2);
  if (isLowPrecisionFloat(out)) {
    ExprRef value = quotient;
    if (hasZeroPoint)
      value = roundTo(binary(BinaryOp::Add, value, cast(ctx.input(2)(zeroAt), compute)), division);
    LowPrecisionRounding rounding;
    rounding.saturate = ctx.node().attrInt("saturate", 1) != 0;
    return castLowPrecision(value, out, rounding);
  }
  double low = 0, high = 0;
  if (isLowPrecisionInteger(out)) {
    low = lowPrecisionIntegerMin(out);
    high = lowPrecisionIntegerMax(out);
  } else {
    switch (out) {
    case DType::Uint8: low = 0, high = 255; break;
    case DType::Int8: low = -128, high = 127; break;
    case DType::Uint16: low = 0, high = 65535; break;
    case DType::Int16: low = -32768, high = 32767; break;
    case DType::Int32: low = -2147483648.0, high = 2147483647.0; break;
    default:
      userError(ctx.node().describe(), ": sinter cannot generate code quantizing to ", dtypeName(out));
    }
  }
  // In double, as the reference adds: a rounded quotient plus a zero point of up to 32 bits.
  ExprRef rounded = cast(unary(UnaryOp::RoundEven, quotient), DType::Float64);
  ExprRef zero = hasZeroPoint ? cast(ctx.input(2)(zeroAt), DType::Float64) : constant(DType::Float64, 0);
  ExprRef value = select(unary(UnaryOp::IsNaN, rounded), zero, binary(BinaryOp::Add, rounded, zero));
  value = binary(BinaryOp::Max, value, constant(DType::Float64, low));
  value = binary(BinaryOp::Min, value, constant(DType::Float64, high));
  return cast(value, out);
}

ExprRef dequantizeRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  DType out = ctx.node().output(0)->dtype();
  DType xType = ctx.node().input(0)->dtype();
  std::vector<ExprRef> at = parameterIndex(ctx, index, 1);
  std::vector<ExprRef> zeroAt = ctx.hasInput(2) ? parameterIndex(ctx, index, 2) : at;
  bool wide = out == DType::Float64 || ctx.node().input(1)->dtype() == DType::Float64;
  DType compute = wide ? DType::Float64 : DType::Float32;
  ExprRef x = ctx.input(0)(index);
  ExprRef difference;
  if (isLowPrecisionFloat(xType)) {
    // Both values are exact in f32; their difference rounds in f32.
    difference = cast(x, DType::Float32);
    if (ctx.hasInput(2))
      difference = binary(BinaryOp::Sub, difference, cast(ctx.input(2)(zeroAt), DType::Float32));
    difference = cast(difference, compute);
  } else {
    // Exact in i64, then rounded once to f32 (or f64).
    ExprRef exact = cast(x, DType::Int64);
    if (ctx.hasInput(2))
      exact = binary(BinaryOp::Sub, exact, cast(ctx.input(2)(zeroAt), DType::Int64));
    difference = cast(exact, compute);
  }
  ExprRef scale = cast(ctx.input(1)(at), compute); // f16 / bf16 scales arrive as exact f32
  return cast(binary(BinaryOp::Mul, difference, scale), computeType(out));
}

} // namespace

void registerQuantizationLowering(LoweringTable &table) {
  table.addInjective(OpKind::QuantizeLinear, quantizeRule);
  table.addInjective(OpKind::DequantizeLinear, dequantizeRule);
}

} // namespace sinter::codegen
