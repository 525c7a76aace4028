// Private to the reference evaluator: the shape bookkeeping shared by reductions and the
// normalisations that reduce over some axes.
#pragma once

#include "registry.h"

#include <cstdint>
#include <vector>

namespace sinter::reference {

/// How a reduction over some axes maps input elements to output elements.
struct ReductionPlan {
  std::vector<bool> reduced;       ///< per input dim: is it reduced?
  std::vector<int64_t> outDims;    ///< with reduced dims kept as 1 or dropped (keepDims)
  std::vector<int64_t> outIndexOf; ///< per input element: the linear index of its output element
  int64_t outCount = 1;            ///< number of output elements (groups)
};

/// Plans a reduction of a tensor of `dims` over `axes` (possibly negative; each at most once, else
/// a UserError naming the node). A rank-0 input reduces to itself.
ReductionPlan planReduction(const Node &node, const std::vector<int64_t> &dims,
                            const std::vector<int64_t> &axes, bool keepDims);

/// Softmax, LogSoftmax, Hardmax, CumSum and TopK (reduction_axis.cpp); called from
/// registerReductionRules.
void registerAxisRules(RuleTable &table);

} // namespace sinter::reference
