// Lowering of contractions: MatMul, Gemm (and Conv, whose description is in lower_convolution.cpp)
// described as batched matrix products (contraction.h), and the naive kernel every backend can
// build from that description. Einsum and Det are in lower_contraction_linear_algebra.cpp.
#include "lowering_rules.h"

#include "sinter/codegen/lowering/contraction.h"
#include "sinter/support/error.h"

namespace sinter::codegen {

namespace {

// MatMul: numpy matmul. A 1-D operand is a row (lhs) or column (rhs) vector whose dim the output
// drops; the output's leading dims are the broadcast batch, flattened into b.
ContractionSpec describeMatMul(const RuleContext &ctx) {
  std::vector<int64_t> a = ctx.inputDims(0), w = ctx.inputDims(1), out = ctx.outputDims(0);
  bool aVector = a.size() == 1, bVector = w.size() == 1;
  ContractionSpec spec;
  spec.type = ctx.outputType(0);
  spec.m = aVector ? 1 : a[a.size() - 2];
  spec.n = bVector ? 1 : w.back();
  spec.k = a.back();
  size_t batchRank = out.size() - (aVector ? 0 : 1) - (bVector ? 0 : 1);
  std::vector<int64_t> batchDims(out.begin(), out.begin() + batchRank);
  spec.batch = productOf(batchDims);
  spec.lhsUnitStrideK = true;
  spec.rhsUnitStrideK = bVector;
  // When every batch multiplies the same rhs (a Linear layer over [batch, tokens, features]),
  // the batches are one taller matrix: i runs over (batch, row), so tiles span batch borders
  // instead of leaving most of a tile empty when the rows per batch are few.
  int64_t rowsPerBatch = spec.m;
  bool foldBatch = spec.batch > 1 && !aVector && w.size() <= 2;
  if (foldBatch) {
    spec.m *= spec.batch;
    spec.batch = 1;
  }
  ContractionVariables v = declareVariables(ctx.builder(), spec);
  ExprRef batchIndex = v.b, row = v.i;
  if (foldBatch) {
    batchIndex = div(v.i, rowsPerBatch);
    row = rem(v.i, rowsPerBatch);
  }
  std::vector<ExprRef> batch = batchRank ? unravelIndex(batchIndex, batchDims) : std::vector<ExprRef>{};
  auto operandIndex = [&](const std::vector<int64_t> &dims, std::vector<ExprRef> matrix) {
    size_t operandBatch = dims.size() - matrix.size();
    std::vector<int64_t> operandBatchDims(dims.begin(), dims.begin() + operandBatch);
    std::vector<ExprRef> at = operandBatch ? broadcastIndex(batch, operandBatchDims) : std::vector<ExprRef>{};
    at.insert(at.end(), matrix.begin(), matrix.end());
    return at;
  };
  spec.lhs = cast(ctx.input(0)(operandIndex(a, aVector ? std::vector<ExprRef>{v.r} : std::vector<ExprRef>{row, v.r})), spec.type);
  spec.rhs = cast(ctx.input(1)(operandIndex(w, bVector ? std::vector<ExprRef>{v.r} : std::vector<ExprRef>{v.r, v.j})), spec.type);
  // Output rows follow the batch in both forms: (b * m + i) * n + j, or i * n + j once folded.
  ExprRef flat = add(mul(add(mul(v.b, spec.m), v.i), spec.n), v.j);
  spec.epilogue = {ctx.store(0, flat, var(spec.acc, spec.type))};
  return spec;
}

// Gemm: alpha * op(A) op(B) + beta * C, C broadcast to [M, N].
ContractionSpec describeGemm(const RuleContext &ctx) {
  const Node &node = ctx.node();
  std::vector<int64_t> a = ctx.inputDims(0), out = ctx.outputDims(0);
  bool transA = node.attrInt("transA", 0) != 0, transB = node.attrInt("transB", 0) != 0;
  ContractionSpec spec;
  spec.type = ctx.outputType(0);
  spec.m = out[0];
  spec.n = out[1];
  spec.k = transA ? a[0] : a[1];
  spec.lhsUnitStrideK = !transA;
  spec.rhsUnitStrideK = transB;
  ContractionVariables v = declareVariables(ctx.builder(), spec);
  spec.lhs = cast(ctx.input(0)(transA ? std::vector<ExprRef>{v.r, v.i} : std::vector<ExprRef>{v.i, v.r}), spec.type);
  spec.rhs = cast(ctx.input(1)(transB ? std::vector<ExprRef>{v.j, v.r} : std::vector<ExprRef>{v.r, v.j}), spec.type);
  ExprRef result = var(spec.acc, spec.type);
  float alpha = node.attrFloat("alpha", 1.0f), beta = node.attrFloat("beta", 1.0f);
  if (alpha != 1.0f)
    result = binary(BinaryOp::Mul, result, typedConstant(spec.type, alpha));
  if (ctx.hasInput(2)) {
    ExprRef c = cast(ctx.input(2)(broadcastIndex({v.i, v.j}, ctx.inputDims(2))), spec.type);
    if (beta != 1.0f)
      c = binary(BinaryOp::Mul, c, typedConstant(spec.type, beta));
    result = binary(BinaryOp::Add, result, c);
  }
  spec.epilogue = {ctx.store(0, add(mul(v.i, spec.n), v.j), result)};
  return spec;
}

} // namespace

ContractionVariables declareVariables(KernelBuilder &builder, ContractionSpec &spec) {
  spec.b = builder.addVariable("b", DType::Int64);
  spec.i = builder.addVariable("i", DType::Int64);
  spec.j = builder.addVariable("j", DType::Int64);
  spec.r = builder.addVariable("r", DType::Int64);
  spec.acc = builder.addVariable("acc", spec.type);
  return {spec.batch == 1 ? intConstant(0) : var(spec.b, DType::Int64), var(spec.i, DType::Int64),
          var(spec.j, DType::Int64), var(spec.r, DType::Int64)};
}

void naiveContractionRule(const RuleContext &ctx) {
  ContractionSpec spec = describeContraction(ctx);
  KernelBuilder &builder = ctx.builder();
  builder.setParallelExtent(spec.batch * spec.m * spec.n);
  ExprRef gid = builder.gid();
  if (spec.batch != 1)
    builder.emit(assign(spec.b, div(gid, spec.m * spec.n)));
  builder.emit(assign(spec.i, rem(div(gid, spec.n), spec.m)));
  builder.emit(assign(spec.j, rem(gid, spec.n)));
  ExprRef acc = var(spec.acc, spec.type);
  builder.emit(assign(spec.acc, typedConstant(spec.type, 0)));
  // A reduction loop: where a contraction is too thin to tile (a GEMV: a classifier's last Gemm at
  // batch 1), the CUDA backend gives each output a warp that splits the sum.
  builder.emit(reductionLoop(spec.r, intConstant(spec.k),
                             {assign(spec.acc, binary(BinaryOp::Add, acc, binary(BinaryOp::Mul, spec.lhs, spec.rhs)))}));
  for (const StmtRef &stmt : spec.epilogue)
    builder.emit(stmt);
  builder.kernel().flops = spec.flops();
}

ContractionSpec describeContraction(const RuleContext &ctx) {
  switch (ctx.node().kind()) {
  case OpKind::MatMul: return describeMatMul(ctx);
  case OpKind::Gemm: return describeGemm(ctx);
  case OpKind::Conv: return describeConv(ctx);
  default: break;
  }
  detail::throwInternal(__FILE__, __LINE__, "isContraction(node)",
                        ctx.node().describe() + " is not a contraction");
}

void registerContractionLowering(LoweringTable &table) {
  table.addKernel(OpKind::MatMul, naiveContractionRule);
  table.addKernel(OpKind::Gemm, naiveContractionRule);
}

} // namespace sinter::codegen
