#include "fold_constants.h"

#include "sinter/ir/graph.h"
#include "sinter/reference/evaluator.h"

namespace sinter {

bool FoldConstants::run(Graph &graph) {
  bool changed = false;
  // Collect first: folding erases nodes.
  std::vector<Node *> foldable;
  for (const auto &node : graph.nodes()) {
    bool allConstant = true;
    for (Value *input : node->inputs())
      allConstant = allConstant && (!input || input->isConstant());
    if (allConstant && reference::canEvaluate(node->kind()))
      foldable.push_back(node.get());
  }
  for (Node *node : foldable) {
    std::vector<const Tensor *> inputs;
    for (Value *input : node->inputs())
      inputs.push_back(input ? &input->constant() : nullptr);
    std::vector<Tensor> outputs = reference::evaluateNode(*node, inputs);
    for (int i = 0; i < node->numOutputs(); ++i) {
      Value *output = node->output(i);
      std::string name = output->name();
      graph.renameValue(output, name + ".folded");
      Value *folded = graph.addConstant(name, std::move(outputs[i]));
      graph.replaceAllUsesWith(output, folded);
    }
    graph.eraseNode(node);
    changed = true;
  }
  return changed;
}

} // namespace sinter
