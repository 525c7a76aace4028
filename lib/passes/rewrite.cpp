#include "rewrite.h"

#include "sinter/support/error.h"

#include <algorithm>
#include <cmath>

namespace sinter::passes {

Node *soleUser(const Graph &graph, const Value *value) {
  if (!value || graph.isOutput(value) || value->uses().size() != 1)
    return nullptr;
  return value->uses()[0].user;
}

std::optional<double> scalarConstant(const Value *value) {
  if (!value || !value->isConstant() || value->constant().elementCount() != 1)
    return std::nullopt;
  return value->constant().getDouble(0);
}

bool nearlyEqual(double value, double expected) {
  return std::fabs(value - expected) <= std::ldexp(std::fabs(expected), -21);
}

bool isScalarNear(const Value *value, double expected) {
  std::optional<double> scalar = scalarConstant(value);
  return scalar && isFloat(value->dtype()) && nearlyEqual(*scalar, expected);
}

Value *otherInput(const Node &node, const Value *known) {
  if (node.numInputs() != 2)
    return nullptr;
  if (node.input(0) == known)
    return node.input(1);
  if (node.input(1) == known)
    return node.input(0);
  return nullptr;
}

bool replaceValue(Graph &graph, Value *from, Value *to) {
  SINTER_ASSERT(from->type() == to->type(), "replacing '", from->name(), "' of type ",
                from->type().str(), " by '", to->name(), "' of type ", to->type().str());
  if (!graph.isOutput(from)) {
    graph.replaceAllUsesWith(from, to);
    return true;
  }
  if (!to->producer() || graph.isOutput(to))
    return false;
  std::string name = from->name();
  graph.renameValue(from, name + ".replaced");
  graph.replaceAllUsesWith(from, to);
  graph.renameValue(to, name);
  return true;
}

Node *replaceWithNode(Graph &graph, Value *replaced, OpKind kind,
                      const std::vector<Value *> &inputs, Node *before) {
  std::string name = replaced->name();
  graph.renameValue(replaced, name + ".replaced");
  std::string nodeName = replaced->producer() ? replaced->producer()->name() : "";
  Node *node = graph.addNode(kind, inputs, 1, nodeName, {name}, before);
  node->output(0)->setType(replaced->type());
  graph.replaceAllUsesWith(replaced, node->output(0));
  return node;
}

int Product::count(const Value *value) const {
  return int(std::count(factors.begin(), factors.end(), value));
}

static void expandProduct(const Graph &graph, Value *value, bool root, Product &product) {
  if (std::optional<double> scalar = scalarConstant(value)) {
    product.constant *= *scalar;
    return;
  }
  Node *node = value->producer();
  bool expandable = node && (root || soleUser(graph, value));
  if (expandable && node->kind() == OpKind::Mul) {
    product.nodes.push_back(node);
    expandProduct(graph, node->input(0), false, product);
    expandProduct(graph, node->input(1), false, product);
    return;
  }
  if (expandable && node->kind() == OpKind::Div) {
    if (std::optional<double> divisor = scalarConstant(node->input(1))) {
      product.nodes.push_back(node);
      product.constant /= *divisor;
      expandProduct(graph, node->input(0), false, product);
      return;
    }
  }
  if (expandable && node->kind() == OpKind::Pow) {
    std::optional<double> exponent = scalarConstant(node->input(1));
    if (exponent && (*exponent == 2 || *exponent == 3) && !scalarConstant(node->input(0))) {
      product.nodes.push_back(node);
      for (int i = 0; i < int(*exponent); ++i)
        product.factors.push_back(node->input(0));
      return;
    }
  }
  product.factors.push_back(value);
}

Product flattenProduct(const Graph &graph, Value *root) {
  Product product;
  expandProduct(graph, root, true, product);
  return product;
}

bool eraseDeadNodes(Graph &graph) {
  bool changed = false;
  // Backwards, so a dead chain goes in one sweep.
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
  return changed;
}

} // namespace sinter::passes
