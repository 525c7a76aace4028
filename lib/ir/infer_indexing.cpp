// Inference for data-dependent indexing: Gather, GatherElements, GatherND, ScatterElements,
// ScatterND, TensorScatter and Compress.
#include "infer_rules.h"

#include <algorithm>
#include <cmath>

namespace sinter::infer {
namespace {

Types gather(const InferContext &ctx) {
  ctx.requireRankAtLeast(0, 1);
  ctx.requireDType(1, isIndexType, "i32 or i64");
  const Shape &data = ctx.shape(0);
  int axis = ctx.normalizeAxis(ctx.node().attrInt("axis", 0), int(data.size()));
  if (data[axis].isStatic() && ctx.constant(1)) {
    const Tensor &indices = *ctx.constant(1);
    int64_t size = data[axis].value();
    for (int64_t i = 0; i < indices.elementCount(); ++i) {
      int64_t index = indices.getInt(i);
      if (index < -size || index >= size)
        ctx.failInput(1, "(indices) has ", index, ", out of range for dim ", axis, " of size ",
                      size);
    }
  }
  Shape out(data.begin(), data.begin() + axis);
  const Shape &indices = ctx.shape(1);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  return {{ctx.dtype(0), out}};
}

Types gatherElements(const InferContext &ctx) {
  ctx.requireRankAtLeast(0, 1);
  ctx.requireDType(1, isIndexType, "i32 or i64");
  if (ctx.rank(1) != ctx.rank(0))
    ctx.failInput(1, "(indices) must have the rank of the data (", ctx.rank(0), ")");
  ctx.normalizeAxis(ctx.node().attrInt("axis", 0), ctx.rank(0));
  return {{ctx.dtype(0), ctx.shape(1)}};
}

/// GatherND and ScatterND: the index depth k = indices.shape[-1], which must be static.
int64_t indexDepth(const InferContext &ctx, int batchDims) {
  const Dim &last = ctx.shape(1).back();
  if (!last.isStatic())
    ctx.failInput(1, "(indices) has a non-static last dim, so the output's rank is unknown");
  int64_t k = last.value();
  if (k < 1 || k > ctx.rank(0) - batchDims)
    ctx.failInput(1, "(indices) has last dim ", k, "; expected 1 to ", ctx.rank(0) - batchDims);
  return k;
}

Types gatherND(const InferContext &ctx) {
  ctx.requireRankAtLeast(0, 1);
  ctx.requireRankAtLeast(1, 1);
  if (ctx.dtype(1) != DType::Int64)
    ctx.failInput(1, "(indices) must be i64");
  int64_t batchDims = ctx.node().attrInt("batch_dims", 0);
  if (batchDims < 0 || batchDims >= std::min(ctx.rank(0), ctx.rank(1)))
    ctx.fail("attribute 'batch_dims' is ", batchDims, "; expected 0 to ",
             std::min(ctx.rank(0), ctx.rank(1)) - 1);
  int64_t k = indexDepth(ctx, int(batchDims));
  const Shape &data = ctx.shape(0);
  Shape out(ctx.shape(1).begin(), ctx.shape(1).end() - 1);
  for (int64_t b = 0; b < batchDims; ++b)
    out[b] = mergeDims(ctx, out[b], data[b], detail::concat("batch dim ", b, " of data and indices"));
  out.insert(out.end(), data.begin() + batchDims + k, data.end());
  return {{ctx.dtype(0), out}};
}

void checkReduction(const InferContext &ctx) {
  std::string reduction = ctx.node().attrString("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" &&
      reduction != "min")
    ctx.fail("attribute 'reduction' must be none, add, mul, max or min, not \"", reduction, "\"");
}

Types scatterElements(const InferContext &ctx) {
  ctx.requireRankAtLeast(0, 1);
  ctx.requireDType(1, isIndexType, "i32 or i64");
  ctx.requireSameDType(0, 2);
  if (ctx.rank(1) != ctx.rank(0))
    ctx.failInput(1, "(indices) must have the rank of the data (", ctx.rank(0), ")");
  if (ctx.rank(2) != ctx.rank(1))
    ctx.failInput(2, "(updates) must have the shape of the indices");
  for (int d = 0; d < ctx.rank(1); ++d)
    mergeDims(ctx, ctx.shape(1)[d], ctx.shape(2)[d],
              detail::concat("dim ", d, " of indices and updates"));
  ctx.normalizeAxis(ctx.node().attrInt("axis", 0), ctx.rank(0));
  checkReduction(ctx);
  return {ctx.type(0)};
}

Types scatterND(const InferContext &ctx) {
  ctx.requireRankAtLeast(0, 1);
  ctx.requireRankAtLeast(1, 1);
  if (ctx.dtype(1) != DType::Int64)
    ctx.failInput(1, "(indices) must be i64");
  ctx.requireSameDType(0, 2);
  checkReduction(ctx);
  int64_t k = indexDepth(ctx, 0);
  const Shape &data = ctx.shape(0), &indices = ctx.shape(1), &updates = ctx.shape(2);
  Shape expected(indices.begin(), indices.end() - 1);
  expected.insert(expected.end(), data.begin() + k, data.end());
  if (updates.size() != expected.size())
    ctx.failInput(2, "(updates) must have shape ", shapeStr(expected));
  for (size_t d = 0; d < expected.size(); ++d)
    mergeDims(ctx, updates[d], expected[d],
              detail::concat("dim ", d, " of updates and of indices[:-1] + data[k:]"));
  return {ctx.type(0)};
}

/// Compress: the kept length depends on the condition's values, so that dim is unknown (the
/// whole output, 1-D, without `axis`).
Types compress(const InferContext &ctx) {
  ctx.requireDType(1, isBool, "bool");
  ctx.requireRank(1, 1);
  if (!ctx.node().hasAttr("axis"))
    return {{ctx.dtype(0), {Dim::unknown()}}};
  Shape shape = ctx.shape(0);
  shape[size_t(ctx.normalizeAxis(ctx.node().attrInt("axis", 0), ctx.rank(0)))] = Dim::unknown();
  return {{ctx.dtype(0), shape}};
}

/// TensorScatter: the cache's type.
Types tensorScatter(const InferContext &ctx) {
  ctx.requireSameDType(0, 1);
  ctx.requireRank(1, ctx.rank(0));
  std::string mode = ctx.node().attrString("mode", "linear");
  if (mode != "linear" && mode != "circular")
    ctx.fail("attribute 'mode' must be linear or circular, not \"", mode, "\"");
  int axis = ctx.normalizeAxis(ctx.node().attrInt("axis", -2), ctx.rank(0));
  if (axis == 0)
    ctx.fail("attribute 'axis' must not be the batch axis");
  if (ctx.hasInput(2))
    ctx.requireDType(2, isIndexType, "i32 or i64");
  return {ctx.type(0)};
}

} // namespace

void registerIndexingInference(InferTable &table) {
  table.add(OpKind::Compress, compress);
  table.add(OpKind::Gather, gather);
  table.add(OpKind::GatherElements, gatherElements);
  table.add(OpKind::GatherND, gatherND);
  table.add(OpKind::ScatterElements, scatterElements);
  table.add(OpKind::ScatterND, scatterND);
  table.add(OpKind::TensorScatter, tensorScatter);
}

} // namespace sinter::infer
