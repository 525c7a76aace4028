// Inference for pools: the windowed pools (window extents as for Conv: windowExtent,
// sinter/ir/op_attributes.h), the global pools, and MaxUnpool: X and indices [N, C, spatial...];
// output [N, C, out...] with out from output_shape (input 2) or (in - 1) * stride - pads + kernel.
#include "infer_rules.h"

#include "sinter/ir/op_attributes.h"

#include <algorithm>

namespace sinter::infer {
namespace {

Types pool(const InferContext &ctx) {
  if (ctx.kind() == OpKind::MaxPool)
    ctx.requireDType(0, [](DType t) { return isFloat(t) || t == DType::Int8 || t == DType::Uint8; },
                     "a float type, i8 or u8");
  else
    ctx.requireDType(0, isFloatType, "a float type");
  ctx.requireRankAtLeast(0, 3);
  if (ctx.kind() == OpKind::AveragePool) {
    int64_t countIncludePad = ctx.node().attrInt("count_include_pad", 0);
    if (countIncludePad != 0 && countIncludePad != 1)
      ctx.fail("attribute 'count_include_pad' must be 0 or 1, not ", countIncludePad);
  }
  if (ctx.kind() == OpKind::MaxPool) {
    int64_t storageOrder = ctx.node().attrInt("storage_order", 0);
    if (storageOrder != 0 && storageOrder != 1)
      ctx.fail("attribute 'storage_order' must be 0 or 1, not ", storageOrder);
  }
  Window window = readWindow(ctx, -1);
  const Shape &x = ctx.shape(0);
  Shape out = {x[0], x[1]};
  for (size_t i = 0; i + 2 < x.size(); ++i)
    out.push_back(windowOutput(ctx, window, x[2 + i], i));
  Types types = {{ctx.dtype(0), out}};
  if (ctx.numOutputs() == 2)
    types.push_back({DType::Int64, out});
  return types;
}

Types globalPool(const InferContext &ctx) {
  ctx.requireDType(0, isFloatType, "a float type");
  ctx.requireRankAtLeast(0, 2);
  Shape out = ctx.shape(0);
  std::fill(out.begin() + 2, out.end(), Dim(1));
  return {{ctx.dtype(0), out}};
}

Types maxUnpool(const InferContext &ctx) {
  ctx.requireDType(0, isFloatType, "a float type");
  ctx.requireRankAtLeast(0, 3);
  ctx.requireDType(1, [](DType t) { return t == DType::Int64; }, "i64");
  ctx.requireRank(1, ctx.rank(0));
  const Shape &x = ctx.shape(0);
  size_t n = x.size() - 2;
  for (size_t d = 0; d < x.size(); ++d)
    mergeDims(ctx, ctx.shape(1)[d], x[d], "the indices' and X's dims");
  std::vector<int64_t> kernel = spatialAttribute(ctx.node(), "kernel_shape", n, 1, 1);
  std::vector<int64_t> strides = spatialAttribute(ctx.node(), "strides", n, 1, 1);
  std::vector<int64_t> pads = spatialAttribute(ctx.node(), "pads", 2 * n, 0, 0);
  Shape out = {x[0], x[1]};
  for (size_t d = 0; d < n; ++d) {
    if (!x[2 + d].isStatic()) {
      out.push_back(Dim::unknown());
      continue;
    }
    int64_t size = (x[2 + d].value() - 1) * strides[d] - pads[d] - pads[d + n] + kernel[d];
    if (size <= 0)
      ctx.fail("spatial dim ", d, " of the output would be ", size);
    out.push_back(Dim(size));
  }
  if (ctx.hasInput(2)) {
    ctx.requireDType(2, [](DType t) { return t == DType::Int64; }, "i64");
    ctx.requireRank(2, 1);
    std::optional<std::vector<int64_t>> shape = ctx.constantInts(2);
    if (!shape)
      return {{ctx.dtype(0), unknownShape(ctx.rank(0))}};
    if (shape->size() != x.size())
      ctx.failInput(2, "(output_shape) must have one value per dim of X");
    for (size_t d = 0; d < x.size(); ++d) {
      if (out[d].isStatic() && (*shape)[d] < out[d].value())
        ctx.fail("output_shape's dim ", d, " (", (*shape)[d], ") is smaller than the unpooled size ", out[d].value());
      out[d] = Dim((*shape)[d]);
    }
  }
  return {{ctx.dtype(0), out}};
}

} // namespace

void registerPoolingInference(InferTable &table) {
  table.add(OpKind::AveragePool, pool);
  table.add(OpKind::MaxPool, pool);
  table.add(OpKind::LpPool, pool);
  table.add(OpKind::GlobalAveragePool, globalPool);
  table.add(OpKind::GlobalMaxPool, globalPool);
  table.add(OpKind::MaxUnpool, maxUnpool);
}

} // namespace sinter::infer
