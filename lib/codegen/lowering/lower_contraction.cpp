// Lowering of contractions: MatMul, Gemm and Conv described as batched matrix products
// (contraction.h), and the naive kernel every backend can build from that description; plus
// ConvTranspose, which stays a plain loop nest (one parallel index per output element).
#include "lowering_rules.h"

#include "sinter/codegen/lowering/contraction.h"
#include "sinter/ir/conv_layout.h"
#include "sinter/ir/op_attributes.h"
#include "sinter/support/error.h"

namespace sinter::codegen {

namespace {

/// The variables of a contraction; b is the constant 0 when there is one batch.
struct ContractionVariables {
  ExprRef b, i, j, r;
};

ContractionVariables declareVariables(KernelBuilder &builder, ContractionSpec &spec) {
  spec.b = builder.addVariable("b", DType::Int64);
  spec.i = builder.addVariable("i", DType::Int64);
  spec.j = builder.addVariable("j", DType::Int64);
  spec.r = builder.addVariable("r", DType::Int64);
  spec.acc = builder.addVariable("acc", spec.type);
  return {spec.batch == 1 ? intConstant(0) : var(spec.b, DType::Int64), var(spec.i, DType::Int64),
          var(spec.j, DType::Int64), var(spec.r, DType::Int64)};
}

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

// Conv as an implicit GEMM, one batch per group: i is the output channel within the group, j runs
// over (image, output position), r over (kernel position, input channel within the group) with
// the channels innermost where the group has a multiple of eight channels, else over (input
// channel, kernel position) (include/sinter/ir/conv_layout.h says why). The rhs gathers the
// input window, zero in the padding; no im2col buffer is written.
ContractionSpec describeConv(const RuleContext &ctx) {
  const Node &node = ctx.node();
  std::vector<int64_t> x = ctx.inputDims(0), w = ctx.inputDims(1), out = ctx.outputDims(0);
  size_t spatialRank = x.size() - 2;
  int64_t groups = node.attrInt("group", 1);
  int64_t images = x[0], channelsPerGroup = w[1], outputsPerGroup = out[1] / groups;
  std::vector<int64_t> kernel(w.begin() + 2, w.end());
  std::vector<int64_t> outSpatial(out.begin() + 2, out.end());
  const WindowGeometry window = windowGeometry(node, {x.begin() + 2, x.end()}, kernel, false);
  int64_t positions = productOf(outSpatial);
  ContractionSpec spec;
  spec.type = ctx.outputType(0);
  spec.batch = groups;
  spec.m = outputsPerGroup;
  spec.n = images * positions;
  const bool channelsInnermost = convReducesChannelsInnermost(channelsPerGroup);
  std::vector<int64_t> reduction = kernel;
  reduction.insert(channelsInnermost ? reduction.end() : reduction.begin(), channelsPerGroup);
  spec.k = productOf(reduction);
  spec.lhsUnitStrideK = true;
  spec.rhsUnitStrideK = false;
  ContractionVariables v = declareVariables(ctx.builder(), spec);
  ExprRef channelOut = add(mul(v.b, outputsPerGroup), v.i);
  std::vector<ExprRef> at = unravelIndex(v.r, reduction);
  ExprRef channelIn = channelsInnermost ? at.back() : at.front();
  at.erase(channelsInnermost ? at.end() - 1 : at.begin()); // the window position
  std::vector<ExprRef> weightIndex = {channelOut, channelIn};
  weightIndex.insert(weightIndex.end(), at.begin(), at.end());
  spec.lhs = cast(ctx.input(1)(weightIndex), spec.type);

  ExprRef image = images == 1 ? intConstant(0) : div(v.j, positions);
  ExprRef position = images == 1 ? v.j : rem(v.j, positions);
  std::vector<ExprRef> outIndex = unravelIndex(position, outSpatial);
  std::vector<ExprRef> inIndex = {image, add(mul(v.b, channelsPerGroup), channelIn)};
  ExprRef inside = boolConstant(true);
  bool padded = false;
  for (size_t d = 0; d < spatialRank; ++d) {
    ExprRef where = add(sub(mul(outIndex[d], window.strides[d]), intConstant(window.padBegin[d])),
                        mul(at[d], window.dilations[d]));
    // Only a window that can reach past an edge needs the bounds check and the clamp.
    int64_t lowest = -window.padBegin[d];
    int64_t highest = (outSpatial[d] - 1) * window.strides[d] - window.padBegin[d] + (kernel[d] - 1) * window.dilations[d];
    if (lowest < 0 || highest >= x[2 + d]) {
      padded = true;
      inside = binary(BinaryOp::LogicalAnd, inside,
                      binary(BinaryOp::LogicalAnd, binary(BinaryOp::Ge, where, intConstant(0)),
                             binary(BinaryOp::Lt, where, intConstant(x[2 + d]))));
      where = binary(BinaryOp::Min, binary(BinaryOp::Max, where, intConstant(0)), intConstant(x[2 + d] - 1));
    }
    inIndex.push_back(where);
  }
  ExprRef value = cast(ctx.input(0)(inIndex), spec.type);
  spec.rhs = padded ? select(inside, value, typedConstant(spec.type, 0)) : value;

  ExprRef result = var(spec.acc, spec.type);
  if (ctx.hasInput(2))
    result = binary(BinaryOp::Add, result, cast(ctx.input(2)({channelOut}), spec.type));
  ExprRef flat = add(mul(add(mul(image, out[1]), channelOut), positions), position);
  spec.epilogue = {ctx.store(0, flat, result)};

  // The same window, restated in parts a backend can tabulate (contraction.h), when X is read
  // directly: its accessor is then a load at the row-major index of `inIndex` (a fused prologue
  // that remaps indices or computes would give another expression).
  ExprRef loaded = value->kind == ExprKind::Cast ? value->operands[0] : value;
  if (loaded->kind == ExprKind::Cast)
    loaded = loaded->operands[0];
  if (loaded->kind != ExprKind::Load || !structurallyEqual(loaded->operands[0], ravelIndex(inIndex, x)))
    return spec;
  ConvolutionWindow described;
  described.positions = positions;
  int64_t plane = productOf(x, 2);
  described.imageStride = x[1] * plane;
  described.groupStride = channelsPerGroup * plane;
  described.channelOffset = mul(channelIn, plane);
  std::vector<ExprRef> outAt = unravelIndex(v.j, outSpatial);
  int64_t stride = plane;
  for (size_t d = 0; d < spatialRank; ++d) {
    described.base.push_back(sub(mul(outAt[d], window.strides[d]), intConstant(window.padBegin[d])));
    described.displacement.push_back(mul(at[d], window.dilations[d]));
    described.extent.push_back(x[2 + d]);
    stride /= x[2 + d];
    described.stride.push_back(stride);
  }
  spec.window = std::move(described);
  return spec;
}

/// The naive kernel of a contraction: one parallel index per (b, i, j), a reduction loop over r.
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

void convTransposeRule(const RuleContext &ctx) {
  const Node &node = ctx.node();
  KernelBuilder &b = ctx.builder();
  std::vector<int64_t> x = ctx.inputDims(0), w = ctx.inputDims(1), out = ctx.outputDims(0);
  size_t n = x.size() - 2;
  int64_t group = node.attrInt("group", 1);
  int64_t perGroupIn = x[1] / group, perGroupOut = w[1];
  std::vector<int64_t> kernel(w.begin() + 2, w.end());
  std::vector<int64_t> strides = node.attrInts("strides", std::vector<int64_t>(n, 1));
  std::vector<int64_t> dilations = node.attrInts("dilations", std::vector<int64_t>(n, 1));
  std::vector<int64_t> pads = node.attrInts("pads", std::vector<int64_t>(2 * n, 0));
  std::vector<int64_t> outputPadding = node.attrInts("output_padding", std::vector<int64_t>(n, 0));
  std::string autoPad = node.attrString("auto_pad", "NOTSET");
  // As the reference evaluator (lib/reference/convolution.cpp) splits it: with output_shape or
  // SAME_*, the padding is derived from the output extent (pads are ignored), the odd element
  // at the end for SAME_UPPER and at the beginning otherwise, and an output larger than the
  // natural one (a negative total) pads nothing at the beginning: it grows at the end.
  bool derived = autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER" || !node.attrInts("output_shape").empty();
  std::vector<int64_t> padBegin(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t total = strides[i] * (x[2 + i] - 1) + outputPadding[i] + ((kernel[i] - 1) * dilations[i] + 1) - out[2 + i];
    if (!derived)
      padBegin[i] = autoPad == "VALID" ? 0 : pads[i];
    else if (total <= 0)
      padBegin[i] = 0;
    else
      padBegin[i] = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
  }
  DType type = ctx.outputType(0);
  b.setParallelExtent(productOf(out));
  std::vector<ExprRef> index = unravelIndex(b.gid(), out);
  ExprRef m = index[1];
  ExprRef g = div(m, perGroupOut);
  std::vector<int64_t> reduction = {perGroupIn};
  reduction.insert(reduction.end(), kernel.begin(), kernel.end());
  int acc = b.addVariable("acc", type), r = b.addVariable("r", DType::Int64);
  std::vector<ExprRef> at = unravelIndex(var(r, DType::Int64), reduction);
  ExprRef channel = add(mul(g, perGroupIn), at[0]);
  std::vector<ExprRef> inIndex = {index[0], channel};
  std::vector<ExprRef> weightIndex = {channel, rem(m, perGroupOut)};
  ExprRef valid = boolConstant(true);
  for (size_t i = 0; i < n; ++i) {
    // out = in * stride - padBegin + k * dilation  =>  in = (out + padBegin - k * dilation) / stride
    ExprRef numerator = sub(add(index[2 + i], intConstant(padBegin[i])), mul(at[1 + i], dilations[i]));
    ExprRef position = div(numerator, strides[i]);
    ExprRef ok = binary(BinaryOp::LogicalAnd, binary(BinaryOp::Ge, numerator, intConstant(0)),
                        binary(BinaryOp::Eq, rem(numerator, strides[i]), intConstant(0)));
    ok = binary(BinaryOp::LogicalAnd, ok, binary(BinaryOp::Lt, position, intConstant(x[2 + i])));
    valid = binary(BinaryOp::LogicalAnd, valid, ok);
    inIndex.push_back(binary(BinaryOp::Min, binary(BinaryOp::Max, position, intConstant(0)), intConstant(x[2 + i] - 1)));
    weightIndex.push_back(at[1 + i]);
  }
  ExprRef term = binary(BinaryOp::Mul, cast(ctx.input(0)(inIndex), type), cast(ctx.input(1)(weightIndex), type));
  b.emit(assign(acc, ctx.hasInput(2) ? cast(ctx.input(2)({m}), type) : typedConstant(type, 0)));
  b.emit(forLoop(r, intConstant(productOf(reduction)),
                 {ifThen(valid, {assign(acc, binary(BinaryOp::Add, var(acc, type), term))})}));
  b.emit(ctx.store(0, b.gid(), var(acc, type)));
  b.kernel().flops = 2 * productOf(out) * productOf(reduction);
}

} // namespace

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
  table.addKernel(OpKind::Conv, naiveContractionRule);
  table.addKernel(OpKind::ConvTranspose, convTransposeRule);
}

} // namespace sinter::codegen
