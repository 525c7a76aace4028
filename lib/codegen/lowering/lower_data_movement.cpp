// Lowering of data movement: every op here is an index remapping (an injective rule), so it
// fuses into its consumers and producers without a copy of its own. Indices that come from data
// (ReverseSequence's lengths) are clamped into range, so a bad one can never read out of bounds.
#include "lowering_rules.h"

#include "sinter/ir/data_dependence.h"
#include "sinter/ir/op_attributes.h"
#include "sinter/support/error.h"

#include <algorithm>
#include <functional>
#include <numeric>

namespace sinter::codegen {
namespace {

ExprRef transposeRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  int rank = int(index.size());
  std::vector<int64_t> perm = ctx.node().attrInts("perm");
  if (perm.empty()) {
    perm.resize(rank);
    std::iota(perm.rbegin(), perm.rend(), 0);
  }
  std::vector<ExprRef> inIndex(rank);
  for (int i = 0; i < rank; ++i)
    inIndex[perm[i]] = index[i];
  return ctx.input(0)(inIndex);
}

ExprRef expandRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  return ctx.input(0)(broadcastIndex(index, ctx.inputDims(0)));
}

/// ONNX Slice's effective start and step per axis of the input.
struct SliceAxis {
  int64_t start = 0, step = 1;
};

std::vector<SliceAxis> sliceAxes(const RuleContext &ctx) {
  std::vector<int64_t> dims = ctx.inputDims(0);
  std::vector<int64_t> starts = constantInts(ctx, 1, "Slice's starts");
  std::vector<int64_t> ends = constantInts(ctx, 2, "Slice's ends");
  std::vector<int64_t> axes = constantInts(ctx, 3, "Slice's axes");
  std::vector<int64_t> steps = constantInts(ctx, 4, "Slice's steps");
  if (axes.empty()) {
    axes.resize(starts.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (steps.empty())
    steps.assign(starts.size(), 1);
  std::vector<SliceAxis> result(dims.size());
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = normalizedAxis(ctx.node(), axes[i], int64_t(dims.size()));
    int64_t dim = dims[axis], step = steps[i], start = starts[i];
    if (step == 0)
      userError(ctx.node().describe(), ": Slice step 0");
    if (start < 0)
      start += dim;
    start = step > 0 ? std::clamp<int64_t>(start, 0, dim) : std::clamp<int64_t>(start, 0, dim - 1);
    result[axis] = {start, step};
  }
  (void)ends; // the output shape (from inference) already accounts for ends
  return result;
}

ExprRef sliceRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  std::vector<SliceAxis> axes = sliceAxes(ctx);
  std::vector<ExprRef> inIndex(index.size());
  for (size_t i = 0; i < index.size(); ++i)
    inIndex[i] = add(intConstant(axes[i].start), mul(index[i], axes[i].step));
  return ctx.input(0)(inIndex);
}

ExprRef concatRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  int64_t rank = int64_t(index.size());
  int64_t axis = normalizedAxis(ctx.node(), ctx.node().attrInt("axis", 0), rank);
  // The inputs that contribute along the axis, and where each begins.
  std::vector<int> inputs;
  std::vector<int64_t> offsets;
  int64_t offset = 0;
  for (int i = 0; i < ctx.node().numInputs(); ++i) {
    if (ctx.inputDims(i)[axis] == 0)
      continue;
    inputs.push_back(i);
    offsets.push_back(offset);
    offset += ctx.inputDims(i)[axis];
  }
  // A balanced tree of selects on the axis index: a read of one of n inputs tests log2(n)
  // bounds, not up to n (DenseNet's blocks concatenate up to 33 inputs, and a kernel fused after
  // the Concat makes every element's read go through the tree).
  std::function<ExprRef(size_t, size_t)> tree = [&](size_t begin, size_t end) -> ExprRef {
    if (end - begin == 1) {
      const int i = inputs[begin];
      std::vector<ExprRef> inIndex = index;
      // Clamped so that an arm not taken still reads in bounds (LLVM's select evaluates both).
      inIndex[axis] = clampIndex(sub(index[axis], intConstant(offsets[begin])), ctx.inputDims(i)[axis]);
      return ctx.input(i)(inIndex);
    }
    const size_t middle = begin + (end - begin) / 2;
    return select(binary(BinaryOp::Lt, index[axis], intConstant(offsets[middle])), tree(begin, middle),
                  tree(middle, end));
  };
  return inputs.empty() ? nullptr : tree(0, inputs.size());
}

ExprRef splitRule(const RuleContext &ctx, int output, const std::vector<ExprRef> &index) {
  int64_t rank = int64_t(index.size());
  int64_t axis = normalizedAxis(ctx.node(), ctx.node().attrInt("axis", 0), rank);
  int64_t offset = 0;
  for (int i = 0; i < output; ++i)
    offset += ctx.outputDims(i)[axis];
  std::vector<ExprRef> inIndex = index;
  inIndex[axis] = add(index[axis], offset);
  return ctx.input(0)(inIndex);
}

/// ReverseSequence: along time_axis, the first sequence_lens[batch] elements reversed.
ExprRef reverseSequenceRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  int64_t batchAxis = ctx.node().attrInt("batch_axis", 1), timeAxis = ctx.node().attrInt("time_axis", 0);
  if ((batchAxis != 0 && batchAxis != 1) || (timeAxis != 0 && timeAxis != 1) || batchAxis == timeAxis ||
      index.size() < 2)
    userError(ctx.node().describe(), ": batch_axis and time_axis must be 0 and 1 in some order");
  int64_t time = ctx.inputDims(0)[timeAxis];
  ExprRef length = cast(ctx.input(1)({index[batchAxis]}), DType::Int64);
  ExprRef t = index[timeAxis];
  std::vector<ExprRef> from = index;
  from[timeAxis] = clampIndex(sub(sub(length, intConstant(1)), t), time);
  ExprRef reversed = binary(BinaryOp::Lt, t, length);
  return select(reversed, ctx.input(0)(from), ctx.input(0)(index));
}

ExprRef tileRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  std::vector<int64_t> dims = ctx.inputDims(0);
  std::vector<ExprRef> inIndex(index.size());
  for (size_t i = 0; i < index.size(); ++i)
    inIndex[i] = dims[i] == 1 ? intConstant(0) : rem(index[i], dims[i]);
  return ctx.input(0)(inIndex);
}

/// CenterCropPad: along each axis whose size changes, the input is cropped or zero-padded
/// around its centre; an odd difference leaves the extra element at the end (crop start and pad
/// before are the difference halved, rounded down). The sizes come from the inferred output.
ExprRef centerCropPadRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  std::vector<int64_t> in = ctx.inputDims(0), out = ctx.outputDims(0);
  std::vector<ExprRef> at = index;
  ExprRef inside = boolConstant(true);
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == out[i])
      continue;
    int64_t shift = in[i] > out[i] ? (in[i] - out[i]) / 2 : -((out[i] - in[i]) / 2);
    ExprRef position = add(index[i], intConstant(shift));
    if (in[i] < out[i])
      inside = binary(BinaryOp::LogicalAnd, inside,
                      binary(BinaryOp::LogicalAnd, binary(BinaryOp::Ge, position, intConstant(0)),
                             binary(BinaryOp::Lt, position, intConstant(in[i]))));
    at[i] = clampIndex(position, in[i]);
  }
  ExprRef value = ctx.input(0)(at);
  return select(inside, value, typedConstant(value->type, 0));
}

ExprRef padRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  std::vector<int64_t> dims = ctx.inputDims(0);
  int64_t rank = int64_t(dims.size());
  std::vector<int64_t> pads = constantInts(ctx, 1, "Pad's pads");
  std::vector<int64_t> axes = constantInts(ctx, 3, "Pad's axes");
  if (axes.empty()) {
    axes.resize(rank);
    std::iota(axes.begin(), axes.end(), 0);
  }
  std::vector<int64_t> before(rank, 0);
  for (size_t i = 0; i < axes.size(); ++i)
    before[normalizedAxis(ctx.node(), axes[i], rank)] = pads[i];
  std::string mode = ctx.node().attrString("mode", "constant");
  ExprRef inside = boolConstant(true);
  std::vector<ExprRef> inIndex(rank);
  for (int64_t i = 0; i < rank; ++i) {
    ExprRef position = sub(index[i], intConstant(before[i]));
    int64_t size = dims[i];
    if (mode == "constant") {
      ExprRef ok = binary(BinaryOp::LogicalAnd, binary(BinaryOp::Ge, position, intConstant(0)),
                          binary(BinaryOp::Lt, position, intConstant(size)));
      inside = binary(BinaryOp::LogicalAnd, inside, ok);
      inIndex[i] = clampIndex(position, size);
    } else if (mode == "edge") {
      inIndex[i] = clampIndex(position, size);
    } else if (mode == "wrap") {
      ExprRef wrapped = rem(add(rem(position, size), size), size);
      inIndex[i] = wrapped;
    } else if (mode == "reflect") {
      if (size == 1) {
        inIndex[i] = intConstant(0);
        continue;
      }
      // Reflect without repeating the edge: period 2(size-1).
      int64_t period = 2 * (size - 1);
      ExprRef folded = rem(add(rem(position, period), period), period);
      inIndex[i] = select(binary(BinaryOp::Lt, folded, intConstant(size)), folded,
                          sub(intConstant(period), folded));
    } else {
      userError(ctx.node().describe(), ": unknown Pad mode '", mode, "'");
    }
  }
  ExprRef value = ctx.input(0)(inIndex);
  if (mode != "constant")
    return value;
  ExprRef fill = ctx.hasInput(2) ? firstElement(ctx, 2) : typedConstant(value->type, 0);
  return select(inside, value, fill);
}

ExprRef depthToSpaceRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  // out[n, c, h*b + i, w*b + j] = in[n, DCR: (i*b + j)*C + c | CRD: c*b*b + i*b + j, h, w]
  const BlockRearrangement rearrangement = blockRearrangement(ctx.node());
  const int64_t b = rearrangement.blockSize, channels = ctx.outputDims(0)[1];
  const bool crd = rearrangement.channelsOutermost;
  ExprRef i = rem(index[2], b), j = rem(index[3], b);
  ExprRef inner = add(mul(i, b), j);
  ExprRef c = crd ? add(mul(index[1], b * b), inner) : add(mul(inner, channels), index[1]);
  return ctx.input(0)({index[0], c, div(index[2], b), div(index[3], b)});
}

ExprRef spaceToDepthRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  // out[n, DCR: (i*b + j)*C + c | CRD: c*b*b + i*b + j, h, w] = in[n, c, h*b + i, w*b + j]
  const BlockRearrangement rearrangement = blockRearrangement(ctx.node());
  const int64_t b = rearrangement.blockSize, channels = ctx.inputDims(0)[1];
  const bool crd = rearrangement.channelsOutermost;
  ExprRef c = crd ? div(index[1], b * b) : rem(index[1], channels);
  ExprRef block = crd ? rem(index[1], b * b) : div(index[1], channels);
  ExprRef i = div(block, b), j = rem(block, b);
  return ctx.input(0)({index[0], c, add(mul(index[2], b), i), add(mul(index[3], b), j)});
}

ExprRef triluRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  int64_t k = 0;
  if (ctx.hasInput(1))
    k = constantInts(ctx, 1, "Trilu's k").at(0);
  bool upper = ctx.node().attrInt("upper", 1) != 0;
  size_t rank = index.size();
  ExprRef row = index[rank - 2], column = index[rank - 1];
  // upper keeps column - row >= k; lower keeps column - row <= k.
  ExprRef offset = sub(column, row);
  ExprRef keep = binary(upper ? BinaryOp::Ge : BinaryOp::Le, offset, intConstant(k));
  ExprRef value = ctx.input(0)(index);
  return select(keep, value, typedConstant(value->type, 0));
}

} // namespace

ExprRef reshapeRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  std::vector<int64_t> outDims = ctx.outputDims(0), inDims = ctx.inputDims(0);
  if (outDims == inDims)
    return ctx.input(0)(index);
  return ctx.input(0)(unravelIndex(ravelIndex(index, outDims), inDims));
}

void registerDataMovementLowering(LoweringTable &table) {
  table.addInjective(OpKind::Identity, reshapeRule);
  table.addInjective(OpKind::CenterCropPad, centerCropPadRule);
  table.addInjective(OpKind::Reshape, reshapeRule);
  table.addInjective(OpKind::Flatten, reshapeRule);
  table.addInjective(OpKind::Squeeze, reshapeRule);
  table.addInjective(OpKind::Unsqueeze, reshapeRule);
  table.addInjective(OpKind::Transpose, transposeRule);
  table.addInjective(OpKind::Expand, expandRule);
  table.addInjective(OpKind::Slice, sliceRule);
  table.addInjective(OpKind::Concat, concatRule);
  table.addInjective(OpKind::Split, splitRule);
  table.addInjective(OpKind::ReverseSequence, reverseSequenceRule);
  table.addInjective(OpKind::Tile, tileRule);
  table.addInjective(OpKind::Pad, padRule);
  table.addInjective(OpKind::DepthToSpace, depthToSpaceRule);
  table.addInjective(OpKind::SpaceToDepth, spaceToDepthRule);
  table.addInjective(OpKind::Trilu, triluRule);
}

} // namespace sinter::codegen
