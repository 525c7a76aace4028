// Inference for Unique and TfIdfVectorizer.
//
// Unique: Y holds the distinct values (flattened, or distinct slices along `axis`), so its
// length depends on the data (unknown); indices, inverse_indices and counts are i64 vectors
// (inverse_indices as long as the input, or its axis).
//
// TfIdfVectorizer: X [N] or [B, N] of i32, i64 (strings are not tensor types sinter has);
// output f32 [C] or [B, C] with C = max(ngram_indexes) + 1.
#include "infer_rules.h"

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
  const Node &node = ctx.node();
  std::string mode = node.attrString("mode", "");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF")
    ctx.fail("mode '", mode, "' is not one of TF, IDF, TFIDF");
  int64_t minGram = node.attrInt("min_gram_length", 0), maxGram = node.attrInt("max_gram_length", 0);
  if (minGram < 1 || maxGram < minGram)
    ctx.fail("n-gram lengths must satisfy 1 <= min_gram_length (", minGram, ") <= max_gram_length (", maxGram, ")");
  if (node.attrInt("max_skip_count", 0) < 0)
    ctx.fail("max_skip_count must not be negative");
  if (!node.attrStrings("pool_strings").empty())
    ctx.fail("pool_strings needs string tensors, which sinter does not have");
  std::vector<int64_t> indexes = node.attrInts("ngram_indexes");
  std::vector<int64_t> pool = node.attrInts("pool_int64s");
  std::vector<int64_t> counts = node.attrInts("ngram_counts");
  std::vector<float> weights = node.attrFloats("weights");
  if (counts.size() < size_t(maxGram))
    ctx.fail("ngram_counts has ", counts.size(), " entries; max_gram_length needs ", maxGram);
  // The pool holds the 1-grams, then the 2-grams, ...; ngram_counts gives where each starts.
  int64_t grams = 0;
  for (size_t n = 0; n < counts.size(); ++n) {
    int64_t end = n + 1 < counts.size() ? counts[n + 1] : int64_t(pool.size());
    if (counts[n] < 0 || end < counts[n] || end > int64_t(pool.size()) || (end - counts[n]) % int64_t(n + 1) != 0)
      ctx.fail("ngram_counts ", counts[n], " does not split pool_int64s into whole ", n + 1, "-grams");
    grams += (end - counts[n]) / int64_t(n + 1);
  }
  if (int64_t(indexes.size()) != grams)
    ctx.fail("ngram_indexes has ", indexes.size(), " entries for ", grams, " n-grams");
  if (!weights.empty() && weights.size() != indexes.size())
    ctx.fail("weights has ", weights.size(), " entries for ", indexes.size(), " n-grams");
  int64_t width = 0;
  for (int64_t index : indexes) {
    if (index < 0)
      ctx.fail("ngram_indexes has a negative entry ", index);
    width = std::max(width, index + 1);
  }
  Shape out = ctx.rank(0) == 1 ? Shape{Dim(width)} : Shape{ctx.shape(0)[0], Dim(width)};
  return {{DType::Float32, out}};
}

} // namespace

void registerCountingInference(InferTable &table) {
  table.add(OpKind::Unique, unique);
  table.add(OpKind::TfIdfVectorizer, tfIdf);
}

} // namespace sinter::infer
