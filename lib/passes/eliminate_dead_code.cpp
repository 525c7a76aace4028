#include "eliminate_dead_code.h"

#include "sinter/ir/graph.h"

namespace sinter {

bool EliminateDeadCode::run(Graph &graph) {
  bool changed = false;
  // Walk backwards so a chain of dead nodes goes in one sweep.
  for (int i = graph.numNodes() - 1; i >= 0; --i) {
    Node *node = graph.nodes()[i].get();
    bool live = false;
    for (Value *output : node->outputs())
      live = live || output->hasUses() || graph.isOutput(output);
    if (!live) {
      graph.eraseNode(node);
      changed = true;
    }
  }
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
