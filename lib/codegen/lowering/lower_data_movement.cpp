// Lowering of data movement: every op here is an index remapping (an injective rule), so it
// fuses into its consumers and producers without a copy of its own. Indices that come from data
// (Gather, GatherElements, GatherND; ReverseSequence's lengths) are wrapped for negative values
// and clamped into range, so a bad index can never read out of bounds.
#include "lowering_rules.h"

#include "sinter/ir/data_dependence.h"
#include "sinter/ir/op_attributes.h"
#include "sinter/support/error.h"

#include <algorithm>
#include <numeric>

namespace sinter::codegen {
namespace {

/// The constant data of input i as integers; UserError when it is not constant.
std::vector<int64_t> constantInts(const RuleContext &ctx, int i, const char *what) {
  const Value *value = ctx.node().input(i);
  if (!value)
    return {};
  if (!value->isConstant())
    userError(ctx.node().describe(), ": ", what, " must be a constant to compile",
              bindInputHint(graphInputsFeeding(*value)));
  return value->constant().toInts();
}

ExprRef clampIndex(ExprRef index, int64_t size) {
  index = binary(BinaryOp::Max, index, intConstant(0));
  return binary(BinaryOp::Min, index, intConstant(std::max<int64_t>(size - 1, 0)));
}

/// A data-derived index: negative values count from the end; then clamped into [0, size).
ExprRef dataIndex(ExprRef raw, int64_t size) {
  ExprRef index = cast(raw, DType::Int64);
  index = select(binary(BinaryOp::Lt, index, intConstant(0)), add(index, size), index);
  return clampIndex(index, size);
}

/// Same elements, another shape (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout).
ExprRef reshapeRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  std::vector<int64_t> outDims = ctx.outputDims(0), inDims = ctx.inputDims(0);
  if (outDims == inDims)
    return ctx.input(0)(index);
  return ctx.input(0)(unravelIndex(ravelIndex(index, outDims), inDims));
}

/// Dropout at inference only: training_mode (input 2) must be absent or a constant false, or the
/// ratio (input 1) a constant 0; random masks are not generated.
ExprRef dropoutRule(const RuleContext &ctx, int output, const std::vector<ExprRef> &index) {
  const Value *training = ctx.node().numInputs() > 2 ? ctx.node().input(2) : nullptr;
  const Value *ratio = ctx.node().numInputs() > 1 ? ctx.node().input(1) : nullptr;
  bool inference = !training || (training->isConstant() && training->constant().elementCount() == 1 &&
                                 training->constant().getDouble(0) == 0);
  bool noDrop = ratio && ratio->isConstant() && ratio->constant().elementCount() == 1 &&
                ratio->constant().getDouble(0) == 0;
  if (!inference && !noDrop)
    userError(ctx.node().describe(), ": training-mode Dropout (training_mode not a constant false) "
                                     "cannot be compiled",
              bindInputHint(graphInputsFeeding({training, ratio})));
  if (output == 1)
    return boolConstant(true); // inference: the mask keeps everything
  return reshapeRule(ctx, 0, index);
}

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
  // Walk the inputs back to front so the first input is the outermost select arm.
  std::vector<int64_t> offsets;
  int64_t offset = 0;
  for (int i = 0; i < ctx.node().numInputs(); ++i) {
    offsets.push_back(offset);
    offset += ctx.inputDims(i)[axis];
  }
  ExprRef result;
  for (int i = ctx.node().numInputs() - 1; i >= 0; --i) {
    int64_t size = ctx.inputDims(i)[axis];
    if (size == 0)
      continue;
    std::vector<ExprRef> inIndex = index;
    // Clamped so that the arm not taken still reads in bounds (LLVM's select evaluates both).
    inIndex[axis] = clampIndex(sub(index[axis], intConstant(offsets[i])), size);
    ExprRef value = ctx.input(i)(inIndex);
    result = result ? select(binary(BinaryOp::Lt, index[axis], intConstant(offsets[i] + size)), value, result)
                    : value;
  }
  return result;
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

ExprRef gatherRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  std::vector<int64_t> dataDims = ctx.inputDims(0), indexDims = ctx.inputDims(1);
  int64_t axis = normalizedAxis(ctx.node(), ctx.node().attrInt("axis", 0), int64_t(dataDims.size()));
  size_t q = indexDims.size();
  std::vector<ExprRef> indicesIndex(index.begin() + axis, index.begin() + axis + q);
  ExprRef position;
  const Value *indices = ctx.node().input(1);
  if (indices->isConstant() && indices->constant().elementCount() == 1) {
    // One constant index (torch's unbind of a QKV split: Gather(s, 0), 1, 2) is a constant of
    // the kernel, so the index arithmetic around it stays affine (IndexRanges::simplify, and the
    // tensor-core and attention kernels' 16-byte runs) instead of reading a buffer.
    int64_t at = int64_t(indices->constant().getDouble(0));
    at = std::clamp<int64_t>(at < 0 ? at + dataDims[axis] : at, 0, std::max<int64_t>(dataDims[axis] - 1, 0));
    position = intConstant(at);
  } else {
    position = dataIndex(ctx.input(1)(indicesIndex), dataDims[axis]);
  }
  std::vector<ExprRef> inIndex(index.begin(), index.begin() + axis);
  inIndex.push_back(position);
  inIndex.insert(inIndex.end(), index.begin() + axis + q, index.end());
  return ctx.input(0)(inIndex);
}

ExprRef gatherElementsRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  std::vector<int64_t> dataDims = ctx.inputDims(0);
  int64_t axis = normalizedAxis(ctx.node(), ctx.node().attrInt("axis", 0), int64_t(dataDims.size()));
  std::vector<ExprRef> inIndex = index;
  inIndex[axis] = dataIndex(ctx.input(1)(index), dataDims[axis]);
  return ctx.input(0)(inIndex);
}

/// GatherND: out[tuple..., slice...] = data[batch..., indices[tuple..., :]..., slice...], the first
/// batch_dims coordinates of the tuple shared with the data.
ExprRef gatherNDRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  std::vector<int64_t> dataDims = ctx.inputDims(0), indexDims = ctx.inputDims(1);
  int64_t batchDims = ctx.node().attrInt("batch_dims", 0);
  int64_t indexRank = int64_t(indexDims.size()), dataRank = int64_t(dataDims.size());
  int64_t depth = indexRank > 0 ? indexDims.back() : 0;
  if (indexRank < 1 || batchDims < 0 || batchDims >= std::min(dataRank, indexRank) || depth < 1 ||
      depth > dataRank - batchDims)
    userError(ctx.node().describe(), ": indices ", indexRank, "-D with tuples of ", depth,
              " do not fit data of rank ", dataRank, " with batch_dims ", batchDims);
  std::vector<ExprRef> tuple(index.begin(), index.begin() + (indexRank - 1));
  std::vector<ExprRef> inIndex(index.begin(), index.begin() + batchDims);
  for (int64_t j = 0; j < depth; ++j) {
    std::vector<ExprRef> at = tuple;
    at.push_back(intConstant(j));
    inIndex.push_back(dataIndex(ctx.input(1)(at), dataDims[batchDims + j]));
  }
  inIndex.insert(inIndex.end(), index.begin() + (indexRank - 1), index.end());
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

/// EyeLike: ones where column = row + k, zeros elsewhere, in the output's type.
ExprRef eyeLikeRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  if (index.size() != 2)
    userError(ctx.node().describe(), ": the input must be 2-D");
  DType type = ctx.outputType(0);
  ExprRef diagonal = binary(BinaryOp::Eq, index[1], add(index[0], ctx.node().attrInt("k", 0)));
  return select(diagonal, typedConstant(type, 1), typedConstant(type, 0));
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

ExprRef oneHotRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  int64_t rank = int64_t(index.size());
  int64_t axis = normalizedAxis(ctx.node(), ctx.node().attrInt("axis", -1), rank);
  int64_t depth = ctx.outputDims(0)[axis];
  std::vector<ExprRef> indicesIndex = index;
  indicesIndex.erase(indicesIndex.begin() + axis);
  ExprRef raw = cast(ctx.input(0)(indicesIndex), DType::Int64);
  ExprRef wrapped = select(binary(BinaryOp::Lt, raw, intConstant(0)), add(raw, depth), raw);
  ExprRef hot = binary(BinaryOp::Eq, wrapped, index[axis]);
  ExprRef off = ctx.input(2)({intConstant(0)});
  ExprRef on = ctx.input(2)({intConstant(1)});
  return select(hot, on, off);
}

ExprRef batchNormRule(const RuleContext &ctx, int output, const std::vector<ExprRef> &index) {
  if (ctx.node().attrInt("training_mode", 0) != 0)
    userError(ctx.node().describe(), ": training-mode BatchNormalization cannot be compiled");
  ExprRef channel = index.size() > 1 ? index[1] : intConstant(0);
  ExprRef x = ctx.input(0)(index);
  ExprRef scale = ctx.input(1)({channel}), bias = ctx.input(2)({channel});
  ExprRef mean = ctx.input(3)({channel}), variance = ctx.input(4)({channel});
  ExprRef epsilon = typedConstant(x->type, normalizationEpsilon(ctx.node()));
  ExprRef normalized = binary(BinaryOp::Div, binary(BinaryOp::Sub, x, mean),
                              unary(UnaryOp::Sqrt, binary(BinaryOp::Add, variance, epsilon)));
  return binary(BinaryOp::Add, binary(BinaryOp::Mul, normalized, scale), bias);
}

/// Resize in nearest and linear modes (cubic is not lowered yet).
ExprRef resizeRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  const Node &node = ctx.node();
  std::vector<int64_t> inDims = ctx.inputDims(0), outDims = ctx.outputDims(0);
  const ResizeAttributes attributes = resizeAttributes(node);
  const std::string &transform = attributes.coordinateMode, &nearestMode = attributes.nearestMode;
  if (attributes.mode == ResizeMode::Cubic)
    userError(node.describe(), ": Resize mode 'cubic' cannot be compiled yet");
  if (attributes.antialias || transform == "tf_crop_and_resize")
    userError(node.describe(), ": Resize with antialias or tf_crop_and_resize cannot be compiled yet");
  // Scales: from the scales input when given, else out/in (what sizes implies).
  std::vector<double> scales(inDims.size(), 1.0);
  const Value *scalesInput = node.input(2);
  std::vector<int64_t> axes = node.attrInts("axes");
  if (scalesInput && scalesInput->isConstant() && scalesInput->constant().elementCount() > 0) {
    const Tensor &t = scalesInput->constant();
    if (axes.empty())
      for (int64_t i = 0; i < t.elementCount(); ++i)
        scales[i] = t.getDouble(i);
    else
      for (size_t i = 0; i < axes.size(); ++i)
        scales[normalizedAxis(ctx.node(), axes[i], int64_t(inDims.size()))] = t.getDouble(int64_t(i));
  } else {
    for (size_t i = 0; i < inDims.size(); ++i)
      scales[i] = inDims[i] ? double(outDims[i]) / double(inDims[i]) : 1.0;
  }
  auto f32 = [](double v) { return constant(DType::Float32, v); };
  auto fop = [](BinaryOp op, ExprRef a, ExprRef b) { return binary(op, a, b); };

  // Source coordinate (float) per axis.
  std::vector<ExprRef> source(inDims.size());
  for (size_t i = 0; i < inDims.size(); ++i) {
    ExprRef x = cast(index[i], DType::Float32);
    double scale = scales[i];
    if (inDims[i] == outDims[i] && scale == 1.0) {
      source[i] = x;
      continue;
    }
    // The fractional output width, as ONNX's reference (lib/reference/resize.cpp) uses it: with
    // scales that do not give whole elements it differs from the output dim.
    double outputWidth = scale * double(inDims[i]);
    if (transform == "asymmetric")
      source[i] = fop(BinaryOp::Div, x, f32(scale));
    else if (transform == "align_corners")
      source[i] = outputWidth == 1 ? f32(0)
                                   : fop(BinaryOp::Mul, x, f32(double(inDims[i] - 1) / (outputWidth - 1)));
    else if (transform == "pytorch_half_pixel" && outputWidth == 1)
      source[i] = f32(0);
    else if (transform == "half_pixel_symmetric") {
      double adjustment = double(outDims[i]) / (scale * double(inDims[i]));
      double center = double(inDims[i]) / 2.0;
      double offset = center * (1 - adjustment);
      source[i] = fop(BinaryOp::Sub, fop(BinaryOp::Add, f32(offset), fop(BinaryOp::Div, fop(BinaryOp::Add, x, f32(0.5)), f32(scale))), f32(0.5));
    } else // half_pixel, pytorch_half_pixel
      source[i] = fop(BinaryOp::Sub, fop(BinaryOp::Div, fop(BinaryOp::Add, x, f32(0.5)), f32(scale)), f32(0.5));
  }

  if (attributes.mode == ResizeMode::Nearest) {
    std::vector<ExprRef> inIndex(inDims.size());
    for (size_t i = 0; i < inDims.size(); ++i) {
      ExprRef s = source[i];
      ExprRef rounded;
      if (nearestMode == "floor")
        rounded = unary(UnaryOp::Floor, s);
      else if (nearestMode == "ceil")
        rounded = unary(UnaryOp::Ceil, s);
      else if (nearestMode == "round_prefer_ceil")
        rounded = unary(UnaryOp::Floor, fop(BinaryOp::Add, s, f32(0.5)));
      else // round_prefer_floor: halves go down
        rounded = unary(UnaryOp::Ceil, fop(BinaryOp::Sub, s, f32(0.5)));
      inIndex[i] = clampIndex(cast(rounded, DType::Int64), inDims[i]);
    }
    return ctx.input(0)(inIndex);
  }
  // Linear: a weighted sum over the 2^k corners of the axes that resize.
  std::vector<size_t> resized;
  std::vector<ExprRef> low(inDims.size()), high(inDims.size()), weight(inDims.size());
  std::vector<ExprRef> base(inDims.size());
  for (size_t i = 0; i < inDims.size(); ++i) {
    if (source[i] == nullptr || (inDims[i] == outDims[i] && scales[i] == 1.0)) {
      base[i] = index[i];
      continue;
    }
    ExprRef s = fop(BinaryOp::Max, source[i], f32(0));
    ExprRef floor = unary(UnaryOp::Floor, s);
    low[i] = clampIndex(cast(floor, DType::Int64), inDims[i]);
    high[i] = clampIndex(add(cast(floor, DType::Int64), 1), inDims[i]);
    weight[i] = fop(BinaryOp::Min, fop(BinaryOp::Sub, s, floor), f32(1));
    resized.push_back(i);
  }
  ExprRef total;
  for (int corner = 0; corner < (1 << resized.size()); ++corner) {
    std::vector<ExprRef> at = base;
    ExprRef w = f32(1);
    for (size_t r = 0; r < resized.size(); ++r) {
      size_t axis = resized[r];
      bool up = (corner >> r) & 1;
      at[axis] = up ? high[axis] : low[axis];
      w = fop(BinaryOp::Mul, w, up ? weight[axis] : fop(BinaryOp::Sub, f32(1), weight[axis]));
    }
    ExprRef term = fop(BinaryOp::Mul, cast(ctx.input(0)(at), DType::Float32), w);
    total = total ? fop(BinaryOp::Add, total, term) : term;
  }
  return cast(total, ctx.outputType(0));
}

} // namespace

void registerDataMovementLowering(LoweringTable &table) {
  table.addInjective(OpKind::Identity, reshapeRule);
  table.addInjective(OpKind::CenterCropPad, centerCropPadRule);
  table.addInjective(OpKind::Reshape, reshapeRule);
  table.addInjective(OpKind::Flatten, reshapeRule);
  table.addInjective(OpKind::Squeeze, reshapeRule);
  table.addInjective(OpKind::Unsqueeze, reshapeRule);
  table.addInjective(OpKind::Dropout, dropoutRule);
  table.addInjective(OpKind::Transpose, transposeRule);
  table.addInjective(OpKind::Expand, expandRule);
  table.addInjective(OpKind::Slice, sliceRule);
  table.addInjective(OpKind::Concat, concatRule);
  table.addInjective(OpKind::Split, splitRule);
  table.addInjective(OpKind::Gather, gatherRule);
  table.addInjective(OpKind::GatherElements, gatherElementsRule);
  table.addInjective(OpKind::GatherND, gatherNDRule);
  table.addInjective(OpKind::ReverseSequence, reverseSequenceRule);
  table.addInjective(OpKind::EyeLike, eyeLikeRule);
  table.addInjective(OpKind::Tile, tileRule);
  table.addInjective(OpKind::Pad, padRule);
  table.addInjective(OpKind::DepthToSpace, depthToSpaceRule);
  table.addInjective(OpKind::SpaceToDepth, spaceToDepthRule);
  table.addInjective(OpKind::Trilu, triluRule);
  table.addInjective(OpKind::OneHot, oneHotRule);
  table.addInjective(OpKind::BatchNormalization, batchNormRule);
  table.addInjective(OpKind::Resize, resizeRule);
}

} // namespace sinter::codegen
