#include "fold_constants.h"

#include "sinter/ir/graph.h"
#include "sinter/ir/op_attributes.h"
#include "sinter/reference/evaluator.h"

#include <algorithm>
#include <optional>

namespace sinter {

/// Shape and Size depend only on a static input's type, not its data.
static std::optional<Tensor> foldFromType(const Node &node) {
  if (node.kind() != OpKind::Shape && node.kind() != OpKind::Size)
    return std::nullopt;
  const Value *input = node.input(0);
  if (!input || !isStatic(input->shape()))
    return std::nullopt;
  std::vector<int64_t> dims = staticDims(input->shape());
  if (node.kind() == OpKind::Size)
    return Tensor::scalar(DType::Int64, double(*elementCount(input->shape())));
  DimRange range = shapeRange(node, int64_t(dims.size()));
  std::vector<int64_t> slice;
  for (int64_t i = range.start; i < range.end; ++i)
    slice.push_back(dims[i]);
  return Tensor::fromInts(slice);
}

static void replaceByConstants(Graph &graph, Node *node, std::vector<Tensor> outputs) {
  for (int i = 0; i < node->numOutputs(); ++i) {
    Value *output = node->output(i);
    std::string name = output->name();
    graph.renameValue(output, name + ".folded");
    Value *folded = graph.addConstant(name, std::move(outputs[i]));
    graph.replaceAllUsesWith(output, folded);
  }
  graph.eraseNode(node);
}

bool FoldConstants::run(Graph &graph) {
  bool changed = false;
  std::vector<Node *> shapeNodes;
  for (const auto &node : graph.nodes())
    if (foldFromType(*node))
      shapeNodes.push_back(node.get());
  for (Node *node : shapeNodes) {
    std::vector<Tensor> outputs;
    outputs.push_back(*foldFromType(*node));
    replaceByConstants(graph, node, std::move(outputs));
    changed = true;
  }
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
    replaceByConstants(graph, node, reference::evaluateNode(*node, inputs));
    changed = true;
  }
  return changed;
}

} // namespace sinter
