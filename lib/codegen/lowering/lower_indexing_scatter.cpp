// Lowering of the scatters: ScatterElements and ScatterND (kernel rules) and TensorScatter (an
// injective rule). The semantics are those of lib/reference/indexing.cpp.
//
// A scatter is lowered in gather form: one parallel index per output element, which starts from
// the data and walks, in index order, every update that could land on it, applying those that
// do (assignment, or the reduction add, mul, max or min). So duplicate indices are deterministic
// and accumulate exactly as the reference's serial loop does, with no atomics. The cost is the
// walk: ScatterElements walks the indices' extent along `axis` per element, ScatterND every index
// tuple per element (O(elements x tuples): slow for scatters with many tuples).
//
// An index from data counts from the end when negative; one still outside its axis matches no
// element, so a bad index can never write out of bounds (the reference rejects it).
#include "lowering_rules.h"

#include "sinter/ir/op_attributes.h"
#include "sinter/support/error.h"

namespace sinter::codegen {
namespace {

using Reduction = ScatterReduction;

/// `current` combined with `update` by the reduction (bool: add and max are or, mul and min and).
ExprRef reduce(Reduction reduction, ExprRef current, ExprRef update) {
  if (reduction == Reduction::None)
    return update;
  if (current->type == DType::Bool) {
    bool either = reduction == Reduction::Add || reduction == Reduction::Max;
    return binary(either ? BinaryOp::LogicalOr : BinaryOp::LogicalAnd, current, update);
  }
  switch (reduction) {
  case Reduction::None: return update;
  case Reduction::Add: return binary(BinaryOp::Add, current, update);
  case Reduction::Mul: return binary(BinaryOp::Mul, current, update);
  case Reduction::Max: return binary(BinaryOp::Max, current, update);
  case Reduction::Min: return binary(BinaryOp::Min, current, update);
  }
  return update;
}

/// A data-derived index with negative values counted from the end (not clamped: an index still
/// out of range matches no position).
ExprRef wrappedIndex(ExprRef raw, int64_t size) {
  ExprRef index = cast(raw, DType::Int64);
  return select(binary(BinaryOp::Lt, index, intConstant(0)), add(index, size), index);
}

void requireIntegerIndices(const RuleContext &ctx, int input) {
  DType type = ctx.node().input(input)->dtype();
  if (type != DType::Int32 && type != DType::Int64)
    userError(ctx.node().describe(), ": indices must be int32 or int64, not ", dtypeName(type));
}

void scatterElementsRule(const RuleContext &ctx) {
  const Node &node = ctx.node();
  KernelBuilder &b = ctx.builder();
  requireIntegerIndices(ctx, 1);
  std::vector<int64_t> dataDims = ctx.inputDims(0), indexDims = ctx.inputDims(1);
  int64_t rank = int64_t(dataDims.size());
  if (rank == 0 || int64_t(indexDims.size()) != rank || ctx.inputDims(2) != indexDims)
    userError(node.describe(), ": data, indices and updates must have one rank, and indices and "
                               "updates one shape");
  int64_t axis = normalizedAxis(node, node.attrInt("axis", 0), rank);
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && indexDims[d] > dataDims[d])
      userError(node.describe(), ": indices exceed the data along axis ", d);
  Reduction reduction = scatterReduction(node);
  DType type = ctx.outputType(0);

  int64_t count = productOf(dataDims);
  b.setParallelExtent(count);
  std::vector<ExprRef> at = unravelIndex(b.gid(), dataDims);
  int acc = b.addVariable("acc", type), j = b.addVariable("j", DType::Int64);
  b.emit(assign(acc, ctx.input(0)(at)));
  // Only positions whose other coordinates lie inside the indices can receive updates.
  ExprRef reachable = boolConstant(true);
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && indexDims[d] < dataDims[d])
      reachable = binary(BinaryOp::LogicalAnd, reachable, binary(BinaryOp::Lt, at[d], intConstant(indexDims[d])));
  std::vector<ExprRef> source = at;
  source[axis] = var(j, DType::Int64);
  ExprRef target = wrappedIndex(ctx.input(1)(source), dataDims[axis]);
  StmtRef apply = ifThen(binary(BinaryOp::Eq, target, at[axis]),
                         {assign(acc, reduce(reduction, var(acc, type), ctx.input(2)(source)))});
  StmtRef walk = forLoop(j, intConstant(indexDims[axis]), {apply});
  b.emit(reachable->kind == ExprKind::Constant ? walk : ifThen(reachable, {walk}));
  b.emit(ctx.store(0, b.gid(), var(acc, type)));
}

void scatterNDRule(const RuleContext &ctx) {
  const Node &node = ctx.node();
  KernelBuilder &b = ctx.builder();
  requireIntegerIndices(ctx, 1);
  std::vector<int64_t> dataDims = ctx.inputDims(0), indexDims = ctx.inputDims(1);
  std::vector<int64_t> updateDims = ctx.inputDims(2);
  int64_t rank = int64_t(dataDims.size());
  if (indexDims.empty())
    userError(node.describe(), ": indices must have rank >= 1");
  int64_t depth = indexDims.back();
  if (depth < 1 || depth > rank)
    userError(node.describe(), ": index tuples of length ", depth, " do not fit data of rank ", rank);
  std::vector<int64_t> tupleDims(indexDims.begin(), indexDims.end() - 1);
  std::vector<int64_t> expected = tupleDims;
  expected.insert(expected.end(), dataDims.begin() + depth, dataDims.end());
  if (updateDims != expected)
    userError(node.describe(), ": updates do not have the shape indices[:-1] + data[", depth, ":]");
  Reduction reduction = scatterReduction(node);
  DType type = ctx.outputType(0);
  int64_t slice = productOf(dataDims, size_t(depth)), tuples = productOf(tupleDims);

  b.setParallelExtent(productOf(dataDims));
  std::vector<ExprRef> at = unravelIndex(b.gid(), dataDims);
  ExprRef inner = slice == 1 ? intConstant(0) : rem(b.gid(), slice);
  int acc = b.addVariable("acc", type), t = b.addVariable("t", DType::Int64);
  ExprRef tuple = var(t, DType::Int64);
  std::vector<ExprRef> tupleIndex = unravelIndex(tuple, tupleDims);
  ExprRef match = boolConstant(true);
  for (int64_t k = 0; k < depth; ++k) {
    std::vector<ExprRef> indexAt = tupleIndex;
    indexAt.push_back(intConstant(k));
    ExprRef target = wrappedIndex(ctx.input(1)(indexAt), dataDims[k]);
    match = binary(BinaryOp::LogicalAnd, match, binary(BinaryOp::Eq, target, at[k]));
  }
  ExprRef update = ctx.input(2)(unravelIndex(add(mul(tuple, slice), inner), updateDims));
  b.emit(assign(acc, ctx.input(0)(at)));
  b.emit(forLoop(t, intConstant(tuples), {ifThen(match, {assign(acc, reduce(reduction, var(acc, type), update))})}));
  b.emit(ctx.store(0, b.gid(), var(acc, type)));
}

/// TensorScatter: the cache with the update written along `axis` from write_indices[batch]
/// (0 when absent); "circular" wraps positions modulo the cache length.
ExprRef tensorScatterRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  const Node &node = ctx.node();
  std::vector<int64_t> cacheDims = ctx.inputDims(0), updateDims = ctx.inputDims(1);
  int64_t rank = int64_t(cacheDims.size());
  int64_t axis = normalizedAxis(node, node.attrInt("axis", -2), rank);
  std::string mode = node.attrString("mode", "linear");
  if (mode != "linear" && mode != "circular")
    userError(node.describe(), ": mode '", mode, "' is not linear or circular");
  if (axis == 0 || int64_t(updateDims.size()) != rank)
    userError(node.describe(), ": the update must have the cache's rank and axis must not be 0");
  int64_t length = cacheDims[axis], steps = updateDims[axis];
  ExprRef start = ctx.hasInput(2) ? cast(ctx.input(2)({index[0]}), DType::Int64) : intConstant(0);
  ExprRef offset = sub(index[axis], start);
  if (mode == "circular" && length > 0)
    offset = rem(add(rem(offset, length), length), length);
  ExprRef written = binary(BinaryOp::LogicalAnd, binary(BinaryOp::Ge, offset, intConstant(0)),
                           binary(BinaryOp::Lt, offset, intConstant(steps)));
  std::vector<ExprRef> from = index;
  // Clamped so that the arm not taken still reads in bounds.
  from[axis] = binary(BinaryOp::Min, binary(BinaryOp::Max, offset, intConstant(0)),
                      intConstant(std::max<int64_t>(steps - 1, 0)));
  ExprRef kept = ctx.input(0)(index);
  if (steps == 0)
    return kept;
  return select(written, ctx.input(1)(from), kept);
}

} // namespace

void registerScatterLowering(LoweringTable &table) {
  table.addKernel(OpKind::ScatterElements, scatterElementsRule);
  table.addKernel(OpKind::ScatterND, scatterNDRule);
  table.addInjective(OpKind::TensorScatter, tensorScatterRule);
}

} // namespace sinter::codegen
