#include "eliminate_dead_code.h"

#include "rewrite.h"
#include "sinter/ir/graph.h"

namespace sinter {

bool EliminateDeadCode::run(Graph &graph) {
  bool changed = passes::eraseDeadNodes(graph);
  std::vector<Value *> constants = graph.constants();
  for (Value *constant : constants) {
    if (!constant->hasUses() && !graph.isOutput(constant)) {
      graph.eraseConstant(constant);
      changed = true;
    }
  }
  return changed;
}

} // namespace sinter
