#include "move_scales_after_matmuls.h"

#include "rewrite.h"

#include <optional>
#include <vector>

namespace sinter {
namespace {

using passes::scalarConstant;
using passes::soleUser;

/// An operand's scaling: the value scaled, the scale, and Mul or Div.
struct Scaling {
  Value *scaled = nullptr, *scale = nullptr;
  OpKind kind = OpKind::Mul;
};

/// `operand` = Mul(x, s), Mul(s, x) or Div(x, s) with s a one-element constant, used by `matmul`
/// alone, and x of the operand's type (the scaling broadcasts nothing onto x).
std::optional<Scaling> scalingOf(const Graph &graph, Value *operand, const Node *matmul, int productRank) {
  Node *node = operand->producer();
  if (!node || (node->kind() != OpKind::Mul && node->kind() != OpKind::Div) || node->numInputs() != 2 ||
      soleUser(graph, operand) != matmul)
    return std::nullopt;
  for (int i = 0; i < 2; ++i) {
    if (node->kind() == OpKind::Div && i == 0)
      continue; // s / x is not a scaling of x
    Value *scale = node->input(i), *scaled = node->input(1 - i);
    if (scalarConstant(scale) && scale->rank() <= productRank &&
        scaled->type() == operand->type())
      return Scaling{scaled, scale, node->kind()};
  }
  return std::nullopt;
}

} // namespace

bool MoveScalesAfterMatMuls::run(Graph &graph) {
  std::vector<Node *> matmuls;
  for (const auto &node : graph.nodes())
    if (node->kind() == OpKind::MatMul && node->numInputs() == 2 && node->output(0))
      matmuls.push_back(node.get());
  bool changed = false;
  for (Node *matmul : matmuls) {
    Value *product = matmul->output(0);
    std::vector<Scaling> scalings;
    Value *operands[2] = {matmul->input(0), matmul->input(1)};
    for (Value *&operand : operands)
      if (std::optional<Scaling> scaling = scalingOf(graph, operand, matmul, product->rank())) {
        scalings.push_back(*scaling);
        operand = scaling->scaled;
      }
    if (scalings.empty())
      continue;
    Node *unscaled = graph.addNode(OpKind::MatMul, {operands[0], operands[1]}, 1, matmul->name(),
                                   {product->name() + ".unscaled"}, matmul);
    unscaled->output(0)->setType(product->type());
    Value *value = unscaled->output(0);
    for (size_t i = 0; i < scalings.size(); ++i) {
      if (i + 1 < scalings.size()) {
        Node *step = graph.addNode(scalings[i].kind, {value, scalings[i].scale}, 1, "", {product->name() + ".scaled"}, matmul);
        step->output(0)->setType(product->type());
        value = step->output(0);
      } else {
        passes::replaceWithNode(graph, product, scalings[i].kind, {value, scalings[i].scale}, matmul);
      }
    }
    changed = true;
  }
  if (changed)
    passes::eraseDeadNodes(graph);
  return changed;
}

} // namespace sinter
