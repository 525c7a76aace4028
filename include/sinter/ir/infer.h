// Shape and type inference. Each op's rule is a hook registered beside it (lib/ir/infer_*.cpp)
// and looked up by kind. Rules see input types and, for constant inputs, their data (so Reshape's
// shape, Slice's starts and the like resolve); they propagate symbolic dims where the result is
// the same symbol, and give unknown dims ("?") where the result is data-dependent.
//
// Small integer inputs computed from shapes (Concat(Gather(Shape(x), 0), [-1]), Range(0, seq, 1),
// ...) are traced back through their producers (lib/ir/infer_values.cpp), so a node's inferred
// type can depend on the nodes upstream of it, not only on its inputs' types. Inference reads
// only the graph: it is deterministic, and re-running it on an inferred graph changes nothing.
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
/// The inputs of `node` whose data its rule needed to know an output shape but could not (they
/// are not constants, nor traceable shape arithmetic), in input order. Where an output's shape is
/// unknown, these are what it depends on; binding them to values makes it static.
std::vector<int> unresolvedValueInputs(const Node &node);

} // namespace sinter
