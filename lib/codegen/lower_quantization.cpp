// Lowering of QuantizeLinear and DequantizeLinear as injective rules, so they fuse with what
// produces and consumes them. The semantics (granularity of the scale, division precision,
// rounding, saturation) are those of lib/reference/quantization.cpp:
//   QuantizeLinear:   y = saturate(round_half_even(x / scale) + zero_point), the division in the
//                     `precision` type, else the wider float type of x and scale (double when one
//                     is an integer); a NaN quotient gives the zero point.
//   DequantizeLinear: y = float(x - zero_point) * scale, in float32 (double when the scale or
//                     the output is f64).
// The quantised types are u8, i8, u16, i16 and i32; others are refused with a UserError.
#include "lowering_rules.h"

#include "sinter/support/error.h"

#include <limits>

namespace sinter::codegen {
namespace {

bool isQuantizedType(DType type) {
  return type == DType::Uint8 || type == DType::Int8 || type == DType::Uint16 || type == DType::Int16 ||
         type == DType::Int32;
}

/// The scale's (and zero point's) element for the element of x at `index`.
std::vector<ExprRef> parameterIndex(const RuleContext &ctx, const std::vector<ExprRef> &index) {
  const Node &node = ctx.node();
  std::vector<int64_t> xDims = ctx.inputDims(0), scaleDims = ctx.inputDims(1);
  if (productOf(scaleDims) == 1)
    return std::vector<ExprRef>(scaleDims.size(), intConstant(0));
  if (xDims.empty())
    userError(node.describe(), ": a scalar input needs a scalar scale");
  int64_t axis = normalizedAxis(node, node.attrInt("axis", 1), int64_t(xDims.size()));
  int64_t blockSize = node.attrInt("block_size", 0);
  if (blockSize < 0)
    userError(node.describe(), ": block_size must not be negative");
  if (blockSize == 0) {
    if (scaleDims != std::vector<int64_t>{xDims[axis]})
      userError(node.describe(), ": a per-axis scale must be 1-D of length ", xDims[axis]);
    return {index[axis]};
  }
  std::vector<int64_t> expected = xDims;
  expected[axis] = (xDims[axis] + blockSize - 1) / blockSize;
  if (scaleDims != expected)
    userError(node.describe(), ": a blocked scale does not have the shape block_size ", blockSize, " implies");
  std::vector<ExprRef> at = index;
  at[axis] = div(index[axis], blockSize);
  return at;
}

/// `value` (f32 or f64) rounded to the precision of a float dtype, staying in its type.
ExprRef roundTo(DType precision, ExprRef value) {
  if (precision == DType::Float16 || precision == DType::BFloat16)
    return cast(cast(value, precision), value->type);
  return value;
}

ExprRef quantizeRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  const Node &node = ctx.node();
  DType outType = node.output(0)->dtype();
  if (!isQuantizedType(outType))
    userError(node.describe(), ": sinter cannot generate code for QuantizeLinear to ", dtypeName(outType),
              " yet (supported: u8, i8, u16, i16, i32)");
  DType xType = node.input(0)->dtype(), scaleType = node.input(1)->dtype();
  for (DType type : {xType, scaleType})
    if (!isFloat(type) && type != DType::Int32)
      userError(node.describe(), ": x and the scale must be float or int32, not ", dtypeName(type));
  DType division = DType::Float64;
  if (int64_t precision = node.attrInt("precision", 0)) {
    std::optional<DType> type = dtypeFromOnnx(int(precision));
    if (!type || !isFloat(*type))
      userError(node.describe(), ": precision ", precision, " is not a float type sinter supports");
    division = *type;
  } else if (isFloat(xType) && isFloat(scaleType)) {
    division = xType == scaleType ? xType
               : (xType == DType::Float64 || scaleType == DType::Float64) ? DType::Float64
                                                                          : DType::Float32;
  }
  DType compute = division == DType::Float64 ? DType::Float64 : DType::Float32;

  std::vector<ExprRef> parameter = parameterIndex(ctx, index);
  ExprRef numerator = roundTo(division, cast(ctx.input(0)(index), compute));
  ExprRef denominator = roundTo(division, cast(ctx.input(1)(parameter), compute));
  ExprRef quotient = unary(UnaryOp::RoundEven, roundTo(division, binary(BinaryOp::Div, numerator, denominator)));
  quotient = select(unary(UnaryOp::IsNaN, quotient), constant(compute, 0), quotient);
  // Adding the zero point and saturating in double is exact for every quantised type.
  ExprRef value = cast(quotient, DType::Float64);
  if (ctx.hasInput(2))
    value = binary(BinaryOp::Add, value, cast(ctx.input(2)(parameter), DType::Float64));
  auto bound = [&](bool high) {
    switch (outType) {
    case DType::Uint8: return high ? 255.0 : 0.0;
    case DType::Int8: return high ? 127.0 : -128.0;
    case DType::Uint16: return high ? 65535.0 : 0.0;
    case DType::Int16: return high ? 32767.0 : -32768.0;
    default: return high ? 2147483647.0 : -2147483648.0;
    }
  };
  value = binary(BinaryOp::Max, value, constant(DType::Float64, bound(false)));
  value = binary(BinaryOp::Min, value, constant(DType::Float64, bound(true)));
  return cast(value, outType);
}

ExprRef dequantizeRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  const Node &node = ctx.node();
  DType xType = node.input(0)->dtype(), scaleType = node.input(1)->dtype();
  if (!isQuantizedType(xType))
    userError(node.describe(), ": sinter cannot generate code for DequantizeLinear of ", dtypeName(xType),
              " yet (supported: u8, i8, u16, i16, i32)");
  if (!isFloat(scaleType))
    userError(node.describe(), ": the scale must be float, not ", dtypeName(scaleType));
  DType outType = node.output(0)->dtype();
  bool wide = outType == DType::Float64 || scaleType == DType::Float64;
  DType compute = wide ? DType::Float64 : DType::Float32;
  std::vector<ExprRef> parameter = parameterIndex(ctx, index);
  // x - zero_point is exact in i64.
  ExprRef difference = cast(ctx.input(0)(index), DType::Int64);
  if (ctx.hasInput(2))
    difference = sub(difference, cast(ctx.input(2)(parameter), DType::Int64));
  ExprRef scale = cast(ctx.input(1)(parameter), compute);
  return cast(binary(BinaryOp::Mul, cast(difference, compute), scale), ctx.outputType(0));
}

} // namespace

void registerQuantizationLowering(LoweringTable &table) {
  table.addInjective(OpKind::QuantizeLinear, quantizeRule);
  table.addInjective(OpKind::DequantizeLinear, dequantizeRule);
}

} // namespace sinter::codegen
