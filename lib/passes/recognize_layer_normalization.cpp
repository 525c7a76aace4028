#include "recognize_layer_normalization.h"

#include "rewrite.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace sinter {
namespace {

using passes::soleUser;

/// The first normalised axis of a keepdims ReduceMean over trailing axes of `data`.
std::optional<int> trailingMeanAxis(const Node &mean, const Value *data) {
  if (mean.kind() != OpKind::ReduceMean || mean.input(0) != data ||
      mean.attrInt("keepdims", 1) != 1)
    return std::nullopt;
  int rank = data->rank();
  const Value *axesValue = mean.input(1);
  if (!axesValue)
    return mean.attrInt("noop_with_empty_axes", 0) == 0 && rank > 0 ? std::optional<int>(0)
                                                                    : std::nullopt;
  if (!axesValue->isConstant())
    return std::nullopt;
  std::vector<int64_t> axes = axesValue->constant().toInts();
  if (axes.empty())
    return std::nullopt;
  for (int64_t &axis : axes) {
    if (axis < -rank || axis >= rank)
      return std::nullopt;
    if (axis < 0)
      axis += rank;
  }
  std::sort(axes.begin(), axes.end());
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] != rank - int64_t(axes.size()) + int64_t(i))
      return std::nullopt;
  return int(rank - int64_t(axes.size()));
}

/// The producer of `value` if it is of `kind`.
Node *producedBy(const Value *value, OpKind kind) {
  Node *node = value ? value->producer() : nullptr;
  return node && node->kind() == kind ? node : nullptr;
}

/// A constant that broadcasts within the normalised dims only, materialised to exactly those
/// dims; nullopt when it would broadcast into the leading dims.
std::optional<Tensor> materialise(const Value *value, const std::vector<int64_t> &normalised,
                                  int rank) {
  if (!value->isConstant() || value->dtype() != DType::Float32 || value->rank() > rank)
    return std::nullopt;
  const Tensor &tensor = value->constant();
  int leading = rank - int(normalised.size());
  int offset = rank - tensor.rank();
  for (int d = 0; d < tensor.rank(); ++d) {
    int axis = offset + d;
    int64_t dim = tensor.dims()[d];
    if (axis < leading ? dim != 1 : (dim != 1 && dim != normalised[axis - leading]))
      return std::nullopt;
  }
  Tensor result(DType::Float32, normalised);
  std::vector<int64_t> index(normalised.size());
  for (int64_t flat = 0; flat < result.elementCount(); ++flat) {
    int64_t rest = flat;
    for (int d = int(normalised.size()) - 1; d >= 0; --d) {
      index[d] = rest % normalised[d];
      rest /= normalised[d];
    }
    int64_t source = 0;
    for (int d = 0; d < tensor.rank(); ++d) {
      int axis = offset + d;
      int64_t at = axis < leading || tensor.dims()[d] == 1 ? 0 : index[axis - leading];
      source = source * tensor.dims()[d] + at;
    }
    result.setDouble(flat, tensor.getDouble(source));
  }
  return result;
}

/// Whether every use of `value` is by one of `users`, and it is not a graph output.
bool onlyUsedBy(const Graph &graph, const Value *value, std::initializer_list<const Node *> users) {
  if (graph.isOutput(value))
    return false;
  for (const Use &use : value->uses())
    if (std::find(users.begin(), users.end(), use.user) == users.end())
      return false;
  return true;
}

bool recognise(Graph &graph, Node &sub) {
  Value *x = sub.input(0), *deviation = sub.output(0);
  Node *mean = producedBy(sub.input(1), OpKind::ReduceMean);
  if (!mean || x->dtype() != DType::Float32 || !isStatic(x->shape()) ||
      deviation->type() != x->type() || !soleUser(graph, mean->output(0)))
    return false;
  std::optional<int> axis = trailingMeanAxis(*mean, x);
  if (!axis)
    return false;
  // The square: Pow(d, 2) or Mul(d, d), feeding the second mean.
  Node *square = nullptr, *divide = nullptr;
  for (const Use &use : deviation->uses()) {
    Node *user = use.user;
    if ((user->kind() == OpKind::Pow && use.index == 0 &&
         passes::scalarConstant(user->input(1)) == 2.0) ||
        (user->kind() == OpKind::Mul && user->input(0) == deviation && user->input(1) == deviation))
      square = user;
    else if ((user->kind() == OpKind::Div && use.index == 0) || user->kind() == OpKind::Mul)
      divide = user;
  }
  if (!square || !divide || !onlyUsedBy(graph, deviation, {square, divide}))
    return false;
  Node *variance = soleUser(graph, square->output(0));
  if (!variance || trailingMeanAxis(*variance, square->output(0)) != axis)
    return false;
  Node *addEpsilon = soleUser(graph, variance->output(0));
  if (!addEpsilon || addEpsilon->kind() != OpKind::Add)
    return false;
  std::optional<double> epsilon =
      passes::scalarConstant(passes::otherInput(*addEpsilon, variance->output(0)));
  if (!epsilon || !(*epsilon >= 0) || !std::isfinite(*epsilon) ||
      addEpsilon->output(0)->type() != variance->output(0)->type())
    return false;
  Node *root = soleUser(graph, addEpsilon->output(0));
  if (!root || root->kind() != OpKind::Sqrt)
    return false;
  // d / s, or d * (1 / s).
  Value *deviationOver = root->output(0);
  if (divide->kind() == OpKind::Mul) {
    Node *reciprocal = soleUser(graph, root->output(0));
    if (!reciprocal || reciprocal->kind() != OpKind::Reciprocal)
      return false;
    deviationOver = reciprocal->output(0);
  }
  Value *divisor =
      divide->kind() == OpKind::Div ? divide->input(1) : passes::otherInput(*divide, deviation);
  if (divisor != deviationOver || !soleUser(graph, deviationOver) ||
      divide->output(0)->type() != x->type())
    return false;

  std::vector<int64_t> dims = staticDims(x->shape());
  std::vector<int64_t> normalised(dims.begin() + *axis, dims.end());
  int rank = x->rank();
  Value *result = divide->output(0);
  std::optional<Tensor> gamma, beta;
  if (Node *scale = soleUser(graph, result);
      scale && scale->kind() == OpKind::Mul && scale->output(0)->type() == x->type()) {
    if (Value *operand = passes::otherInput(*scale, result); operand && operand != result)
      if ((gamma = materialise(operand, normalised, rank)))
        result = scale->output(0);
  }
  if (gamma) {
    if (Node *shift = soleUser(graph, result);
        shift && shift->kind() == OpKind::Add && shift->output(0)->type() == x->type()) {
      if (Value *operand = passes::otherInput(*shift, result); operand && operand != result)
        if ((beta = materialise(operand, normalised, rank)))
          result = shift->output(0);
    }
  }
  if (!gamma) {
    gamma = Tensor(DType::Float32, normalised);
    for (int64_t i = 0; i < gamma->elementCount(); ++i)
      gamma->setDouble(i, 1.0);
  }
  std::string stem = result->name();
  std::vector<Value *> inputs = {
      x, graph.addConstant(graph.uniqueName(stem + ".scale"), std::move(*gamma))};
  if (beta)
    inputs.push_back(graph.addConstant(graph.uniqueName(stem + ".bias"), std::move(*beta)));
  Node *layerNorm = passes::replaceWithNode(graph, result, OpKind::LayerNormalization, inputs,
                                            result->producer());
  layerNorm->setAttr("axis", int64_t(*axis));
  layerNorm->setAttr("epsilon", float(*epsilon));
  return true;
}

} // namespace

bool RecognizeLayerNormalization::run(Graph &graph) {
  bool changed = false;
  std::vector<Node *> nodes;
  for (const auto &node : graph.nodes())
    nodes.push_back(node.get());
  for (Node *node : nodes)
    if (node->kind() == OpKind::Sub &&
        (node->output(0)->hasUses() || graph.isOutput(node->output(0))))
      changed |= recognise(graph, *node);
  return passes::eraseDeadNodes(graph) || changed;
}

} // namespace sinter
