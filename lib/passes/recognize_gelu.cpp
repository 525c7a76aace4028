#include "recognize_gelu.h"

#include "rewrite.h"

#include <cmath>
#include <numbers>

namespace sinter {
namespace {

using passes::flattenProduct;
using passes::nearlyEqual;
using passes::Product;
using passes::soleUser;

/// `sum` = Add(inner, 1) with `op`(inner-argument) as the inner value; returns op's input.
Value *onePlus(const Graph &graph, Value *sum, OpKind op, const Node *user) {
  Node *add = sum->producer();
  if (!add || add->kind() != OpKind::Add || soleUser(graph, sum) != user)
    return nullptr;
  for (int i = 0; i < 2; ++i) {
    Value *inner = add->input(i);
    if (!passes::isScalarNear(add->input(1 - i), 1.0))
      continue;
    Node *function = inner->producer();
    if (function && function->kind() == op && soleUser(graph, inner) == add)
      return function->input(0);
  }
  return nullptr;
}

/// The node (in `product.nodes`) that reads `value`, if any.
const Node *userIn(const Product &product, const Value *value) {
  for (const Use &use : value->uses())
    for (const Node *node : product.nodes)
      if (use.user == node)
        return node;
  return nullptr;
}

/// erf(x / sqrt 2): the argument's product is x alone times 1/sqrt(2).
bool isErfArgument(const Graph &graph, Value *argument, const Value *x) {
  if (!soleUser(graph, argument))
    return false;
  Product product = flattenProduct(graph, argument);
  return product.factors.size() == 1 && product.factors[0] == x &&
         nearlyEqual(product.constant, 1.0 / std::numbers::sqrt2);
}

/// tanh(sqrt(2/pi) * (x + 0.044715 * x^3)).
bool isTanhArgument(const Graph &graph, Value *argument, const Value *x) {
  if (!soleUser(graph, argument))
    return false;
  Product outer = flattenProduct(graph, argument);
  if (outer.factors.size() != 1 || !nearlyEqual(outer.constant, std::sqrt(2.0 / std::numbers::pi)))
    return false;
  Value *sum = outer.factors[0];
  Node *add = sum->producer();
  if (!add || add->kind() != OpKind::Add || !userIn(outer, sum) || !soleUser(graph, sum))
    return false;
  Value *cubic = passes::otherInput(*add, x);
  if (!cubic || cubic == x || !soleUser(graph, cubic))
    return false;
  Product cube = flattenProduct(graph, cubic);
  return cube.factors.size() == 3 && cube.count(x) == 3 && nearlyEqual(cube.constant, 0.044715);
}

bool recognise(Graph &graph, Node &root) {
  Value *y = root.output(0);
  Product product = flattenProduct(graph, y);
  if (product.factors.size() != 2 || !nearlyEqual(product.constant, 0.5))
    return false;
  for (int which = 0; which < 2; ++which) {
    Value *x = product.factors[which], *sum = product.factors[1 - which];
    if (x->dtype() != DType::Float32 || x->type() != y->type() || !userIn(product, sum))
      continue;
    const Node *user = userIn(product, sum);
    if (Value *argument = onePlus(graph, sum, OpKind::Erf, user);
        argument && isErfArgument(graph, argument, x)) {
      Node *gelu = passes::replaceWithNode(graph, y, OpKind::Gelu, {x}, &root);
      gelu->setAttr("approximate", std::string("none"));
      return true;
    }
    if (Value *argument = onePlus(graph, sum, OpKind::Tanh, user);
        argument && isTanhArgument(graph, argument, x)) {
      Node *gelu = passes::replaceWithNode(graph, y, OpKind::Gelu, {x}, &root);
      gelu->setAttr("approximate", std::string("tanh"));
      return true;
    }
  }
  return false;
}

} // namespace

bool RecognizeGelu::run(Graph &graph) {
  bool changed = false;
  std::vector<Node *> nodes;
  for (const auto &node : graph.nodes())
    nodes.push_back(node.get());
  for (Node *node : nodes) {
    if (node->kind() != OpKind::Mul && node->kind() != OpKind::Div)
      continue;
    // Every live product is tried: the first whose value is a whole GELU is replaced (an inner
    // product such as x * 0.5 lacks the other factor and does not match).
    Value *output = node->output(0);
    if (output->hasUses() || graph.isOutput(output))
      changed |= recognise(graph, *node);
  }
  return passes::eraseDeadNodes(graph) || changed;
}

} // namespace sinter
