// Checks the IR's invariants: SSA (each value defined once, before its uses), topological
// order, use lists in step, arity and attribute kinds against ops.def, required attributes,
// graph outputs defined, and (with checkTypes) that re-running shape inference gives the
// recorded types.
#pragma once

#include <string_view>

namespace sinter {

class Graph;

struct VerifyOptions {
  bool checkTypes = true;
};

/// Throws InternalError naming the broken invariant, the node, and `afterPass` when given.
void verifyGraph(const Graph &graph, std::string_view afterPass = "", const VerifyOptions &options = {});

} // namespace sinter
