// Reference rule for TfIdfVectorizer over integer tokens. The pool lists the n-grams to count
// (ngram_counts[n - 1] is where the n-grams start in pool_int64s) and ngram_indexes gives each
// its output column. In each row (X is [N] or [B, N]) an n-gram of length n in
// [min_gram_length, max_gram_length] with skip distance d in 1 .. max_skip_count + 1 is the
// tokens at start, start + d, ..., start + (n - 1) d; 1-grams are counted once, not per d.
// Output f32, summed over the n-grams of each column: TF the counts, IDF the n-gram's weight (1
// without weights) where its count is positive, TFIDF weight * count. Weights follow the pool's
// n-gram order, as the spec and onnxruntime have them (ONNX's Python reference indexes them by
// output column instead, which differs only when ngram_indexes is not in pool order).
#include "registry.h"
#include "tensor_helpers.h"

#include "sinter/ir/op_attributes.h"

#include <algorithm>
#include <map>

namespace sinter::reference {
namespace {

Outputs evalTfIdf(const Node &node, const Inputs &inputs) {
  const Tensor &x = requiredInput(node, inputs, 0);
  if (x.rank() != 1 && x.rank() != 2)
    userError(node.describe(), ": X must be 1-D or 2-D");
  const TfIdfAttributes attributes = tfIdfAttributes(node);
  const int64_t minGram = attributes.minGram, maxGram = attributes.maxGram, maxSkip = attributes.maxSkip;
  const int64_t width = attributes.width;
  const size_t next = attributes.grams.size();
  // n-gram (tokens) -> its place in the pool.
  std::map<std::vector<int64_t>, int64_t> columns;
  for (size_t g = 0; g < next; ++g)
    columns[attributes.grams[g].tokens] = int64_t(g);
  int64_t rows = x.rank() == 2 ? x.dims()[0] : 1, length = x.dims().back();
  std::vector<double> frequency(size_t(rows) * next, 0.0);
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t distance = 1; distance <= maxSkip + 1; ++distance)
      for (int64_t n = distance == 1 ? minGram : std::max<int64_t>(minGram, 2); n <= maxGram; ++n)
        for (int64_t start = 0; start + (n - 1) * distance < length; ++start) {
          std::vector<int64_t> gram;
          for (int64_t k = 0; k < n; ++k)
            gram.push_back(x.getInt(row * length + start + k * distance));
          auto it = columns.find(gram);
          if (it != columns.end())
            frequency[size_t(row) * next + size_t(it->second)] += 1;
        }
  std::vector<double> out(size_t(rows * width), 0.0);
  for (int64_t row = 0; row < rows; ++row)
    for (size_t gram = 0; gram < next; ++gram) {
      double weight = attributes.grams[gram].weight;
      double f = frequency[size_t(row) * next + gram];
      double value = attributes.mode == TfIdfMode::Idf ? (f > 0 ? weight : 0.0) : attributes.mode == TfIdfMode::TfIdf ? f * weight : f;
      out[size_t(row * width + attributes.grams[gram].column)] += value;
    }
  std::vector<int64_t> outDims = x.rank() == 2 ? std::vector<int64_t>{rows, width} : std::vector<int64_t>{width};
  return {fromDoubles(DType::Float32, outDims, out)};
}

} // namespace

void registerTfIdfRules(RuleTable &table) { table.add(OpKind::TfIdfVectorizer, evalTfIdf); }

} // namespace sinter::reference
