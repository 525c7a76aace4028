// Lowering of normalisation: kernel rules with one parallel index per normalised group (a row
// of LayerNormalization, a (batch, channel) pair of InstanceNormalization, ...), whose body
// computes the statistics in sequential loops and then writes the group.
#include "lowering_rules.h"

#include "sinter/ir/op_attributes.h"
#include "sinter/support/error.h"

#include <numeric>

namespace sinter::codegen {

namespace {

/// Statistics of `count` elements read by `element(r)` into mean and inverse standard deviation
/// variables (two passes: mean, then the mean of squared deviations).
struct Statistics {
  ExprRef mean, invStd;
};

template <typename Element>
Statistics emitStatistics(KernelBuilder &b, int64_t count, float epsilon, bool centered, Element element) {
  DType f32 = DType::Float32;
  int sum = b.addVariable("sum", f32), meanVar = b.addVariable("mean", f32);
  int squares = b.addVariable("squares", f32);
  int r = b.addVariable("r", DType::Int64), s = b.addVariable("s", DType::Int64);
  ExprRef n = constant(f32, double(count));
  b.emit(assign(sum, constant(f32, 0)));
  if (centered) {
    b.emit(reductionLoop(r, intConstant(count),
                         {assign(sum, binary(BinaryOp::Add, var(sum, f32), element(var(r, DType::Int64))))}));
    b.emit(assign(meanVar, binary(BinaryOp::Div, var(sum, f32), n)));
  } else {
    b.emit(assign(meanVar, constant(f32, 0)));
  }
  ExprRef mean = var(meanVar, f32);
  b.emit(assign(squares, constant(f32, 0)));
  ExprRef deviation = binary(BinaryOp::Sub, element(var(s, DType::Int64)), mean);
  b.emit(reductionLoop(s, intConstant(count),
                 {assign(squares, binary(BinaryOp::Add, var(squares, f32), binary(BinaryOp::Mul, deviation, deviation)))}));
  int invVar = b.addVariable("inv_std", f32);
  ExprRef variance = binary(BinaryOp::Div, var(squares, f32), n);
  b.emit(assign(invVar, binary(BinaryOp::Div, constant(f32, 1),
                               unary(UnaryOp::Sqrt, binary(BinaryOp::Add, variance, constant(f32, epsilon))))));
  return {mean, var(invVar, f32)};
}

/// LayerNormalization and RMSNormalization: groups are the rows of dims[:axis].
void layerNormRule(const RuleContext &ctx) {
  const Node &node = ctx.node();
  KernelBuilder &b = ctx.builder();
  std::vector<int64_t> dims = ctx.inputDims(0);
  int64_t axis = normalizedAxis(node, node.attrInt("axis", -1), int64_t(dims.size()));
  std::vector<int64_t> inner(dims.begin() + axis, dims.end());
  std::vector<int64_t> outer(dims.begin(), dims.begin() + axis);
  int64_t count = productOf(inner);
  bool rms = node.kind() == OpKind::RMSNormalization;
  b.setParallelExtent(productOf(outer));
  std::vector<ExprRef> rowIndex = unravelIndex(b.gid(), outer);
  auto full = [&](ExprRef r) {
    std::vector<ExprRef> index = rowIndex;
    for (ExprRef &i : unravelIndex(r, inner))
      index.push_back(i);
    return index;
  };
  auto element = [&](ExprRef r) { return cast(ctx.input(0)(full(r)), DType::Float32); };
  Statistics stats = emitStatistics(b, count, normalizationEpsilon(node), !rms, element);
  int r = b.addVariable("r", DType::Int64);
  ExprRef rv = var(r, DType::Int64);
  std::vector<ExprRef> innerIndex = unravelIndex(rv, inner);
  ExprRef y = binary(BinaryOp::Mul, binary(BinaryOp::Sub, element(rv), stats.mean), stats.invStd);
  y = binary(BinaryOp::Mul, y, cast(ctx.input(1)(broadcastIndex(innerIndex, ctx.inputDims(1))), DType::Float32));
  if (!rms && ctx.hasInput(2))
    y = binary(BinaryOp::Add, y, cast(ctx.input(2)(broadcastIndex(innerIndex, ctx.inputDims(2))), DType::Float32));
  b.emit(parallelLoop(r, intConstant(count), {ctx.store(0, add(mul(b.gid(), count), rv), y)}));
  if (!rms && ctx.hasOutput(1))
    b.emit(ctx.store(1, b.gid(), stats.mean));
  if (!rms && ctx.hasOutput(2))
    b.emit(ctx.store(2, b.gid(), stats.invStd));
}

/// InstanceNormalization (groups: one channel) and GroupNormalization (groups of channels).
void channelGroupNormRule(const RuleContext &ctx) {
  const Node &node = ctx.node();
  KernelBuilder &b = ctx.builder();
  std::vector<int64_t> dims = ctx.inputDims(0);
  if (dims.size() < 2)
    userError(node.describe(), ": input must have a channel dim");
  int64_t channels = dims[1], spatial = productOf(dims, 2);
  int64_t groups = node.kind() == OpKind::GroupNormalization ? node.attrInt("num_groups", 1) : channels;
  if (groups <= 0 || channels % groups != 0)
    userError(node.describe(), ": ", channels, " channels do not split into ", groups, " groups");
  int64_t perGroup = channels / groups;
  int64_t count = perGroup * spatial;
  b.setParallelExtent(dims[0] * groups);
  ExprRef base = mul(b.gid(), count); // groups are contiguous in NCHW
  auto element = [&](ExprRef r) {
    return cast(ctx.input(0)(unravelIndex(add(base, r), dims)), DType::Float32);
  };
  Statistics stats = emitStatistics(b, count, normalizationEpsilon(node), true, element);
  int r = b.addVariable("r", DType::Int64);
  ExprRef rv = var(r, DType::Int64);
  ExprRef channel = add(mul(rem(b.gid(), groups), perGroup), div(rv, spatial));
  ExprRef y = binary(BinaryOp::Mul, binary(BinaryOp::Sub, element(rv), stats.mean), stats.invStd);
  y = binary(BinaryOp::Mul, y, cast(ctx.input(1)({channel}), DType::Float32));
  y = binary(BinaryOp::Add, y, cast(ctx.input(2)({channel}), DType::Float32));
  b.emit(parallelLoop(r, intConstant(count), {ctx.store(0, add(base, rv), y)}));
}

void lpNormalizationRule(const RuleContext &ctx) {
  const Node &node = ctx.node();
  KernelBuilder &b = ctx.builder();
  std::vector<int64_t> dims = ctx.inputDims(0);
  int64_t axis = normalizedAxis(node, node.attrInt("axis", -1), int64_t(dims.size()));
  int64_t p = node.attrInt("p", 2);
  int64_t length = dims[axis], innerSize = productOf(dims, axis + 1);
  DType type = ctx.outputType(0);
  b.setParallelExtent(productOf(dims, 0, axis) * innerSize);
  ExprRef outer = div(b.gid(), innerSize), inner = rem(b.gid(), innerSize);
  auto flat = [&](ExprRef r) { return add(add(mul(outer, length * innerSize), mul(r, innerSize)), inner); };
  auto element = [&](ExprRef r) { return ctx.input(0)(unravelIndex(flat(r), dims)); };
  int norm = b.addVariable("norm", type), r = b.addVariable("r", DType::Int64), s = b.addVariable("s", DType::Int64);
  ExprRef x = element(var(r, DType::Int64));
  ExprRef term = p == 1 ? unary(UnaryOp::Abs, x) : binary(BinaryOp::Mul, x, x);
  b.emit(assign(norm, typedConstant(type, 0)));
  b.emit(reductionLoop(r, intConstant(length), {assign(norm, binary(BinaryOp::Add, var(norm, type), term))}));
  ExprRef divisor = p == 1 ? var(norm, type) : unary(UnaryOp::Sqrt, var(norm, type));
  ExprRef safe = select(binary(BinaryOp::Eq, divisor, typedConstant(type, 0)), typedConstant(type, 1), divisor);
  b.emit(parallelLoop(s, intConstant(length),
                 {ctx.store(0, flat(var(s, DType::Int64)), binary(BinaryOp::Div, element(var(s, DType::Int64)), safe))}));
}

/// LRN: each element divided by a power of the sum of squares over a window of channels.
void lrnRule(const RuleContext &ctx) {
  const Node &node = ctx.node();
  KernelBuilder &b = ctx.builder();
  std::vector<int64_t> dims = ctx.inputDims(0);
  int64_t size = node.attrInt("size", 1), channels = dims[1];
  double alpha = node.attrFloat("alpha", 1e-4f), beta = node.attrFloat("beta", 0.75f);
  double bias = node.attrFloat("bias", 1.0f);
  b.setParallelExtent(productOf(dims));
  std::vector<ExprRef> index = unravelIndex(b.gid(), dims);
  int sum = b.addVariable("sum", DType::Float32), k = b.addVariable("k", DType::Int64);
  int64_t low = (size - 1) / 2;
  ExprRef channel = add(sub(index[1], intConstant(low)), var(k, DType::Int64));
  ExprRef inRange = binary(BinaryOp::LogicalAnd, binary(BinaryOp::Ge, channel, intConstant(0)),
                           binary(BinaryOp::Lt, channel, intConstant(channels)));
  std::vector<ExprRef> at = index;
  at[1] = binary(BinaryOp::Min, binary(BinaryOp::Max, channel, intConstant(0)), intConstant(channels - 1));
  ExprRef x = cast(ctx.input(0)(at), DType::Float32);
  b.emit(assign(sum, constant(DType::Float32, 0)));
  b.emit(forLoop(k, intConstant(size),
                 {ifThen(inRange, {assign(sum, binary(BinaryOp::Add, var(sum, DType::Float32), binary(BinaryOp::Mul, x, x)))})}));
  ExprRef scale = binary(BinaryOp::Add, constant(DType::Float32, bias),
                         binary(BinaryOp::Mul, constant(DType::Float32, alpha / double(size)), var(sum, DType::Float32)));
  ExprRef y = binary(BinaryOp::Div, cast(ctx.input(0)(index), DType::Float32),
                     binary(BinaryOp::Pow, scale, constant(DType::Float32, beta)));
  b.emit(ctx.store(0, b.gid(), y));
}

/// MeanVarianceNormalization over `axes` (default N, H, W).
void meanVarianceRule(const RuleContext &ctx) {
  const Node &node = ctx.node();
  KernelBuilder &b = ctx.builder();
  std::vector<int64_t> dims = ctx.inputDims(0);
  int64_t rank = int64_t(dims.size());
  std::vector<int64_t> axes = node.attrInts("axes", {0, 2, 3});
  std::vector<bool> reduced(rank, false);
  for (int64_t axis : axes)
    reduced[normalizedAxis(node, axis, rank)] = true;
  std::vector<int64_t> keptDims, reducedDims;
  for (int64_t i = 0; i < rank; ++i)
    (reduced[i] ? reducedDims : keptDims).push_back(dims[i]);
  b.setParallelExtent(productOf(keptDims));
  std::vector<ExprRef> kept = unravelIndex(b.gid(), keptDims);
  auto full = [&](ExprRef r) {
    std::vector<ExprRef> part = unravelIndex(r, reducedDims), index;
    size_t k = 0, q = 0;
    for (int64_t i = 0; i < rank; ++i)
      index.push_back(reduced[i] ? part[q++] : kept[k++]);
    return index;
  };
  auto element = [&](ExprRef r) { return cast(ctx.input(0)(full(r)), DType::Float32); };
  int64_t count = productOf(reducedDims);
  Statistics stats = emitStatistics(b, count, 1e-9f, true, element);
  int r = b.addVariable("r", DType::Int64);
  ExprRef rv = var(r, DType::Int64);
  ExprRef y = binary(BinaryOp::Mul, binary(BinaryOp::Sub, element(rv), stats.mean), stats.invStd);
  b.emit(parallelLoop(r, intConstant(count), {ctx.store(0, ravelIndex(full(rv), dims), y)}));
}

ExprRef batchNormRule(const RuleContext &ctx, int output, const std::vector<ExprRef> &index) {
  if (ctx.node().attrInt("training_mode", 0) != 0)
    userError(ctx.node().describe(), ": training-mode BatchNormalization cannot be compiled");
  ExprRef channel = index.size() > 1 ? index[1] : intConstant(0);
  ExprRef x = ctx.input(0)(index);
  ExprRef scale = ctx.input(1)({channel}), bias = ctx.input(2)({channel});
  ExprRef mean = ctx.input(3)({channel}), variance = ctx.input(4)({channel});
  ExprRef epsilon = typedConstant(x->type, normalizationEpsilon(ctx.node()));
  ExprRef normalized = binary(BinaryOp::Div, binary(BinaryOp::Sub, x, mean),
                              unary(UnaryOp::Sqrt, binary(BinaryOp::Add, variance, epsilon)));
  return binary(BinaryOp::Add, binary(BinaryOp::Mul, normalized, scale), bias);
}

} // namespace

void registerNormalizationLowering(LoweringTable &table) {
  table.addKernel(OpKind::LayerNormalization, layerNormRule);
  table.addKernel(OpKind::RMSNormalization, layerNormRule);
  table.addKernel(OpKind::InstanceNormalization, channelGroupNormRule);
  table.addKernel(OpKind::GroupNormalization, channelGroupNormRule);
  table.addKernel(OpKind::LpNormalization, lpNormalizationRule);
  table.addKernel(OpKind::LRN, lrnRule);
  table.addKernel(OpKind::MeanVarianceNormalization, meanVarianceRule);
  table.addInjective(OpKind::BatchNormalization, batchNormRule);
}

} // namespace sinter::codegen
