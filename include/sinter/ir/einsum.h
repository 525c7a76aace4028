// Einsum's equation, read once for shape inference's users, the reference and lowering: which
// label each input dim and output dim carries, and every label's extent.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

namespace sinter {

class Node;

/// Labels: a letter is its character code; dim j of the broadcast ellipsis is kEllipsisLabel + j.
inline constexpr int kEllipsisLabel = 256;

struct EinsumPlan {
  std::vector<std::vector<int>> inputLabels; ///< one label per input dim
  std::vector<int> outputLabels;
  std::map<int, int64_t> sizes; ///< every label's extent (1 broadcasts)
};

/// The node's `equation` over inputs of these dims (explicit "->" output or the implicit one: the
/// ellipsis dims, then the letters used once, in character order). UserError naming the node for
/// a malformed equation, a term that does not match its input's rank, or extents that disagree.
EinsumPlan planEinsum(const Node &node, const std::vector<std::vector<int64_t>> &inputDims);

} // namespace sinter
