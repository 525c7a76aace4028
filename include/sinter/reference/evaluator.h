// The reference evaluator: runs an IR graph on the CPU with plain, obviously-correct loops.
// It is the ground truth for the backends and the engine of constant folding. Clarity beats
// speed: float32 accumulates in double where it matters (sums, dot products, means, variances);
// float16 and bfloat16 compute in float32 and round on store.
#pragma once

#include "sinter/ir/graph.h"
#include "sinter/ir/tensor.h"

#include <functional>
#include <vector>

namespace sinter::reference {

/// True when the evaluator implements this op.
bool canEvaluate(OpKind kind);

/// Evaluates one node. `inputs` has one entry per node input (null for absent optional inputs).
/// Throws UserError for invalid data (an index out of range, a shape that does not broadcast).
std::vector<Tensor> evaluateNode(const Node &node, const std::vector<const Tensor *> &inputs);

/// Called after each node with its outputs (e.g. `sinter verify` compares them as it goes).
using NodeObserver = std::function<void(const Node &, const std::vector<Tensor> &)>;

/// Runs the graph. `inputs` follow graph.inputs(); the result follows graph.outputs(). Input
/// dtypes and shapes are checked against the graph's (symbolic dims bind to the given size).
std::vector<Tensor> evaluate(const Graph &graph, const std::vector<Tensor> &inputs,
                             const NodeObserver &observer = nullptr);

} // namespace sinter::reference
