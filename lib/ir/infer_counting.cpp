// Inference for Unique and TfIdfVectorizer.
//
// Unique: Y holds the distinct values (flattened, or distinct slices along `axis`), so its
// length depends on the data (unknown); indices, inverse_indices and counts are i64 vectors
// (inverse_indices as long as the input, or its axis).
//
// TfIdfVectorizer: X [N] or [B, N] of i32, i64 (strings are not tensor types sinter has);
// output f32 [C] or [B, C] with C = max(ngram_indexes) + 1.
#include "infer_rules.h"

#include "sinter/ir/op_attributes.h"

#include <algorithm>

namespace sinter::infer {
namespace {

Types unique(const InferContext &ctx) {
  const Shape &x = ctx.shape(0);
  Shape y = {Dim::unknown()};
  Dim inverse = Dim::unknown();
  if (ctx.node().hasAttr("axis")) {
    int axis = ctx.normalizeAxis(ctx.node().attrInt("axis", 0), ctx.rank(0));
    y = x;
    y[axis] = Dim::unknown();
    inverse = x[axis];
  } else {
    inverse = productOfDims(ctx, x, 0, x.size());
  }
  int64_t sorted = ctx.node().attrInt("sorted", 1);
  if (sorted != 0 && sorted != 1)
    ctx.fail("attribute 'sorted' must be 0 or 1, not ", sorted);
  Types types = {{ctx.dtype(0), y}};
  if (ctx.numOutputs() > 1)
    types.push_back({DType::Int64, {Dim::unknown()}});
  if (ctx.numOutputs() > 2)
    types.push_back({DType::Int64, {inverse}});
  if (ctx.numOutputs() > 3)
    types.push_back({DType::Int64, {Dim::unknown()}});
  return types;
}

Types tfIdf(const InferContext &ctx) {
  ctx.requireDType(0, [](DType t) { return t == DType::Int32 || t == DType::Int64; }, "i32 or i64");
  if (ctx.rank(0) != 1 && ctx.rank(0) != 2)
    ctx.failInput(0, "must be 1-D or 2-D");
  int64_t width = tfIdfAttributes(ctx.node()).width;
  Shape out = ctx.rank(0) == 1 ? Shape{Dim(width)} : Shape{ctx.shape(0)[0], Dim(width)};
  return {{DType::Float32, out}};
}

} // namespace

void registerCountingInference(InferTable &table) {
  table.add(OpKind::Unique, unique);
  table.add(OpKind::TfIdfVectorizer, tfIdf);
}

} // namespace sinter::infer
