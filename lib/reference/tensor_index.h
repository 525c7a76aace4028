// Private to the reference evaluator: row-major index arithmetic and numpy broadcasting, written
// plainly. Every rule that walks tensors uses these rather than its own copy.
#pragma once

#include "sinter/ir/graph.h"
#include "sinter/ir/tensor.h"

#include <cstdint>
#include <vector>

namespace sinter::reference {

/// Row-major strides, in elements.
std::vector<int64_t> stridesOf(const std::vector<int64_t> &dims);
int64_t productOf(const std::vector<int64_t> &dims);

/// Numpy-style broadcast of several shapes; UserError (naming the node) when they do not broadcast.
std::vector<int64_t> broadcastDims(const Node &node, const std::vector<std::vector<int64_t>> &shapes);

/// Maps output linear indices to the linear index of an input broadcast to `outDims`: the input's
/// dims align to the right; a size-1 (or missing) dim repeats.
class BroadcastIndexer {
public:
  BroadcastIndexer(const std::vector<int64_t> &inDims, const std::vector<int64_t> &outDims);
  int64_t operator()(int64_t outIndex) const;

private:
  std::vector<int64_t> outStrides_;
  std::vector<int64_t> inStrides_; ///< 0 where the input is broadcast
};

/// Splits a linear index into a multi-index, and back.
std::vector<int64_t> unravel(int64_t index, const std::vector<int64_t> &dims);
int64_t ravel(const std::vector<int64_t> &index, const std::vector<int64_t> &dims);

/// Steps a row-major multi-index to the next one, last dim fastest (an odometer):
///   for (std::vector<int64_t> at(dims.size(), 0); ...; ) { ...; if (!nextIndex(at, dims)) break; }
/// Returns false, leaving the index all zeros, when it wraps past the last index.
bool nextIndex(std::vector<int64_t> &index, const std::vector<int64_t> &dims);

/// Normalises a possibly negative axis against a rank; UserError naming the node if out of range.
int64_t normalizeAxis(const Node &node, int64_t axis, int64_t rank);

/// A row-major tensor seen as [outer, size, inner] around one axis: the element at (o, k, i) is
/// at linear index (o * size + k) * inner + i. For ops that work along one axis (Softmax, CumSum).
struct AxisSplit {
  int64_t outer = 1, size = 1, inner = 1;
  int64_t at(int64_t o, int64_t k, int64_t i) const { return (o * size + k) * inner + i; }
};
/// Splits `dims` around `axis` (already normalised).
AxisSplit splitAtAxis(const std::vector<int64_t> &dims, int64_t axis);

} // namespace sinter::reference
