// Lowering of MatMulInteger, QLinearMatMul and DynamicQuantizeLinear (semantics in
// lib/reference/quantization_matmul.cpp and quantization_dynamic.cpp). The products:
// one parallel index per output element and a sequential int32 sum over K. QLinearMatMul then
// scales the sum in the scales' type, rounds half to even, adds the output zero point and
// saturates to the 8-bit range.
#include "lowering_rules.h"

#include "sinter/support/error.h"

namespace sinter::codegen {
namespace {

/// A quantisation parameter (scale or zero point) of A (per row) or B (per column) at output
/// index `out`: one element, a vector of M or N, or [..., M, 1] / [..., 1, N] broadcast.
ExprRef parameterAt(const RuleContext &ctx, int input, bool perRow, const std::vector<int64_t> &operand,
                    const std::vector<ExprRef> &out) {
  std::vector<int64_t> dims = ctx.inputDims(input);
  size_t rank = out.size();
  if (productOf(dims) == 1)
    return firstElement(ctx, input);
  int64_t rows = operand[operand.size() - 2], columns = operand.back();
  if (dims.size() == 1 && dims[0] == (perRow ? rows : columns))
    return ctx.input(input)({perRow ? out[rank - 2] : out[rank - 1]});
  bool shaped = dims.size() >= 2 && dims.size() <= operand.size() &&
                (perRow ? dims.back() == 1 : dims[dims.size() - 2] == 1);
  if (!shaped)
    userError(ctx.node().describe(), ": input ", input, " has shape ", shapeStr(shapeOf(dims)),
              "; expected one element, a vector of ", perRow ? rows : columns, ", or the operand's rank with a 1 in place of its ",
              perRow ? "columns" : "rows");
  return ctx.input(input)(broadcastIndex(out, dims));
}

void integerMatMulRule(const RuleContext &ctx) {
  const Node &node = ctx.node();
  KernelBuilder &b = ctx.builder();
  bool qlinear = node.kind() == OpKind::QLinearMatMul;
  int bInput = qlinear ? 3 : 1;
  int aZero = 2, bZero = qlinear ? 5 : 3;
  std::vector<int64_t> aDims = ctx.inputDims(0), bDims = ctx.inputDims(bInput), out = ctx.outputDims(0);
  size_t rank = out.size();
  int64_t k = aDims.back();
  b.setParallelExtent(productOf(out));
  std::vector<ExprRef> index = unravelIndex(b.gid(), out);
  int r = b.addVariable("r", DType::Int64), sum = b.addVariable("sum", DType::Int32);
  ExprRef rv = var(r, DType::Int64);
  auto widened = [](ExprRef x) { return cast(x, DType::Int32); };
  auto shifted = [&](ExprRef x, int zeroInput, bool perRow, const std::vector<int64_t> &operand) {
    if (!ctx.hasInput(zeroInput))
      return widened(x);
    return binary(BinaryOp::Sub, widened(x), widened(parameterAt(ctx, zeroInput, perRow, operand, index)));
  };
  std::vector<ExprRef> aIndex(index.begin(), index.end() - 2), bIndex = aIndex;
  aIndex.push_back(index[rank - 2]);
  aIndex.push_back(rv);
  bIndex.push_back(rv);
  bIndex.push_back(index[rank - 1]);
  ExprRef aValue = shifted(ctx.input(0)(broadcastIndex(aIndex, aDims)), aZero, true, aDims);
  ExprRef bValue = shifted(ctx.input(bInput)(broadcastIndex(bIndex, bDims)), bZero, false, bDims);
  b.emit(assign(sum, intConstant(0, DType::Int32)));
  b.emit(forLoop(r, intConstant(k),
                 {assign(sum, binary(BinaryOp::Add, var(sum, DType::Int32), binary(BinaryOp::Mul, aValue, bValue)))}));
  ExprRef total = var(sum, DType::Int32);
  if (!qlinear) {
    b.emit(ctx.store(0, b.gid(), total));
    return;
  }
  // factor = a_scale * b_scale / y_scale in the scales' type; f16 and bf16 round after each
  // operation (they compute as f32 here).
  DType scaleStorage = node.input(1)->dtype();
  auto round = [&](ExprRef x) {
    return scaleStorage == DType::Float16 || scaleStorage == DType::BFloat16 ? cast(cast(x, scaleStorage), x->type) : x;
  };
  ExprRef factor = round(binary(BinaryOp::Mul, parameterAt(ctx, 1, true, aDims, index),
                                parameterAt(ctx, 4, false, bDims, index)));
  factor = round(binary(BinaryOp::Div, factor, firstElement(ctx, 6)));
  ExprRef scaled = binary(BinaryOp::Mul, cast(total, DType::Float64), cast(factor, DType::Float64));
  DType outType = ctx.outputType(0);
  double low = outType == DType::Int8 ? -128 : 0, high = outType == DType::Int8 ? 127 : 255;
  ExprRef value = binary(BinaryOp::Add, unary(UnaryOp::RoundEven, scaled), cast(firstElement(ctx, 7), DType::Float64));
  value = select(unary(UnaryOp::IsNaN, value), cast(firstElement(ctx, 7), DType::Float64), value);
  value = binary(BinaryOp::Min, binary(BinaryOp::Max, value, constant(DType::Float64, low)), constant(DType::Float64, high));
  b.emit(ctx.store(0, b.gid(), cast(value, outType)));
}

/// DynamicQuantizeLinear in one thread: the range, then every element (f32 math, as the
/// reference has it).
void dynamicQuantizeRule(const RuleContext &ctx) {
  KernelBuilder &b = ctx.builder();
  std::vector<int64_t> dims = ctx.inputDims(0);
  DType f32 = DType::Float32;
  auto t = [&](double v) { return constant(f32, v); };
  b.setParallelExtent(1);
  int i = b.addVariable("i", DType::Int64), high = b.addVariable("high", f32), low = b.addVariable("low", f32);
  int scale = b.addVariable("scale", f32), zero = b.addVariable("zero", f32);
  ExprRef iv = var(i, DType::Int64), x = ctx.input(0)(unravelIndex(iv, dims));
  ExprRef highV = var(high, f32), lowV = var(low, f32), scaleV = var(scale, f32), zeroV = var(zero, f32);
  // NaNs are skipped (the reference's std::max / std::min keep the running value for them).
  b.emit(assign(high, t(0)));
  b.emit(assign(low, t(0)));
  b.emit(forLoop(i, intConstant(productOf(dims)),
                 {ifThen(binary(BinaryOp::Gt, x, highV), {assign(high, x)}),
                  ifThen(binary(BinaryOp::Lt, x, lowV), {assign(low, x)})}));
  b.emit(assign(scale, binary(BinaryOp::Div, select(binary(BinaryOp::Eq, highV, lowV), t(1), binary(BinaryOp::Sub, highV, lowV)), t(255))));
  ExprRef zeroPoint = binary(BinaryOp::Sub, t(0), binary(BinaryOp::Div, lowV, scaleV));
  b.emit(assign(zero, unary(UnaryOp::RoundEven, binary(BinaryOp::Min, binary(BinaryOp::Max, zeroPoint, t(0)), t(255)))));
  ExprRef q = binary(BinaryOp::Add, unary(UnaryOp::RoundEven, binary(BinaryOp::Div, x, scaleV)), zeroV);
  q = select(unary(UnaryOp::IsNaN, q), zeroV, binary(BinaryOp::Min, binary(BinaryOp::Max, q, t(0)), t(255)));
  b.emit(forLoop(i, intConstant(productOf(dims)), {ctx.store(0, iv, cast(q, DType::Uint8))}));
  if (ctx.hasOutput(1))
    b.emit(ctx.store(1, intConstant(0), scaleV));
  if (ctx.hasOutput(2))
    b.emit(ctx.store(2, intConstant(0), cast(zeroV, DType::Uint8)));
}

} // namespace

void registerQuantizedMatMulLowering(LoweringTable &table) {
  table.addKernel(OpKind::DynamicQuantizeLinear, dynamicQuantizeRule);
  table.addKernel(OpKind::MatMulInteger, integerMatMulRule);
  table.addKernel(OpKind::QLinearMatMul, integerMatMulRule);
}

} // namespace sinter::codegen
