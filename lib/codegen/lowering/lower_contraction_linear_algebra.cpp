// Lowering of Einsum and Det as kernel rules, with the semantics of lib/reference/contraction.cpp.
//
// Einsum: a generic sum of products. One parallel index per output element loops over every
// combination of the summed labels and adds the product of the inputs there; a label repeated in
// one input walks its diagonal, an input dim of extent 1 broadcasts. Straightforward, not tiled:
// an Einsum that is a plain matrix product is faster written as MatMul.
//
// Det: one parallel index per matrix copies it into a scratch buffer (double) and runs LU
// decomposition with partial pivoting there; the determinant is the product of the pivots, negated
// once per row swap, and 0 as soon as a column has no nonzero pivot.
#include "lowering_rules.h"

#include "sinter/ir/einsum.h"
#include "sinter/support/error.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace sinter::codegen {
namespace {

// ---- Einsum ---------------------------------------------------------------------------------

/// The equation over the inputs' dims (ir/einsum.h).
EinsumPlan planEinsum(const RuleContext &ctx) {
  std::vector<std::vector<int64_t>> dims;
  for (int i = 0; i < ctx.node().numInputs(); ++i)
    dims.push_back(ctx.inputDims(i));
  return sinter::planEinsum(ctx.node(), dims);
}

void einsumRule(const RuleContext &ctx) {
  KernelBuilder &b = ctx.builder();
  EinsumPlan plan = planEinsum(ctx);
  std::vector<int> summed;
  std::vector<int64_t> sumDims;
  for (auto [label, extent] : plan.sizes)
    if (!std::count(plan.outputLabels.begin(), plan.outputLabels.end(), label)) {
      summed.push_back(label);
      sumDims.push_back(extent);
    }
  std::vector<int64_t> outDims = ctx.outputDims(0);
  DType type = ctx.outputType(0);
  b.setParallelExtent(productOf(outDims));
  std::vector<ExprRef> outAt = unravelIndex(b.gid(), outDims);
  int r = b.addVariable("r", DType::Int64), sum = b.addVariable("sum", type);
  std::vector<ExprRef> sumAt = unravelIndex(var(r, DType::Int64), sumDims);
  std::map<int, ExprRef> coordinate;
  for (size_t j = 0; j < plan.outputLabels.size(); ++j)
    coordinate[plan.outputLabels[j]] = outAt[j];
  for (size_t j = 0; j < summed.size(); ++j)
    coordinate[summed[j]] = sumAt[j];
  ExprRef product;
  for (int i = 0; i < ctx.node().numInputs(); ++i) {
    std::vector<int64_t> dims = ctx.inputDims(i);
    std::vector<ExprRef> at;
    for (size_t d = 0; d < dims.size(); ++d)
      at.push_back(dims[d] == 1 ? intConstant(0) : coordinate.at(plan.inputLabels[i][d]));
    ExprRef value = cast(ctx.input(i)(at), type);
    product = product ? binary(BinaryOp::Mul, product, value) : value;
  }
  b.emit(assign(sum, typedConstant(type, 0)));
  int64_t combinations = productOf(sumDims);
  if (combinations > 0)
    b.emit(forLoop(r, intConstant(combinations), {assign(sum, binary(BinaryOp::Add, var(sum, type), product))}));
  b.emit(ctx.store(0, b.gid(), var(sum, type)));
  b.kernel().flops = 2 * productOf(outDims) * combinations * ctx.node().numInputs();
}

// ---- Det ------------------------------------------------------------------------------------

void detRule(const RuleContext &ctx) {
  const Node &node = ctx.node();
  KernelBuilder &b = ctx.builder();
  std::vector<int64_t> dims = ctx.inputDims(0);
  if (dims.size() < 2 || dims[dims.size() - 1] != dims[dims.size() - 2])
    userError(node.describe(), ": the input must be [..., M, M]");
  int64_t m = dims.back(), matrices = productOf(dims, 0, dims.size() - 2);
  const DType f64 = DType::Float64;
  b.setParallelExtent(matrices);
  int a = b.addScratch("lu", f64, matrices * m * m);
  ExprRef base = mul(b.gid(), m * m);
  auto element = [&](ExprRef row, ExprRef column) { return add(base, add(mul(row, m), column)); };
  auto at = [&](ExprRef row, ExprRef column) { return load(a, f64, element(row, column)); };
  auto number = [&](double v) { return constant(f64, v); };
  auto i64 = [](int id) { return var(id, DType::Int64); };

  int e = b.addVariable("e", DType::Int64);
  std::vector<ExprRef> matrixAt = unravelIndex(add(base, i64(e)), dims);
  b.emit(forLoop(e, intConstant(m * m), {store(a, add(base, i64(e)), cast(ctx.input(0)(matrixAt), f64))}));

  int det = b.addVariable("det", f64), col = b.addVariable("col", DType::Int64);
  int row = b.addVariable("row", DType::Int64), j = b.addVariable("j", DType::Int64);
  int pivot = b.addVariable("pivot", DType::Int64), best = b.addVariable("best", f64);
  int factor = b.addVariable("factor", f64), held = b.addVariable("held", f64);
  ExprRef c = i64(col), rv = i64(row), jv = i64(j), detValue = var(det, f64);
  b.emit(assign(det, number(1)));
  std::vector<StmtRef> column;
  // The pivot: the largest magnitude at or below the diagonal (the first of equals).
  column.push_back(assign(pivot, c));
  column.push_back(assign(best, unary(UnaryOp::Abs, at(c, c))));
  column.push_back(forLoop(row, intConstant(m),
                           {ifThen(binary(BinaryOp::LogicalAnd, binary(BinaryOp::Gt, rv, c),
                                          binary(BinaryOp::Gt, unary(UnaryOp::Abs, at(rv, c)), var(best, f64))),
                                   {assign(pivot, rv), assign(best, unary(UnaryOp::Abs, at(rv, c)))})}));
  std::vector<StmtRef> eliminate;
  ExprRef p = i64(pivot);
  eliminate.push_back(ifThen(binary(BinaryOp::Ne, p, c),
                             {forLoop(j, intConstant(m),
                                      {assign(held, at(p, jv)), store(a, element(p, jv), at(c, jv)),
                                       store(a, element(c, jv), var(held, f64))}),
                              assign(det, unary(UnaryOp::Neg, detValue))}));
  eliminate.push_back(assign(det, binary(BinaryOp::Mul, detValue, at(c, c))));
  int j2 = b.addVariable("j", DType::Int64);
  ExprRef j2v = i64(j2);
  eliminate.push_back(forLoop(
      row, intConstant(m),
      {ifThen(binary(BinaryOp::Gt, rv, c),
              {assign(factor, binary(BinaryOp::Div, at(rv, c), at(c, c))),
               forLoop(j2, intConstant(m),
                       {ifThen(binary(BinaryOp::Ge, j2v, c),
                               {store(a, element(rv, j2v),
                                      binary(BinaryOp::Sub, at(rv, j2v),
                                             binary(BinaryOp::Mul, var(factor, f64), at(c, j2v))))})})})}));
  column.push_back(ifThen(binary(BinaryOp::Eq, var(best, f64), number(0)), {assign(det, number(0))}, eliminate));
  b.emit(forLoop(col, intConstant(m), {ifThen(binary(BinaryOp::Ne, detValue, number(0)), column)}));
  b.emit(ctx.store(0, b.gid(), cast(detValue, ctx.outputType(0))));
}

} // namespace

void registerLinearAlgebraLowering(LoweringTable &table) {
  table.addKernel(OpKind::Einsum, einsumRule);
  table.addKernel(OpKind::Det, detRule);
}

} // namespace sinter::codegen
