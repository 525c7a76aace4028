// Lowering of the gathers (Gather, GatherElements, GatherND) as injective rules: a negative index
// counts from the end and an index is clamped into its axis, so no load leaves the tensor (an
// out-of-range index is undefined in ONNX). The scatters are in lower_indexing_scatter.cpp.
#include "lowering_rules.h"

#include "sinter/support/error.h"

namespace sinter::codegen {
namespace {

ExprRef gatherRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  std::vector<int64_t> dataDims = ctx.inputDims(0), indexDims = ctx.inputDims(1);
  int64_t axis = normalizedAxis(ctx.node(), ctx.node().attrInt("axis", 0), int64_t(dataDims.size()));
  size_t q = indexDims.size();
  std::vector<ExprRef> indicesIndex(index.begin() + axis, index.begin() + axis + q);
  ExprRef position;
  const Value *indices = ctx.node().input(1);
  if (indices->isConstant() && indices->constant().elementCount() == 1) {
    // One constant index (torch's unbind of a QKV split: Gather(s, 0), 1, 2) is a constant of
    // the kernel, so the index arithmetic around it stays affine (IndexRanges::simplify, and the
    // tensor-core and attention kernels' 16-byte runs) instead of reading a buffer.
    int64_t at = int64_t(indices->constant().getDouble(0));
    at = std::clamp<int64_t>(at < 0 ? at + dataDims[axis] : at, 0, std::max<int64_t>(dataDims[axis] - 1, 0));
    position = intConstant(at);
  } else {
    position = dataIndex(ctx.input(1)(indicesIndex), dataDims[axis]);
  }
  std::vector<ExprRef> inIndex(index.begin(), index.begin() + axis);
  inIndex.push_back(position);
  inIndex.insert(inIndex.end(), index.begin() + axis + q, index.end());
  return ctx.input(0)(inIndex);
}

ExprRef gatherElementsRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  std::vector<int64_t> dataDims = ctx.inputDims(0);
  int64_t axis = normalizedAxis(ctx.node(), ctx.node().attrInt("axis", 0), int64_t(dataDims.size()));
  std::vector<ExprRef> inIndex = index;
  inIndex[axis] = dataIndex(ctx.input(1)(index), dataDims[axis]);
  return ctx.input(0)(inIndex);
}

/// GatherND: out[tuple..., slice...] = data[batch..., indices[tuple..., :]..., slice...], the first
/// batch_dims coordinates of the tuple shared with the data.
ExprRef gatherNDRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  std::vector<int64_t> dataDims = ctx.inputDims(0), indexDims = ctx.inputDims(1);
  int64_t batchDims = ctx.node().attrInt("batch_dims", 0);
  int64_t indexRank = int64_t(indexDims.size()), dataRank = int64_t(dataDims.size());
  int64_t depth = indexRank > 0 ? indexDims.back() : 0;
  if (indexRank < 1 || batchDims < 0 || batchDims >= std::min(dataRank, indexRank) || depth < 1 ||
      depth > dataRank - batchDims)
    userError(ctx.node().describe(), ": indices ", indexRank, "-D with tuples of ", depth,
              " do not fit data of rank ", dataRank, " with batch_dims ", batchDims);
  std::vector<ExprRef> tuple(index.begin(), index.begin() + (indexRank - 1));
  std::vector<ExprRef> inIndex(index.begin(), index.begin() + batchDims);
  for (int64_t j = 0; j < depth; ++j) {
    std::vector<ExprRef> at = tuple;
    at.push_back(intConstant(j));
    inIndex.push_back(dataIndex(ctx.input(1)(at), dataDims[batchDims + j]));
  }
  inIndex.insert(inIndex.end(), index.begin() + (indexRank - 1), index.end());
  return ctx.input(0)(inIndex);
}

} // namespace

void registerIndexingLowering(LoweringTable &table) {
  table.addInjective(OpKind::Gather, gatherRule);
  table.addInjective(OpKind::GatherElements, gatherElementsRule);
  table.addInjective(OpKind::GatherND, gatherNDRule);
}

} // namespace sinter::codegen
