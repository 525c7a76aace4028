// prove-independent-dim (include/sinter/passes/independent_dims.h). Design: one forward sweep in
// node order (the graph is topologically sorted) with a map from value to the axis that carries
// the dim. A node none of whose inputs carries it passes untouched (its outputs do not depend on
// the dim). Otherwise its op's rule either places the dim in each output or says why the op mixes
// along it; the first such node ends the proof. Rules read static shapes and constant operands
// (axes, pads, repeats) only; a non-constant operand where a rule needs a constant fails the proof.
#include "sinter/passes/independent_dims.h"

#include "sinter/ir/graph.h"
#include "sinter/support/error.h"

#include <algorithm>
#include <optional>

namespace sinter {
namespace {

constexpr int kNone = -1;

/// A rule's verdict: the dim's axis in each output (kNone: not carried), or why the op mixes.
struct Placement {
  std::vector<int> outputAxes;
  std::string failure;
};

Placement fails(const Node &node, const std::string &why) {
  return {{}, node.describe() + " " + why};
}

Placement everyOutputAt(const Node &node, int axis) {
  return {std::vector<int>(node.numOutputs(), axis), ""};
}

int normalizeAxis(int64_t axis, int rank) { return int(axis < 0 ? axis + rank : axis); }

std::vector<int64_t> dimsOf(const Value *value) { return staticDims(value->shape()); }

/// A constant integer operand's values, or nullopt when it is absent or not a constant.
std::optional<std::vector<int64_t>> constantInts(const Node &node, int input) {
  const Value *value = node.input(input);
  if (!value || !value->isConstant())
    return std::nullopt;
  return value->constant().toInts();
}

class Sweep {
public:
  explicit Sweep(std::map<const Value *, int> &axes) : axes_(axes) {}

  int axisOf(const Value *value) const {
    if (!value)
      return kNone;
    auto found = axes_.find(value);
    return found == axes_.end() ? kNone : found->second;
  }

  Placement place(const Node &node) const;

private:
  Placement broadcast(const Node &node, int firstInput, int lastInput) const;
  Placement keepUnless(const Node &node, const std::vector<int> &mixedAxes,
                       const std::string &what) const;
  Placement matMul(const Node &node) const;
  Placement gemm(const Node &node) const;
  Placement view(const Node &node) const;
  Placement reduce(const Node &node) const;
  Placement gather(const Node &node) const;
  Placement slice(const Node &node) const;
  Placement pad(const Node &node) const;
  /// Only input 0 may carry the dim; every other input must not.
  std::optional<Placement> onlyDataInput(const Node &node) const;

  std::map<const Value *, int> &axes_;
};

std::string axisText(int axis) { return "axis " + std::to_string(axis); }

std::optional<Placement> Sweep::onlyDataInput(const Node &node) const {
  for (int i = 1; i < node.numInputs(); ++i)
    if (axisOf(node.input(i)) != kNone)
      return fails(node, "reads the dim in its operand " + std::to_string(i) +
                             " (only its data operand may carry it)");
  return std::nullopt;
}

/// Elementwise with numpy broadcasting over inputs [firstInput, lastInput]: the dim lands where
/// each carrying input's axis aligns (from the right), and every carrying input must agree.
Placement Sweep::broadcast(const Node &node, int firstInput, int lastInput) const {
  int rank = node.output(0)->rank();
  int placed = kNone;
  for (int i = firstInput; i <= lastInput && i < node.numInputs(); ++i) {
    const Value *input = node.input(i);
    int axis = axisOf(input);
    if (axis == kNone)
      continue;
    int aligned = axis + rank - input->rank();
    if (placed != kNone && placed != aligned)
      return fails(node, "combines the dim at output axes " + std::to_string(placed) + " and " +
                             std::to_string(aligned));
    placed = aligned;
  }
  for (int i = 0; i < node.numInputs(); ++i)
    if ((i < firstInput || i > lastInput) && axisOf(node.input(i)) != kNone)
      return fails(node, "reads the dim in its operand " + std::to_string(i));
  return everyOutputAt(node, placed);
}

/// Input 0 carries the dim (and no other input does); the op mixes along `mixedAxes` of it and
/// keeps every other axis where it is, in every output.
Placement Sweep::keepUnless(const Node &node, const std::vector<int> &mixedAxes,
                            const std::string &what) const {
  if (std::optional<Placement> failure = onlyDataInput(node))
    return *failure;
  int axis = axisOf(node.input(0));
  if (std::find(mixedAxes.begin(), mixedAxes.end(), axis) != mixedAxes.end())
    return fails(node, what + " along " + axisText(axis) + ", which carries the dim");
  return everyOutputAt(node, axis);
}

Placement Sweep::matMul(const Node &node) const {
  const Value *lhs = node.input(0), *rhs = node.input(1);
  int rank = node.output(0)->rank();
  if (lhs->rank() < 2 || rhs->rank() < 2)
    return fails(node, "is a vector product over the dim");
  int placed = kNone;
  auto land = [&](int axis) {
    if (placed != kNone && placed != axis)
      return false;
    placed = axis;
    return true;
  };
  if (int axis = axisOf(lhs); axis != kNone) {
    if (axis == lhs->rank() - 1)
      return fails(node, "sums along the dim (its lhs's columns)");
    int out = axis == lhs->rank() - 2 ? rank - 2 : axis + rank - lhs->rank();
    land(out);
  }
  if (int axis = axisOf(rhs); axis != kNone) {
    if (axis == rhs->rank() - 2)
      return fails(node, "sums along the dim (its rhs's rows)");
    int out = axis == rhs->rank() - 1 ? rank - 1 : axis + rank - rhs->rank();
    if (!land(out))
      return fails(node, "multiplies the dim of its lhs by the dim of its rhs (an outer product)");
  }
  return everyOutputAt(node, placed);
}

Placement Sweep::gemm(const Node &node) const {
  bool transA = node.attrInt("transA", 0) != 0, transB = node.attrInt("transB", 0) != 0;
  int placed = kNone;
  if (int axis = axisOf(node.input(0)); axis != kNone) {
    if (axis == (transA ? 0 : 1))
      return fails(node, "sums along the dim (A's reduction axis)");
    placed = 0;
  }
  if (int axis = axisOf(node.input(1)); axis != kNone) {
    if (axis == (transB ? 1 : 0))
      return fails(node, "sums along the dim (B's reduction axis)");
    if (placed != kNone)
      return fails(node, "multiplies the dim of A by the dim of B");
    placed = 1;
  }
  if (const Value *bias = node.input(2); bias && axisOf(bias) != kNone) {
    int aligned = axisOf(bias) + 2 - bias->rank();
    if (placed != kNone && placed != aligned)
      return fails(node, "adds a bias that carries the dim on another axis");
    placed = aligned;
  }
  return everyOutputAt(node, placed);
}

/// Reshape, Flatten, Squeeze, Unsqueeze: the dim survives when some output axis has its size and
/// the same product of sizes before it, so the elements before, at and after it stay apart.
Placement Sweep::view(const Node &node) const {
  if (std::optional<Placement> failure = onlyDataInput(node))
    return *failure;
  std::vector<int64_t> in = dimsOf(node.input(0)), out = dimsOf(node.output(0));
  int axis = axisOf(node.input(0));
  int64_t before = 1;
  for (int i = 0; i < axis; ++i)
    before *= in[i];
  int64_t after = 1;
  for (size_t i = axis + 1; i < in.size(); ++i)
    after *= in[i];
  int64_t prefix = 1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (prefix == before && out[i] == in[axis]) {
      int64_t suffix = 1;
      for (size_t j = i + 1; j < out.size(); ++j)
        suffix *= out[j];
      if (suffix == after)
        return everyOutputAt(node, int(i));
    }
    prefix *= out[i];
  }
  return fails(node, "merges the dim (" + axisText(axis) + " of " +
                         shapeStr(node.input(0)->shape()) + ") with other dims into " +
                         shapeStr(node.output(0)->shape()));
}

Placement Sweep::reduce(const Node &node) const {
  int rank = node.input(0)->rank();
  int axis = axisOf(node.input(0));
  if (std::optional<Placement> failure = onlyDataInput(node))
    return *failure;
  bool keepDims = node.attrInt("keepdims", 1) != 0;
  std::vector<int> reduced;
  if (node.kind() == OpKind::ArgMax || node.kind() == OpKind::ArgMin) {
    reduced.push_back(normalizeAxis(node.attrInt("axis", 0), rank));
  } else {
    std::optional<std::vector<int64_t>> axes = constantInts(node, 1);
    if (node.input(1) && !axes)
      return fails(node, "reduces over axes that are not a constant");
    if (!axes || axes->empty()) {
      if (node.attrInt("noop_with_empty_axes", 0) != 0)
        return everyOutputAt(node, axis);
      for (int i = 0; i < rank; ++i)
        reduced.push_back(i);
    } else {
      for (int64_t value : *axes)
        reduced.push_back(normalizeAxis(value, rank));
    }
  }
  if (std::find(reduced.begin(), reduced.end(), axis) != reduced.end())
    return fails(node, "reduces along " + axisText(axis) + ", which carries the dim");
  int landed = axis;
  if (!keepDims)
    landed -= int(std::count_if(reduced.begin(), reduced.end(), [&](int r) { return r < axis; }));
  return everyOutputAt(node, landed);
}

Placement Sweep::gather(const Node &node) const {
  const Value *data = node.input(0), *indices = node.input(1);
  int gatherAxis = normalizeAxis(node.attrInt("axis", 0), data->rank());
  int dataAxis = axisOf(data), indexAxis = axisOf(indices);
  if (dataAxis != kNone && indexAxis != kNone)
    return fails(node, "gathers along the dim with indices that carry it");
  if (indexAxis != kNone) // each index picks its own slice: the dim moves to the index's place
    return everyOutputAt(node, gatherAxis + indexAxis);
  if (dataAxis == gatherAxis)
    return fails(node, "picks slices along " + axisText(dataAxis) + ", which carries the dim");
  return everyOutputAt(node, dataAxis < gatherAxis ? dataAxis : dataAxis + indices->rank() - 1);
}

Placement Sweep::slice(const Node &node) const {
  if (std::optional<Placement> failure = onlyDataInput(node))
    return *failure;
  int rank = node.input(0)->rank();
  int axis = axisOf(node.input(0));
  std::optional<std::vector<int64_t>> starts = constantInts(node, 1), ends = constantInts(node, 2);
  std::optional<std::vector<int64_t>> axes = constantInts(node, 3), steps = constantInts(node, 4);
  if (!starts || !ends || (node.input(3) && !axes) || (node.input(4) && !steps))
    return fails(node, "slices with bounds that are not constants");
  int64_t size = dimsOf(node.input(0))[axis];
  for (size_t k = 0; k < starts->size(); ++k) {
    int sliced = axes ? normalizeAxis((*axes)[k], rank) : int(k);
    if (sliced != axis)
      continue;
    int64_t start = (*starts)[k] < 0 ? (*starts)[k] + size : (*starts)[k];
    int64_t step = steps ? (*steps)[k] : 1;
    if (start > 0 || step != 1 || (*ends)[k] < size)
      return fails(node, "slices " + axisText(axis) + ", which carries the dim");
  }
  return everyOutputAt(node, axis);
}

Placement Sweep::pad(const Node &node) const {
  if (std::optional<Placement> failure = onlyDataInput(node))
    return *failure;
  int rank = node.input(0)->rank();
  int axis = axisOf(node.input(0));
  std::optional<std::vector<int64_t>> pads = constantInts(node, 1);
  std::optional<std::vector<int64_t>> axes = constantInts(node, 3);
  if (!pads || (node.input(3) && !axes))
    return fails(node, "pads by amounts that are not constants");
  size_t listed = axes ? axes->size() : size_t(rank);
  for (size_t k = 0; k < listed && k + listed < pads->size(); ++k) {
    int padded = axes ? normalizeAxis((*axes)[k], rank) : int(k);
    if (padded == axis && ((*pads)[k] != 0 || (*pads)[k + listed] != 0))
      return fails(node, "pads " + axisText(axis) + ", which carries the dim");
  }
  return everyOutputAt(node, axis);
}

Placement Sweep::place(const Node &node) const {
  const Value *data = node.input(0);
  int axis = axisOf(data);
  int rank = data ? data->rank() : 0;
  switch (node.kind()) {
  case OpKind::BatchNormalization:
    if (node.attrInt("training_mode", 0) != 0)
      return fails(node, "computes batch statistics (training mode) along the dim");
    return keepUnless(node, {1}, "normalises per channel");
  case OpKind::Trilu:
    return keepUnless(node, {rank - 2, rank - 1}, "masks by position");
  case OpKind::SwiGLU:
    return keepUnless(node, {rank - 1}, "splits its last axis");
  case OpKind::CastLike:
    return broadcast(node, 0, 0);
  case OpKind::QuantizeLinear:
  case OpKind::DequantizeLinear:
    return keepUnless(node, {}, "");
  case OpKind::Identity:
  case OpKind::Dropout:
    return keepUnless(node, {}, "");
  case OpKind::MatMul:
    return matMul(node);
  case OpKind::Gemm:
    return gemm(node);
  case OpKind::Conv:
  case OpKind::ConvTranspose:
  case OpKind::AveragePool:
  case OpKind::MaxPool:
  case OpKind::LpPool:
  case OpKind::GlobalAveragePool:
  case OpKind::GlobalMaxPool:
  case OpKind::InstanceNormalization:
  case OpKind::GroupNormalization:
  case OpKind::DepthToSpace:
  case OpKind::SpaceToDepth: {
    std::vector<int> mixed;
    for (int i = 1; i < rank; ++i)
      mixed.push_back(i);
    return keepUnless(node, mixed, "works across channels and positions");
  }
  case OpKind::LRN:
    return keepUnless(node, {1}, "normalises across channels");
  case OpKind::LayerNormalization:
  case OpKind::RMSNormalization: {
    std::vector<int> mixed;
    for (int i = normalizeAxis(node.attrInt("axis", -1), rank); i < rank; ++i)
      mixed.push_back(i);
    return keepUnless(node, mixed, "normalises");
  }
  case OpKind::MeanVarianceNormalization: {
    std::vector<int> mixed;
    for (int64_t value : node.attrInts("axes", {0, 2, 3}))
      mixed.push_back(normalizeAxis(value, rank));
    return keepUnless(node, mixed, "normalises");
  }
  case OpKind::LpNormalization:
  case OpKind::Softmax:
  case OpKind::LogSoftmax:
  case OpKind::Hardmax:
  case OpKind::TopK:
    return keepUnless(node, {normalizeAxis(node.attrInt("axis", -1), rank)},
                      node.kind() == OpKind::TopK ? "ranks" : "normalises");
  case OpKind::CumSum:
  case OpKind::CumProd: {
    if (axisOf(node.input(1)) != kNone)
      return fails(node, "reads the dim in its axis operand");
    std::optional<std::vector<int64_t>> along = constantInts(node, 1);
    if (!along || along->size() != 1)
      return fails(node, "accumulates along an axis that is not a constant");
    return keepUnless(node, {normalizeAxis((*along)[0], rank)}, "accumulates");
  }
  case OpKind::ArgMax:
  case OpKind::ArgMin:
  case OpKind::ReduceL1:
  case OpKind::ReduceL2:
  case OpKind::ReduceLogSum:
  case OpKind::ReduceLogSumExp:
  case OpKind::ReduceMax:
  case OpKind::ReduceMean:
  case OpKind::ReduceMin:
  case OpKind::ReduceProd:
  case OpKind::ReduceSum:
  case OpKind::ReduceSumSquare:
    return reduce(node);
  case OpKind::Transpose: {
    if (std::optional<Placement> failure = onlyDataInput(node))
      return *failure;
    std::vector<int64_t> perm = node.attrInts("perm");
    if (perm.empty())
      for (int i = rank - 1; i >= 0; --i)
        perm.push_back(i);
    for (size_t i = 0; i < perm.size(); ++i)
      if (normalizeAxis(perm[i], rank) == axis)
        return everyOutputAt(node, int(i));
    return fails(node, "has a permutation without " + axisText(axis));
  }
  case OpKind::Reshape:
  case OpKind::Flatten:
  case OpKind::Squeeze:
  case OpKind::Unsqueeze:
    return view(node);
  case OpKind::Expand:
    if (std::optional<Placement> failure = onlyDataInput(node))
      return *failure;
    return everyOutputAt(node, axis + node.output(0)->rank() - rank);
  case OpKind::Concat: {
    int concatAxis = normalizeAxis(node.attrInt("axis", 0), node.output(0)->rank());
    Placement placed = broadcast(node, 0, node.numInputs() - 1);
    if (placed.failure.empty() && placed.outputAxes[0] == concatAxis)
      return fails(node, "concatenates along " + axisText(concatAxis) + ", which carries the dim");
    return placed;
  }
  case OpKind::Split:
    return keepUnless(node, {normalizeAxis(node.attrInt("axis", 0), rank)}, "splits");
  case OpKind::Slice:
    return slice(node);
  case OpKind::Pad:
    return pad(node);
  case OpKind::Tile: {
    if (std::optional<Placement> failure = onlyDataInput(node))
      return *failure;
    std::optional<std::vector<int64_t>> repeats = constantInts(node, 1);
    if (!repeats || size_t(axis) >= repeats->size() || (*repeats)[axis] != 1)
      return fails(node, "repeats " + axisText(axis) + ", which carries the dim");
    return everyOutputAt(node, axis);
  }
  case OpKind::Gather:
    return gather(node);
  case OpKind::Resize: {
    if (std::optional<Placement> failure = onlyDataInput(node))
      return *failure;
    if (axis != 0 || dimsOf(node.output(0))[0] != dimsOf(data)[0] ||
        node.attrString("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize")
      return fails(node, "resamples " + axisText(axis) + ", which carries the dim");
    return everyOutputAt(node, 0);
  }
  case OpKind::Attention: {
    // Q, K, V, the mask and the past keys and values all put the batch first (3-D and 4-D forms).
    for (int i = 0; i < node.numInputs(); ++i)
      if (int carried = axisOf(node.input(i)); carried != kNone && carried != 0)
        return fails(node, "attends along " + axisText(carried) + " of its operand " +
                               std::to_string(i) + ", which carries the dim");
    return everyOutputAt(node, 0);
  }
  case OpKind::Shape:
  case OpKind::Size:
    return fails(node, "reads the size of the dim");
  default:
    break;
  }
  if (node.info().fusion == FusionClass::Elementwise)
    return broadcast(node, 0, node.numInputs() - 1);
  return fails(node, "has no rule that proves it keeps the dim apart (" +
                         std::string(fusionClassName(node.info().fusion)) + " op)");
}

} // namespace

DimIndependence proveIndependentDim(const Graph &graph, const std::vector<DimOrigin> &origins) {
  DimIndependence result;
  std::map<const Value *, int> axes;
  int64_t size = -1;
  for (const DimOrigin &origin : origins) {
    const Value *input = nullptr;
    for (const Value *candidate : graph.inputs())
      if (candidate->name() == origin.input)
        input = candidate;
    SINTER_ASSERT(input && origin.axis >= 0 && origin.axis < input->rank(),
                  "a dim origin names input '", origin.input, "' axis ", origin.axis);
    int64_t here = staticDims(input->shape())[origin.axis];
    if (size >= 0 && here != size) {
      result.reason = "input '" + origin.input + "' has the dim at size " + std::to_string(here) +
                      " where another input has it at " + std::to_string(size);
      return result;
    }
    size = here;
    auto [it, inserted] = axes.emplace(input, origin.axis);
    if (!inserted && it->second != origin.axis) {
      result.reason = "input '" + origin.input + "' carries the dim at two axes";
      return result;
    }
  }
  Sweep sweep(axes);
  for (const auto &node : graph.nodes()) {
    bool reads = std::any_of(node->inputs().begin(), node->inputs().end(),
                             [&](const Value *input) { return sweep.axisOf(input) != kNone; });
    if (!reads)
      continue;
    Placement placement = sweep.place(*node);
    if (!placement.failure.empty()) {
      result.reason = placement.failure;
      return result;
    }
    for (int i = 0; i < node->numOutputs(); ++i) {
      const Value *output = node->output(i);
      int axis = placement.outputAxes[i];
      if (axis == kNone || !output)
        continue;
      // A rule places the dim; the output's shape must agree that it is the dim (a broadcast of
      // a size-1 dim, say, would not be).
      if (axis >= output->rank() || staticDims(output->shape())[axis] != size) {
        result.reason = node->describe() + " changes the dim's size (output '" + output->name() +
                        "' is " + shapeStr(output->shape()) + ")";
        return result;
      }
      axes[output] = axis;
    }
  }
  result.independent = true;
  for (const Value *output : graph.outputs())
    result.outputAxes.push_back(sweep.axisOf(output));
  return result;
}

} // namespace sinter
