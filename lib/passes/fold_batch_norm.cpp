#include "fold_batch_norm.h"

#include "rewrite.h"

#include "sinter/ir/op_attributes.h"
#include "sinter/support/error.h"

#include <cmath>
#include <optional>

namespace sinter {
namespace {

/// y = x * scale[c] + shift[c] along the contraction's channel axis.
struct ChannelAffine {
  std::vector<double> scale, shift;

  bool finite() const {
    for (size_t c = 0; c < scale.size(); ++c)
      if (!std::isfinite(scale[c]) || !std::isfinite(shift[c]))
        return false;
    return true;
  }
  bool scalesAnything() const {
    for (double s : scale)
      if (s != 1.0)
        return true;
    return false;
  }
  bool shiftsAnything() const {
    for (double t : shift)
      if (t != 0.0)
        return true;
    return false;
  }
};

/// The output axis whose index selects a weight column (Gemm, MatMul) or filter (Conv).
std::optional<int> channelAxis(const Node &contraction) {
  const Value *weights = contraction.input(1);
  if (!weights || !weights->isConstant() || !isFloat(weights->dtype()))
    return std::nullopt;
  const Value *output = contraction.output(0);
  switch (contraction.kind()) {
  case OpKind::Conv:
    return output->rank() >= 3 ? std::optional<int>(1) : std::nullopt;
  case OpKind::Gemm:
    return 1;
  case OpKind::MatMul:
    return weights->rank() == 2 ? std::optional<int>(output->rank() - 1) : std::nullopt;
  default:
    return std::nullopt;
  }
}

/// The values of a constant that broadcasts along `axis` only (every other dim 1, no more dims
/// than the output), one per channel; nullopt otherwise.
std::optional<std::vector<double>> perChannel(const Value *value, int outputRank, int axis,
                                              int64_t channels) {
  if (!value || !value->isConstant() || !isFloat(value->dtype()) || value->rank() > outputRank)
    return std::nullopt;
  const Tensor &tensor = value->constant();
  int offset = outputRank - tensor.rank();
  bool alongAxis = false;
  for (int d = 0; d < tensor.rank(); ++d) {
    int64_t dim = tensor.dims()[d];
    if (offset + d == axis && dim == channels && channels != 1)
      alongAxis = true;
    else if (dim != 1)
      return std::nullopt;
  }
  std::vector<double> values(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c)
    values[size_t(c)] = tensor.getDouble(alongAxis ? c : 0);
  return values;
}

/// What `node` does to `x` (its contraction's output), as a per-channel affine map.
std::optional<ChannelAffine> affineOf(const Node &node, const Value *x, int axis,
                                      int64_t channels) {
  int rank = x->rank();
  const std::vector<double> ones(size_t(channels), 1.0), zeros(size_t(channels), 0.0);
  auto constantOperand = [&]() {
    return perChannel(passes::otherInput(node, x), rank, axis, channels);
  };
  switch (node.kind()) {
  case OpKind::BatchNormalization: {
    if (node.input(0) != x || axis != 1 || node.attrInt("training_mode", 0) != 0)
      return std::nullopt;
    for (int i = 1; i < node.numOutputs(); ++i)
      if (node.output(i) && node.output(i)->hasUses())
        return std::nullopt;
    std::vector<std::vector<double>> parameters;
    for (int i = 1; i <= 4; ++i) {
      const Value *parameter = node.input(i);
      if (!parameter || parameter->rank() != 1)
        return std::nullopt;
      std::optional<std::vector<double>> values = perChannel(parameter, 1, 0, channels);
      if (!values)
        return std::nullopt;
      parameters.push_back(*values);
    }
    double epsilon = normalizationEpsilon(node);
    ChannelAffine affine{zeros, zeros};
    for (size_t c = 0; c < size_t(channels); ++c) {
      double k = parameters[0][c] / std::sqrt(parameters[3][c] + epsilon);
      affine.scale[c] = k;
      affine.shift[c] = parameters[1][c] - parameters[2][c] * k;
    }
    return affine;
  }
  case OpKind::Mul:
    if (auto c = constantOperand())
      return ChannelAffine{*c, zeros};
    return std::nullopt;
  case OpKind::Add:
    if (auto c = constantOperand())
      return ChannelAffine{ones, *c};
    return std::nullopt;
  case OpKind::Div:
    if (node.input(0) != x)
      return std::nullopt;
    if (auto c = constantOperand()) {
      ChannelAffine affine{zeros, zeros};
      for (size_t i = 0; i < c->size(); ++i)
        affine.scale[i] = 1.0 / (*c)[i];
      return affine;
    }
    return std::nullopt;
  case OpKind::Sub:
    if (auto c = constantOperand()) {
      if (node.input(0) == x) { // x - c
        for (double &value : *c)
          value = -value;
        return ChannelAffine{ones, *c};
      }
      return ChannelAffine{std::vector<double>(size_t(channels), -1.0), *c}; // c - x
    }
    return std::nullopt;
  default:
    return std::nullopt;
  }
}

/// `weights` with the slices along `axis` (of size scale.size()) multiplied by scale.
Tensor scaleAlong(const Tensor &weights, int axis, const std::vector<double> &scale) {
  int64_t inner = 1;
  for (int d = axis + 1; d < weights.rank(); ++d)
    inner *= weights.dims()[d];
  int64_t channels = int64_t(scale.size());
  Tensor result(weights.dtype(), weights.dims());
  for (int64_t i = 0; i < weights.elementCount(); ++i)
    result.setDouble(i, weights.getDouble(i) * scale[size_t((i / inner) % channels)]);
  return result;
}

/// A new constant named after the one it replaces ("w" -> "w.folded", "w.folded" -> "w.folded.1").
Value *addFolded(Graph &graph, const std::string &original, Tensor tensor) {
  size_t at = original.find(".folded");
  std::string base = at == std::string::npos ? original + ".folded" : original.substr(0, at + 7);
  return graph.addConstant(graph.uniqueName(base), std::move(tensor));
}

/// Rewrites `contraction` so its output is affine(old output). Returns false, changing nothing,
/// when it cannot; `remainingShift` receives a shift a MatMul cannot absorb.
bool foldInto(Graph &graph, Node &contraction, const ChannelAffine &affine,
              std::vector<double> &remainingShift) {
  Value *weights = contraction.input(1);
  Value *bias = contraction.input(2);
  int64_t channels = int64_t(affine.scale.size());
  DType dtype = weights->dtype();
  switch (contraction.kind()) {
  case OpKind::Conv: {
    if (bias && (!bias->isConstant() || bias->constant().elementCount() != channels))
      return false;
    if (affine.scalesAnything())
      contraction.setInput(
          1, addFolded(graph, weights->name(), scaleAlong(weights->constant(), 0, affine.scale)));
    if (bias || affine.shiftsAnything()) {
      Tensor folded(bias ? bias->dtype() : dtype, {channels});
      for (int64_t c = 0; c < channels; ++c)
        folded.setDouble(c, (bias ? bias->constant().getDouble(c) : 0.0) * affine.scale[size_t(c)] +
                                affine.shift[size_t(c)]);
      contraction.setInput(
          2, addFolded(graph, bias ? bias->name() : contraction.output(0)->name() + ".bias",
                       std::move(folded)));
    }
    return true;
  }
  case OpKind::Gemm: {
    if (weights->rank() != 2 || (bias && !bias->isConstant()))
      return false;
    bool transB = contraction.attrInt("transB", 0) != 0;
    int64_t rows = contraction.output(0)->shape()[0].value();
    double beta = contraction.attrFloat("beta", 1.0f);
    // C broadcast to [rows, N]: per row only when it has rows of its own.
    bool perRow = bias && bias->rank() == 2 && bias->constant().dims()[0] != 1;
    if (affine.scalesAnything())
      contraction.setInput(
          1, addFolded(graph, weights->name(),
                       scaleAlong(weights->constant(), transB ? 0 : 1, affine.scale)));
    if (bias || affine.shiftsAnything()) {
      int64_t biasRows = perRow ? rows : 1;
      Tensor folded(bias ? bias->dtype() : dtype,
                    perRow ? std::vector<int64_t>{rows, channels} : std::vector<int64_t>{channels});
      for (int64_t row = 0; row < biasRows; ++row)
        for (int64_t c = 0; c < channels; ++c) {
          double old = 0.0;
          if (bias) {
            const Tensor &t = bias->constant();
            // Broadcast [], [1], [N], [1, N], [rows, N] or [rows, 1].
            int64_t columns = t.rank() == 0 ? 1 : t.dims().back();
            int64_t r = t.rank() == 2 && t.dims()[0] != 1 ? row : 0;
            old = t.getDouble(r * columns + (columns == 1 ? 0 : c));
          }
          folded.setDouble(row * channels + c,
                           beta * old * affine.scale[size_t(c)] + affine.shift[size_t(c)]);
        }
      contraction.setInput(
          2, addFolded(graph, bias ? bias->name() : contraction.output(0)->name() + ".bias",
                       std::move(folded)));
      contraction.removeAttr("beta");
    }
    return true;
  }
  case OpKind::MatMul:
    if (!affine.scalesAnything())
      return false; // only a shift: nothing to fold, the Add is an epilogue already
    contraction.setInput(
        1, addFolded(graph, weights->name(), scaleAlong(weights->constant(), 1, affine.scale)));
    if (affine.shiftsAnything())
      remainingShift = affine.shift;
    return true;
  default:
    return false;
  }
}

bool foldAfter(Graph &graph, Node &node) {
  // The contraction whose output this node reads, as its sole user.
  for (Value *input : node.inputs()) {
    Node *contraction = input ? input->producer() : nullptr;
    if (!contraction || contraction->numOutputs() != 1 || passes::soleUser(graph, input) != &node)
      continue;
    std::optional<int> axis = channelAxis(*contraction);
    if (!axis || node.output(0)->type() != input->type() || !isFloat(input->dtype()) ||
        !input->shape()[*axis].isStatic())
      continue;
    if (contraction->kind() == OpKind::Gemm && !input->shape()[0].isStatic())
      continue;
    int64_t channels = input->shape()[*axis].value();
    std::optional<ChannelAffine> affine = affineOf(node, input, *axis, channels);
    if (!affine || !affine->finite())
      continue;
    std::vector<double> remainingShift;
    if (!foldInto(graph, *contraction, *affine, remainingShift))
      continue;
    if (remainingShift.empty()) {
      bool replaced = passes::replaceValue(graph, node.output(0), input);
      SINTER_ASSERT(replaced, "the contraction's output is not a graph output");
      return true;
    }
    Tensor shift(input->dtype(), {channels});
    for (int64_t c = 0; c < channels; ++c)
      shift.setDouble(c, remainingShift[size_t(c)]);
    Value *shiftValue =
        graph.addConstant(graph.uniqueName(node.output(0)->name() + ".shift"), std::move(shift));
    passes::replaceWithNode(graph, node.output(0), OpKind::Add, {input, shiftValue}, &node);
    return true;
  }
  return false;
}

} // namespace

bool FoldBatchNorm::run(Graph &graph) {
  bool changed = false;
  std::vector<Node *> nodes;
  for (const auto &node : graph.nodes())
    nodes.push_back(node.get());
  for (Node *node : nodes) {
    switch (node->kind()) {
    case OpKind::BatchNormalization:
    case OpKind::Mul:
    case OpKind::Div:
    case OpKind::Add:
    case OpKind::Sub:
      // A node replaced earlier in this sweep has no users left and is skipped.
      if (node->output(0)->hasUses() || graph.isOutput(node->output(0)))
        changed |= foldAfter(graph, *node);
      break;
    default:
      break;
    }
  }
  return passes::eraseDeadNodes(graph) || changed;
}

} // namespace sinter
