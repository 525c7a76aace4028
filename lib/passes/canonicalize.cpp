#include "canonicalize.h"

#include "rewrite.h"

#include <algorithm>

namespace sinter {
namespace {

using passes::replaceValue;

/// The permutation a Transpose applies (the reversed axes when the attribute is absent).
std::vector<int64_t> permutationOf(const Node &transpose) {
  int64_t rank = transpose.input(0)->rank();
  std::vector<int64_t> reversed(rank);
  for (int64_t axis = 0; axis < rank; ++axis)
    reversed[axis] = rank - 1 - axis;
  std::vector<int64_t> perm = transpose.attrInts("perm", reversed);
  for (int64_t &axis : perm)
    if (axis < 0)
      axis += rank;
  return perm;
}

bool isIdentityPermutation(const std::vector<int64_t> &perm) {
  for (size_t axis = 0; axis < perm.size(); ++axis)
    if (perm[axis] != int64_t(axis))
      return false;
  return true;
}

/// Reshape, Flatten, Squeeze, Unsqueeze: the input's elements, in order, under another shape.
bool reshapesOnly(OpKind kind) {
  return kind == OpKind::Reshape || kind == OpKind::Flatten || kind == OpKind::Squeeze ||
         kind == OpKind::Unsqueeze;
}

/// The node's (first) output is its first input, unchanged.
bool passesInputThrough(const Node &node) {
  const Value *input = node.input(0);
  if (!input || node.numOutputs() < 1 || node.output(0)->type() != input->type())
    return false;
  switch (node.kind()) {
  case OpKind::Identity:
    return true;
  case OpKind::Dropout: {
    // Inference (training_mode absent or constant false): the output is the input. A used mask
    // output keeps the node alive for the mask alone.
    const Value *training = node.input(2);
    return !training || (training->isConstant() && training->constant().elementCount() == 1 &&
                         training->constant().getDouble(0) == 0);
  }
  case OpKind::Cast:
  case OpKind::Reshape:
  case OpKind::Flatten:
  case OpKind::Squeeze:
  case OpKind::Unsqueeze:
  case OpKind::Expand:
    return true;
  case OpKind::Concat:
  case OpKind::Sum:
  case OpKind::Max:
  case OpKind::Min:
  case OpKind::Mean:
    return node.numInputs() == 1;
  case OpKind::Transpose:
    return isIdentityPermutation(permutationOf(node));
  default:
    return false;
  }
}

/// Transpose(Transpose(x, p1), p2) -> Transpose(x, p1 o p2).
bool composeTransposes(Graph &graph, Node &outer) {
  Node *inner = outer.input(0)->producer();
  if (!inner || inner->kind() != OpKind::Transpose)
    return false;
  std::vector<int64_t> first = permutationOf(*inner), second = permutationOf(outer);
  std::vector<int64_t> composed(second.size());
  for (size_t axis = 0; axis < second.size(); ++axis)
    composed[axis] = first[second[axis]];
  Value *source = inner->input(0);
  if (isIdentityPermutation(composed))
    return replaceValue(graph, outer.output(0), source);
  outer.setInput(0, source);
  outer.setAttr("perm", composed);
  return true;
}

/// view(view(x)) -> Reshape(x, static dims of the outer view).
bool collapseViews(Graph &graph, Node &outer) {
  Node *inner = outer.input(0)->producer();
  if (!inner || !reshapesOnly(inner->kind()) || !isStatic(outer.output(0)->shape()) ||
      !isStatic(inner->input(0)->shape()))
    return false;
  std::vector<int64_t> dims = staticDims(outer.output(0)->shape());
  Value *shape = graph.addConstant(graph.uniqueName(outer.output(0)->name() + ".shape"),
                                   Tensor::fromInts(dims));
  Node *reshape = passes::replaceWithNode(graph, outer.output(0), OpKind::Reshape,
                                          {inner->input(0), shape}, &outer);
  if (std::find(dims.begin(), dims.end(), 0) != dims.end())
    reshape->setAttr("allowzero", int64_t(1));
  return true;
}

/// A copy of `tensor` with every element multiplied by `factor` (in double, then rounded).
Tensor scaled(const Tensor &tensor, double factor) {
  Tensor result(tensor.dtype(), tensor.dims());
  for (int64_t i = 0; i < tensor.elementCount(); ++i)
    result.setDouble(i, tensor.getDouble(i) * factor);
  return result;
}

/// CastLike(a, b) -> Cast(a) {to = dtype(b)}: the result depends on b's dtype only, and the
/// Cast's input may then be a constant that folding evaluates. (The same dtype is removed by
/// passesInputThrough's Cast rule on the next round.)
bool castLikeToCast(Graph &graph, Node &castLike) {
  Node *cast = passes::replaceWithNode(graph, castLike.output(0), OpKind::Cast, {castLike.input(0)},
                                       &castLike);
  cast->setAttr("to", int64_t(dtypeToOnnx(castLike.input(1)->dtype())));
  for (const char *attribute : {"saturate", "round_mode"})
    if (castLike.hasAttr(attribute))
      cast->setAttr(attribute, castLike.attributes().at(attribute));
  return true;
}

/// Sum of two inputs -> Add: one binary op for the recognisers and fusion to match.
bool sumToAdd(Graph &graph, Node &sum) {
  passes::replaceWithNode(graph, sum.output(0), OpKind::Add, {sum.input(0), sum.input(1)}, &sum);
  return true;
}

/// Gemm's alpha into a constant B and beta into a constant C.
bool foldGemmScales(Graph &graph, Node &gemm) {
  bool changed = false;
  float alpha = gemm.attrFloat("alpha", 1.0f), beta = gemm.attrFloat("beta", 1.0f);
  Value *b = gemm.input(1), *c = gemm.input(2);
  if (alpha != 1.0f && b->isConstant() && isFloat(b->dtype())) {
    gemm.setInput(
        1, graph.addConstant(graph.uniqueName(b->name() + ".alpha"), scaled(b->constant(), alpha)));
    gemm.removeAttr("alpha");
    changed = true;
  }
  if (beta != 1.0f && c && c->isConstant() && isFloat(c->dtype())) {
    gemm.setInput(
        2, graph.addConstant(graph.uniqueName(c->name() + ".beta"), scaled(c->constant(), beta)));
    gemm.removeAttr("beta");
    changed = true;
  }
  return changed;
}

bool rewrite(Graph &graph, Node &node) {
  if (node.numOutputs() == 0 || !node.output(0) ||
      !(node.output(0)->hasUses() || graph.isOutput(node.output(0))))
    return false; // dead (perhaps replaced earlier in this sweep)
  if (passesInputThrough(node))
    return replaceValue(graph, node.output(0), node.input(0));
  switch (node.kind()) {
  case OpKind::Transpose:
    return composeTransposes(graph, node);
  case OpKind::Reshape:
  case OpKind::Flatten:
  case OpKind::Squeeze:
  case OpKind::Unsqueeze:
    return collapseViews(graph, node);
  case OpKind::Gemm:
    return foldGemmScales(graph, node);
  case OpKind::CastLike:
    return castLikeToCast(graph, node);
  case OpKind::Sum:
    return node.numInputs() == 2 && sumToAdd(graph, node);
  default:
    return false;
  }
}

} // namespace

bool Canonicalize::run(Graph &graph) {
  bool changed = false;
  // Rewrites add nodes before the one they replace, so walk a snapshot.
  std::vector<Node *> nodes;
  for (const auto &node : graph.nodes())
    nodes.push_back(node.get());
  for (Node *node : nodes)
    changed |= rewrite(graph, *node);
  return passes::eraseDeadNodes(graph) || changed;
}

} // namespace sinter
