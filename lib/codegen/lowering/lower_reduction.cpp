// Lowering of reductions, softmax and scans: kernel rules whose parallel index runs over the
// kept elements and whose body loops over the reduced ones. Accumulation is in the compute type.
#include "lowering_rules.h"

#include "sinter/ir/data_dependence.h"
#include "sinter/support/error.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace sinter::codegen {
namespace {

ExprRef lowest(DType type) {
  if (isFloat(type))
    return constant(type, -std::numeric_limits<double>::infinity());
  if (type == DType::Bool)
    return boolConstant(false);
  return intConstant(isSigned(type) ? std::numeric_limits<int64_t>::min() >> (64 - 8 * dtypeSize(type)) : 0, type);
}

ExprRef highest(DType type) {
  if (isFloat(type))
    return constant(type, std::numeric_limits<double>::infinity());
  if (type == DType::Bool)
    return boolConstant(true);
  int bits = 8 * dtypeSize(type);
  if (isSigned(type))
    return intConstant(bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t(1) << (bits - 1)) - 1, type);
  return intConstant(bits == 64 ? -1 : int64_t((uint64_t(1) << bits) - 1), type);
}

/// The input's dims split into kept and reduced axes.
struct ReductionShape {
  std::vector<int64_t> dims;
  std::vector<bool> reduced;
  std::vector<int64_t> keptDims, reducedDims;
};

ReductionShape reductionShape(const std::vector<int64_t> &dims, const std::vector<int64_t> &axes) {
  ReductionShape shape{dims, std::vector<bool>(dims.size(), false), {}, {}};
  for (int64_t axis : axes)
    shape.reduced[axis] = true;
  for (size_t i = 0; i < dims.size(); ++i)
    (shape.reduced[i] ? shape.reducedDims : shape.keptDims).push_back(dims[i]);
  return shape;
}

/// The full input index from a kept index (over keptDims) and a reduced index (over reducedDims).
std::vector<ExprRef> combine(const ReductionShape &shape, const std::vector<ExprRef> &kept,
                             const std::vector<ExprRef> &reduced) {
  std::vector<ExprRef> index;
  size_t k = 0, r = 0;
  for (size_t i = 0; i < shape.dims.size(); ++i)
    index.push_back(shape.reduced[i] ? reduced[r++] : kept[k++]);
  return index;
}

/// Emits `for r in 0..R: body(reducedIndex)` and returns the loop statement, of the given kind
/// (kernel_ir.h says what Parallel and Reduction loops promise).
template <typename Body>
StmtRef loopOver(KernelBuilder &builder, const std::vector<int64_t> &dims, Body body,
                 LoopKind kind = LoopKind::Serial) {
  int r = builder.addVariable("r", DType::Int64);
  ExprRef index = var(r, DType::Int64);
  ExprRef extent = intConstant(productOf(dims));
  std::vector<StmtRef> statements = body(unravelIndex(index, dims), index);
  switch (kind) {
  case LoopKind::Parallel: return parallelLoop(r, extent, std::move(statements));
  case LoopKind::Reduction: return reductionLoop(r, extent, std::move(statements));
  case LoopKind::Serial: break;
  }
  return forLoop(r, extent, std::move(statements));
}

std::vector<int64_t> reduceAxes(const RuleContext &ctx) {
  const Node &node = ctx.node();
  int64_t rank = int64_t(ctx.inputDims(0).size());
  std::vector<int64_t> axes;
  if (const Value *axesInput = node.input(1)) {
    if (!axesInput->isConstant())
      userError(node.describe(), ": the reduction axes must be a constant to compile",
                bindInputHint(graphInputsFeeding(*axesInput)));
    axes = axesInput->constant().toInts();
  }
  if (axes.empty()) {
    if (node.attrInt("noop_with_empty_axes", 0) != 0)
      return {};
    axes.resize(rank);
    std::iota(axes.begin(), axes.end(), 0);
  }
  for (int64_t &axis : axes)
    axis = normalizedAxis(node, axis, rank);
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
}

void reduceRule(const RuleContext &ctx) {
  const Node &node = ctx.node();
  KernelBuilder &b = ctx.builder();
  ReductionShape shape = reductionShape(ctx.inputDims(0), reduceAxes(ctx));
  DType type = ctx.outputType(0);
  int64_t count = productOf(shape.reducedDims);
  b.setParallelExtent(productOf(shape.keptDims));
  std::vector<ExprRef> kept = unravelIndex(b.gid(), shape.keptDims);
  auto element = [&](const std::vector<ExprRef> &reduced) {
    return cast(ctx.input(0)(combine(shape, kept, reduced)), type);
  };
  int acc = b.addVariable("acc", type);
  ExprRef accumulator = var(acc, type);
  OpKind kind = node.kind();

  if (kind == OpKind::ReduceLogSumExp) {
    // log(sum(exp(x - max))) + max, so large inputs do not overflow.
    int peak = b.addVariable("peak", type);
    ExprRef peakValue = var(peak, type);
    b.emit(assign(peak, lowest(type)));
    b.emit(loopOver(b, shape.reducedDims, [&](const std::vector<ExprRef> &reduced, ExprRef) {
      return std::vector<StmtRef>{assign(peak, binary(BinaryOp::Max, peakValue, element(reduced)))};
    }, LoopKind::Reduction));
    b.emit(assign(acc, typedConstant(type, 0)));
    b.emit(loopOver(b, shape.reducedDims, [&](const std::vector<ExprRef> &reduced, ExprRef) {
      ExprRef term = unary(UnaryOp::Exp, binary(BinaryOp::Sub, element(reduced), peakValue));
      return std::vector<StmtRef>{assign(acc, binary(BinaryOp::Add, accumulator, term))};
    }, LoopKind::Reduction));
    ExprRef finite = binary(BinaryOp::LogicalAnd, unary(UnaryOp::Not, unary(UnaryOp::IsInf, peakValue)),
                            unary(UnaryOp::Not, unary(UnaryOp::IsNaN, peakValue)));
    ExprRef result = binary(BinaryOp::Add, unary(UnaryOp::Log, accumulator), peakValue);
    b.emit(ctx.store(0, b.gid(), select(finite, result, peakValue)));
    return;
  }

  ExprRef initial = typedConstant(type, 0);
  if (kind == OpKind::ReduceMax)
    initial = lowest(type);
  else if (kind == OpKind::ReduceMin)
    initial = highest(type);
  else if (kind == OpKind::ReduceProd)
    initial = typedConstant(type, 1);
  b.emit(assign(acc, initial));
  b.emit(loopOver(b, shape.reducedDims, [&](const std::vector<ExprRef> &reduced, ExprRef) {
    ExprRef x = element(reduced);
    ExprRef next;
    switch (kind) {
    case OpKind::ReduceMax: next = binary(BinaryOp::Max, accumulator, x); break;
    case OpKind::ReduceMin: next = binary(BinaryOp::Min, accumulator, x); break;
    case OpKind::ReduceProd: next = binary(BinaryOp::Mul, accumulator, x); break;
    case OpKind::ReduceL1: next = binary(BinaryOp::Add, accumulator, unary(UnaryOp::Abs, x)); break;
    case OpKind::ReduceL2:
    case OpKind::ReduceSumSquare: next = binary(BinaryOp::Add, accumulator, binary(BinaryOp::Mul, x, x)); break;
    default: next = binary(BinaryOp::Add, accumulator, x); break;
    }
    return std::vector<StmtRef>{assign(acc, next)};
  }, LoopKind::Reduction));
  ExprRef result = accumulator;
  if (kind == OpKind::ReduceMean)
    result = binary(BinaryOp::Div, accumulator, typedConstant(type, double(count)));
  else if (kind == OpKind::ReduceL2)
    result = cast(unary(UnaryOp::Sqrt, cast(accumulator, isFloat(type) ? type : DType::Float64)), type);
  else if (kind == OpKind::ReduceLogSum)
    result = unary(UnaryOp::Log, accumulator);
  b.emit(ctx.store(0, b.gid(), result));
}

void argRule(const RuleContext &ctx) {
  const Node &node = ctx.node();
  KernelBuilder &b = ctx.builder();
  std::vector<int64_t> dims = ctx.inputDims(0);
  int64_t axis = normalizedAxis(node, node.attrInt("axis", 0), int64_t(dims.size()));
  ReductionShape shape = reductionShape(dims, {axis});
  DType type = ctx.inputType(0);
  bool isMax = node.kind() == OpKind::ArgMax;
  bool last = node.attrInt("select_last_index", 0) != 0;
  b.setParallelExtent(productOf(shape.keptDims));
  std::vector<ExprRef> kept = unravelIndex(b.gid(), shape.keptDims);
  int best = b.addVariable("best", type), where = b.addVariable("where", DType::Int64);
  b.emit(assign(best, ctx.input(0)(combine(shape, kept, {intConstant(0)}))));
  b.emit(assign(where, intConstant(0)));
  b.emit(loopOver(b, shape.reducedDims, [&](const std::vector<ExprRef> &, ExprRef r) {
    ExprRef x = ctx.input(0)(combine(shape, kept, {r}));
    ExprRef current = var(best, type);
    BinaryOp better = isMax ? (last ? BinaryOp::Ge : BinaryOp::Gt) : (last ? BinaryOp::Le : BinaryOp::Lt);
    ExprRef take = binary(better, x, current);
    if (isFloat(type)) // NaN wins, like numpy's argmax
      take = binary(BinaryOp::LogicalOr, take,
                    binary(BinaryOp::LogicalAnd, unary(UnaryOp::IsNaN, x), unary(UnaryOp::Not, unary(UnaryOp::IsNaN, current))));
    return std::vector<StmtRef>{ifThen(take, {assign(best, x), assign(where, r)})};
  }));
  b.emit(ctx.store(0, b.gid(), var(where, DType::Int64)));
}

/// Softmax, LogSoftmax and Hardmax along one axis.
void softmaxRule(const RuleContext &ctx) {
  const Node &node = ctx.node();
  KernelBuilder &b = ctx.builder();
  std::vector<int64_t> dims = ctx.inputDims(0);
  int64_t axis = normalizedAxis(node, node.attrInt("axis", -1), int64_t(dims.size()));
  ReductionShape shape = reductionShape(dims, {axis});
  DType type = ctx.outputType(0);
  b.setParallelExtent(productOf(shape.keptDims));
  std::vector<ExprRef> kept = unravelIndex(b.gid(), shape.keptDims);
  auto element = [&](ExprRef r) { return ctx.input(0)(combine(shape, kept, {r})); };
  auto outIndex = [&](ExprRef r) { return ravelIndex(combine(shape, kept, {r}), dims); };
  int peak = b.addVariable("peak", type), sum = b.addVariable("sum", type);
  int where = b.addVariable("where", DType::Int64);
  ExprRef peakValue = var(peak, type), sumValue = var(sum, type);
  b.emit(assign(peak, lowest(type)));
  if (node.kind() != OpKind::Hardmax) {
    // A NaN in the row makes the peak NaN, and with it the whole row, as it would anyway.
    b.emit(loopOver(b, shape.reducedDims, [&](const std::vector<ExprRef> &, ExprRef r) {
      return std::vector<StmtRef>{assign(peak, binary(BinaryOp::Max, peakValue, element(r)))};
    }, LoopKind::Reduction));
  } else {
    b.emit(assign(where, intConstant(0)));
    b.emit(loopOver(b, shape.reducedDims, [&](const std::vector<ExprRef> &, ExprRef r) {
      ExprRef x = element(r);
      return std::vector<StmtRef>{ifThen(binary(BinaryOp::Gt, x, peakValue), {assign(peak, x), assign(where, r)})};
    }));
    b.emit(loopOver(b, shape.reducedDims, [&](const std::vector<ExprRef> &, ExprRef r) {
      ExprRef hot = binary(BinaryOp::Eq, r, var(where, DType::Int64));
      return std::vector<StmtRef>{ctx.store(0, outIndex(r), select(hot, typedConstant(type, 1), typedConstant(type, 0)))};
    }));
    return;
  }
  b.emit(assign(sum, typedConstant(type, 0)));
  b.emit(loopOver(b, shape.reducedDims, [&](const std::vector<ExprRef> &, ExprRef r) {
    ExprRef e = unary(UnaryOp::Exp, binary(BinaryOp::Sub, element(r), peakValue));
    return std::vector<StmtRef>{assign(sum, binary(BinaryOp::Add, sumValue, e))};
  }, LoopKind::Reduction));
  bool log = node.kind() == OpKind::LogSoftmax;
  b.emit(loopOver(b, shape.reducedDims, [&](const std::vector<ExprRef> &, ExprRef r) {
    ExprRef shifted = binary(BinaryOp::Sub, element(r), peakValue);
    ExprRef value = log ? binary(BinaryOp::Sub, shifted, unary(UnaryOp::Log, sumValue))
                        : binary(BinaryOp::Div, unary(UnaryOp::Exp, shifted), sumValue);
    return std::vector<StmtRef>{ctx.store(0, outIndex(r), value)};
  }, LoopKind::Parallel));
}

/// TopK by rank: each element of a slice counts the elements that sort before it (greater, or
/// smaller with largest=0; ties by lower index; NaN above every number, as the reference
/// evaluator orders them) and, when that rank is below K, writes itself and its index to output
/// position `rank`. Ranks in a slice are distinct, so every output element is written once, with
/// no scratch and no sort; the work is n^2 per slice of n, fine for the selection sizes models use.
void topKRule(const RuleContext &ctx) {
  const Node &node = ctx.node();
  KernelBuilder &b = ctx.builder();
  std::vector<int64_t> dims = ctx.inputDims(0);
  if (dims.empty())
    userError(node.describe(), ": the input must have rank 1 or more");
  int64_t axis = normalizedAxis(node, node.attrInt("axis", -1), int64_t(dims.size()));
  int64_t k = ctx.outputDims(0)[axis];
  bool largest = node.attrInt("largest", 1) != 0;
  int64_t size = dims[axis], inner = productOf(dims, axis + 1);
  DType type = ctx.inputType(0);
  b.setParallelExtent(productOf(dims));
  std::vector<ExprRef> index = unravelIndex(b.gid(), dims);
  ExprRef self = ctx.input(0)(index);
  int j = b.addVariable("j", DType::Int64), rank = b.addVariable("rank", DType::Int64);
  ExprRef jv = var(j, DType::Int64);
  std::vector<ExprRef> other = index;
  other[axis] = jv;
  ExprRef x = ctx.input(0)(other);
  // `a` sorts before `b` by value alone.
  auto before = [&](ExprRef a, ExprRef c) {
    ExprRef strict = binary(largest ? BinaryOp::Gt : BinaryOp::Lt, a, c);
    if (!isFloat(type))
      return strict;
    ExprRef nanA = unary(UnaryOp::IsNaN, a), nanC = unary(UnaryOp::IsNaN, c);
    ExprRef nanOrder = largest ? binary(BinaryOp::LogicalAnd, nanA, unary(UnaryOp::Not, nanC))
                               : binary(BinaryOp::LogicalAnd, nanC, unary(UnaryOp::Not, nanA));
    return binary(BinaryOp::LogicalOr, strict, nanOrder);
  };
  ExprRef equal = binary(BinaryOp::Eq, x, self);
  if (isFloat(type))
    equal = binary(BinaryOp::LogicalOr, equal,
                   binary(BinaryOp::LogicalAnd, unary(UnaryOp::IsNaN, x), unary(UnaryOp::IsNaN, self)));
  ExprRef precedes = binary(BinaryOp::LogicalOr, before(x, self),
                            binary(BinaryOp::LogicalAnd, equal, binary(BinaryOp::Lt, jv, index[axis])));
  b.emit(assign(rank, intConstant(0)));
  b.emit(reductionLoop(j, intConstant(size),
                       {assign(rank, binary(BinaryOp::Add, var(rank, DType::Int64),
                                            select(precedes, intConstant(1), intConstant(0))))}));
  ExprRef rankValue = var(rank, DType::Int64);
  ExprRef outer = div(b.gid(), size * inner), within = rem(b.gid(), inner);
  ExprRef flat = add(mul(add(mul(outer, k), rankValue), inner), within);
  std::vector<StmtRef> writes = {ctx.store(0, flat, self)};
  if (ctx.hasOutput(1))
    writes.push_back(ctx.store(1, flat, index[axis]));
  b.emit(ifThen(binary(BinaryOp::Lt, rankValue, intConstant(k)), writes));
}

void cumSumRule(const RuleContext &ctx) {
  const Node &node = ctx.node();
  KernelBuilder &b = ctx.builder();
  std::vector<int64_t> dims = ctx.inputDims(0);
  const Value *axisInput = node.input(1);
  if (!axisInput->isConstant())
    userError(node.describe(), ": ", opName(node.kind()), "'s axis must be a constant to compile",
              bindInputHint(graphInputsFeeding(*axisInput)));
  int64_t axis = normalizedAxis(node, axisInput->constant().getInt(0), int64_t(dims.size()));
  ReductionShape shape = reductionShape(dims, {axis});
  DType type = ctx.outputType(0);
  bool exclusive = node.attrInt("exclusive", 0) != 0, reverse = node.attrInt("reverse", 0) != 0;
  int64_t length = dims[axis];
  b.setParallelExtent(productOf(shape.keptDims));
  std::vector<ExprRef> kept = unravelIndex(b.gid(), shape.keptDims);
  bool product = node.kind() == OpKind::CumProd;
  BinaryOp combineOp = product ? BinaryOp::Mul : BinaryOp::Add;
  int sum = b.addVariable("sum", type);
  ExprRef sumValue = var(sum, type);
  b.emit(assign(sum, typedConstant(type, product ? 1 : 0)));
  b.emit(loopOver(b, shape.reducedDims, [&](const std::vector<ExprRef> &, ExprRef r) {
    ExprRef position = reverse ? sub(intConstant(length - 1), r) : r;
    std::vector<ExprRef> index = combine(shape, kept, {position});
    ExprRef x = ctx.input(0)(index);
    ExprRef out = ravelIndex(index, dims);
    if (exclusive)
      return std::vector<StmtRef>{ctx.store(0, out, sumValue), assign(sum, binary(combineOp, sumValue, x))};
    return std::vector<StmtRef>{assign(sum, binary(combineOp, sumValue, x)), ctx.store(0, out, sumValue)};
  }));
}

} // namespace

void registerReductionLowering(LoweringTable &table) {
  for (OpKind kind : {OpKind::ReduceL1, OpKind::ReduceL2, OpKind::ReduceLogSum, OpKind::ReduceLogSumExp,
                      OpKind::ReduceMax, OpKind::ReduceMean, OpKind::ReduceMin, OpKind::ReduceProd,
                      OpKind::ReduceSum, OpKind::ReduceSumSquare})
    table.addKernel(kind, reduceRule);
  table.addKernel(OpKind::ArgMax, argRule);
  table.addKernel(OpKind::ArgMin, argRule);
  table.addKernel(OpKind::Softmax, softmaxRule);
  table.addKernel(OpKind::LogSoftmax, softmaxRule);
  table.addKernel(OpKind::Hardmax, softmaxRule);
  table.addKernel(OpKind::TopK, topKRule);
  table.addKernel(OpKind::CumSum, cumSumRule);
  table.addKernel(OpKind::CumProd, cumSumRule);
}

} // namespace sinter::codegen
