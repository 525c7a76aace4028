// Shape and type inference. Each op's rule is a hook registered beside it (lib/ir/infer_*.cpp)
// and looked up by kind. Rules see input types and, for constant inputs, their data (so Reshape's
// shape, Slice's starts and the like resolve); they propagate symbolic dims where the result is
// the same symbol, and give unknown dims ("?") where the result is data-dependent.
#pragma once

#include "sinter/ir/shape.h"

#include <vector>

namespace sinter {

class Graph;
class Node;

/// Computes the output types of one node from its inputs. Throws UserError, naming the node, when
/// the inputs are not valid for the op (rank, dtype, shape mismatch).
std::vector<TensorType> inferOutputTypes(const Node &node);
/// Sets each output type of `node` to the inferred one.
void inferNode(Node &node);
/// Infers every node in order.
void inferGraph(Graph &graph);

} // namespace sinter
