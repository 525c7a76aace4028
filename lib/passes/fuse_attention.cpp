#include "fuse_attention.h"

#include "rewrite.h"

#include <optional>
#include <vector>

namespace sinter {
namespace {

using passes::scalarConstant;
using passes::soleUser;

/// The pattern fuse_attention.h describes, matched back from the product with the values: the
/// operands of Q.K^T and P.V, the mask (null if none) and the product of the scalings.
struct Match {
  Value *query = nullptr, *keysTransposed = nullptr, *values = nullptr, *mask = nullptr;
  double scale = 1.0;
};

bool isFloat32Or16(DType type) {
  return type == DType::Float32 || type == DType::Float16 || type == DType::BFloat16;
}

/// P when `value` is Where(IsNaN(P), 0, P) and P is read by those two nodes alone.
Value *nanGuarded(const Graph &graph, Value *value) {
  Node *where = value->producer();
  if (!where || where->kind() != OpKind::Where || where->numInputs() != 3)
    return nullptr;
  Value *condition = where->input(0), *zero = where->input(1), *guarded = where->input(2);
  Node *isNaN = condition->producer();
  std::optional<double> constant = scalarConstant(zero);
  if (!isNaN || isNaN->kind() != OpKind::IsNaN || isNaN->input(0) != guarded || !constant || *constant != 0.0 ||
      soleUser(graph, condition) != where || guarded->type() != value->type() || graph.isOutput(guarded) ||
      guarded->uses().size() != 2)
    return nullptr;
  return guarded;
}

std::optional<Match> matchAttention(const Graph &graph, Node *product) {
  if (product->kind() != OpKind::MatMul || product->numInputs() != 2)
    return std::nullopt;
  Match match;
  match.values = product->input(1);
  Value *probabilities = product->input(0);
  if (soleUser(graph, probabilities) != product)
    return std::nullopt;
  // torch's export guards the softmax of a masked row: Where(IsNaN(P), 0, P). A row of -inf
  // logits has output 0 in the fused op, which is what the guard gives, so it goes too.
  if (Value *guarded = nanGuarded(graph, probabilities))
    probabilities = guarded;
  Node *softmax = probabilities->producer();
  if (!softmax || softmax->kind() != OpKind::Softmax)
    return std::nullopt;
  const int rank = probabilities->rank();
  const int64_t axis = softmax->attrInt("axis", -1);
  if (rank < 3 || rank > 4 || (axis != -1 && axis != rank - 1))
    return std::nullopt;
  // Back from the softmax's input: an optional mask, then scalings, then Q.K^T.
  Value *value = softmax->input(0);
  if (soleUser(graph, value) != softmax)
    return std::nullopt;
  Node *node = value->producer();
  if (node && node->kind() == OpKind::Add && node->numInputs() == 2) {
    for (int i = 0; i < 2; ++i) {
      Value *scores = node->input(i), *mask = node->input(1 - i);
      Node *producer = scores->producer();
      bool scaledOrProduct = producer && (producer->kind() == OpKind::MatMul || producer->kind() == OpKind::Mul ||
                                          producer->kind() == OpKind::Div);
      if (scaledOrProduct && scores->type() == value->type() && mask->rank() <= rank && isFloat(mask->dtype()) &&
          soleUser(graph, scores) == node) {
        match.mask = mask;
        value = scores;
        break;
      }
    }
    if (!match.mask)
      return std::nullopt;
    node = value->producer();
  }
  while (node && (node->kind() == OpKind::Mul || node->kind() == OpKind::Div) && node->numInputs() == 2) {
    int scaled = -1;
    for (int i = 0; i < 2 && scaled < 0; ++i)
      if (!(node->kind() == OpKind::Div && i == 1) && scalarConstant(node->input(1 - i)) &&
          node->input(i)->type() == value->type())
        scaled = i;
    if (scaled < 0)
      return std::nullopt;
    double factor = *scalarConstant(node->input(1 - scaled));
    match.scale = node->kind() == OpKind::Mul ? match.scale * factor : match.scale / factor;
    value = node->input(scaled);
    if (soleUser(graph, value) != node)
      return std::nullopt;
    node = value->producer();
  }
  if (!node || node->kind() != OpKind::MatMul || node->numInputs() != 2 || !(match.scale > 0.0))
    return std::nullopt;
  match.query = node->input(0);
  match.keysTransposed = node->input(1);
  // One batch shape for all three, and shapes the op takes: Q [..., Lq, D], K^T [..., D, Lk],
  // V [..., Lk, Dv], all static.
  const Value *operands[] = {match.query, match.keysTransposed, match.values, probabilities};
  for (const Value *operand : operands)
    if (operand->rank() != rank || !isStatic(operand->shape()) || !isFloat32Or16(operand->dtype()) ||
        operand->dtype() != probabilities->dtype())
      return std::nullopt;
  std::vector<int64_t> q = staticDims(match.query->shape()), kt = staticDims(match.keysTransposed->shape()),
                       v = staticDims(match.values->shape());
  for (int d = 0; d < rank - 2; ++d)
    if (q[d] != kt[d] || q[d] != v[d])
      return std::nullopt;
  if (q[rank - 1] != kt[rank - 2] || kt[rank - 1] != v[rank - 2])
    return std::nullopt;
  if (match.mask && (!isStatic(match.mask->shape()) || match.mask->dtype() != probabilities->dtype()))
    return std::nullopt;
  return match;
}

/// `value` reshaped to `dims` (a view), inserted before `before`.
Value *reshaped(Graph &graph, Value *value, std::vector<int64_t> dims, Node *before) {
  Value *shape = graph.addConstant(graph.uniqueName(value->name() + ".shape4"), Tensor::fromInts(dims));
  Node *node = graph.addNode(OpKind::Reshape, {value, shape}, 1, "", {graph.uniqueName(value->name() + ".4d")}, before);
  node->output(0)->setType({value->dtype(), shapeOf(dims)});
  return node->output(0);
}

} // namespace

bool FuseAttention::run(Graph &graph) {
  if (!enabled_)
    return false;
  std::vector<Node *> products;
  for (const auto &node : graph.nodes())
    if (node->kind() == OpKind::MatMul)
      products.push_back(node.get());
  bool changed = false;
  for (Node *product : products) {
    std::optional<Match> match = matchAttention(graph, product);
    if (!match)
      continue;
    Value *result = product->output(0);
    const int rank = result->rank();
    std::vector<int64_t> q = staticDims(match->query->shape()), kt = staticDims(match->keysTransposed->shape()),
                         v = staticDims(match->values->shape()), out = staticDims(result->shape());
    Value *query = match->query, *keysTransposed = match->keysTransposed, *values = match->values, *mask = match->mask;
    if (rank == 3) {
      // [N, L, D] as [N, 1, L, D].
      query = reshaped(graph, query, {q[0], 1, q[1], q[2]}, product);
      keysTransposed = reshaped(graph, keysTransposed, {kt[0], 1, kt[1], kt[2]}, product);
      values = reshaped(graph, values, {v[0], 1, v[1], v[2]}, product);
      if (mask && mask->rank() == 3) {
        std::vector<int64_t> m = staticDims(mask->shape());
        mask = reshaped(graph, mask, {m[0], 1, m[1], m[2]}, product);
      }
    }
    Node *transpose = graph.addNode(OpKind::Transpose, {keysTransposed}, 1, "",
                                    {graph.uniqueName(match->keysTransposed->name() + ".keys")}, product);
    transpose->setAttr("perm", std::vector<int64_t>{0, 1, 3, 2});
    std::vector<int64_t> keyDims = staticDims(keysTransposed->shape());
    std::swap(keyDims[2], keyDims[3]);
    transpose->output(0)->setType({keysTransposed->dtype(), shapeOf(keyDims)});
    std::vector<Value *> inputs = {query, transpose->output(0), values};
    if (mask)
      inputs.push_back(mask);
    std::vector<int64_t> fusedDims = rank == 3 ? std::vector<int64_t>{out[0], 1, out[1], out[2]} : out;
    Node *attention = graph.addNode(OpKind::Attention, inputs, 1, product->name(),
                                    {graph.uniqueName(result->name() + ".attention")}, product);
    attention->setAttr("scale", float(match->scale));
    attention->output(0)->setType({result->dtype(), shapeOf(fusedDims)});
    Value *fused = attention->output(0);
    if (rank == 3) {
      Value *shape = graph.addConstant(graph.uniqueName(result->name() + ".shape3"), Tensor::fromInts(out));
      passes::replaceWithNode(graph, result, OpKind::Reshape, {fused, shape}, product);
    } else if (!passes::replaceValue(graph, result, fused)) {
      passes::replaceWithNode(graph, result, OpKind::Identity, {fused}, product);
    }
    changed = true;
  }
  if (changed)
    passes::eraseDeadNodes(graph);
  return changed;
}

} // namespace sinter
