// Inference for convolution, pooling and normalisation ops.
//
// Sliding-window output sizes follow ONNX's reference shape inference (convPoolShapeInference):
// with explicit pads, out = floor((in + pads - effective_kernel) / stride) + 1, or ceil when
// ceil_mode is set, dropping a last window that would start in the right padding; SAME_UPPER
// and SAME_LOWER derive the pads so that out = ceil(in / stride); VALID uses no padding.
// ConvTranspose inverts this: out = stride * (in - 1) + output_padding + effective_kernel - pads,
// or the output_shape attribute. Under SAME_* the spec asks for in * stride; pads cannot be
// negative, so (like onnxruntime) the result is min(in * stride, the unpadded size).
#include "infer_rules.h"

#include <algorithm>

namespace sinter::infer {
namespace {

/// The attributes of a sliding window over the spatial dims (all but the first two).
struct Window {
  std::vector<int64_t> kernel; ///< empty entries (-1) when the kernel dim is not static
  std::vector<int64_t> strides, dilations, pads;
  std::string autoPad;
  bool ceilMode = false;
};

std::vector<int64_t> intsOfSize(const InferContext &ctx, const char *name, size_t size,
                                int64_t fallback, int64_t minimum) {
  std::vector<int64_t> values = ctx.node().attrInts(name, std::vector<int64_t>(size, fallback));
  if (values.size() != size)
    ctx.fail("attribute '", name, "' has ", values.size(), " values; expected ", size);
  for (int64_t value : values)
    if (value < minimum)
      ctx.fail("attribute '", name, "' has value ", value, "; expected >= ", minimum);
  return values;
}

std::string autoPadOf(const InferContext &ctx) {
  std::string autoPad = ctx.node().attrString("auto_pad", "NOTSET");
  if (autoPad != "NOTSET" && autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER" &&
      autoPad != "VALID")
    ctx.fail("attribute 'auto_pad' must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, not \"",
             autoPad, "\"");
  return autoPad;
}

/// Reads the window attributes for a node whose input 0 is [N, C, spatial...]. The kernel comes
/// from kernel_shape, or from `weight`'s dims 2.. when that attribute is absent.
Window readWindow(const InferContext &ctx, int weight) {
  size_t spatial = size_t(ctx.rank(0) - 2);
  Window window;
  window.autoPad = autoPadOf(ctx);
  if (ctx.node().hasAttr("kernel_shape")) {
    window.kernel = intsOfSize(ctx, "kernel_shape", spatial, 1, 1);
    if (weight >= 0)
      for (size_t i = 0; i < spatial; ++i) {
        const Dim &dim = ctx.shape(weight)[2 + i];
        if (dim.isStatic() && dim.value() != window.kernel[i])
          ctx.fail("attribute 'kernel_shape' ", shapeStr(shapeOf(window.kernel)),
                   " does not match the spatial dims of ", ctx.describeInput(weight));
      }
  } else if (weight >= 0) {
    for (size_t i = 0; i < spatial; ++i) {
      const Dim &dim = ctx.shape(weight)[2 + i];
      if (dim.isStatic() && dim.value() == 0)
        ctx.failInput(weight, "has a zero-sized kernel dim");
      window.kernel.push_back(dim.isStatic() ? dim.value() : -1);
    }
  } else {
    ctx.fail("attribute 'kernel_shape' is required");
  }
  window.strides = intsOfSize(ctx, "strides", spatial, 1, 1);
  window.dilations = intsOfSize(ctx, "dilations", spatial, 1, 1);
  window.pads = intsOfSize(ctx, "pads", 2 * spatial, 0, 0);
  if (window.autoPad != "NOTSET") // auto_pad decides the padding; explicit pads are ignored
    window.pads.assign(2 * spatial, 0);
  if (ctx.node().info().findAttribute("ceil_mode")) {
    int64_t ceilMode = ctx.node().attrInt("ceil_mode", 0);
    if (ceilMode != 0 && ceilMode != 1)
      ctx.fail("attribute 'ceil_mode' must be 0 or 1, not ", ceilMode);
    window.ceilMode = ceilMode == 1;
  }
  return window;
}

/// The output size of spatial dim i of a convolution or pool.
Dim windowOutput(const InferContext &ctx, const Window &window, const Dim &input, size_t i) {
  if (!input.isStatic() || window.kernel[i] < 0)
    return Dim::unknown();
  size_t spatial = window.kernel.size();
  int64_t in = input.value(), stride = window.strides[i];
  int64_t effective = checkedAdd(ctx, checkedMul(ctx, window.kernel[i] - 1, window.dilations[i]), 1);
  int64_t padBegin = window.pads[i], padEnd = window.pads[i + spatial];
  if (window.autoPad == "SAME_UPPER" || window.autoPad == "SAME_LOWER") {
    int64_t residual = stride > 1 ? in % stride : 0;
    int64_t total = std::max<int64_t>(residual == 0 ? effective - stride : effective - residual, 0);
    padBegin = window.autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
    padEnd = total - padBegin;
  }
  int64_t padded = checkedAdd(ctx, checkedAdd(ctx, in, padBegin), padEnd);
  if (padded < effective)
    ctx.fail("spatial dim ", i, " of ", ctx.describeInput(0), " is ", in, " (", padded,
             " with padding), smaller than the ", effective, "-wide (dilated) kernel");
  int64_t numerator = padded - effective;
  if (window.ceilMode)
    numerator = checkedAdd(ctx, numerator, stride - 1);
  int64_t out = numerator / stride + 1;
  // A window may not start in the right padding (PyTorch's rule, adopted by ONNX).
  if (window.ceilMode && (out - 1) * stride >= in + padBegin)
    --out;
  return Dim(out);
}

void requireSpatialInput(const InferContext &ctx) {
  ctx.requireDType(0, isFloatType, "a float type");
  ctx.requireRankAtLeast(0, 3);
}

int64_t groupOf(const InferContext &ctx) {
  int64_t group = ctx.node().attrInt("group", 1);
  if (group <= 0)
    ctx.fail("attribute 'group' must be positive, not ", group);
  return group;
}

/// Bias (input 2, optional): 1-D of `channels`.
void checkBias(const InferContext &ctx, const Dim &channels) {
  if (!ctx.hasInput(2))
    return;
  ctx.requireSameDType(0, 2);
  ctx.requireRank(2, 1);
  mergeDims(ctx, ctx.shape(2)[0], channels, "the bias length and the output channels");
}

Types conv(const InferContext &ctx) {
  requireSpatialInput(ctx);
  ctx.requireSameDType(0, 1);
  if (ctx.rank(1) != ctx.rank(0))
    ctx.failInput(1, "(weights) must have the rank of input 0 (", ctx.rank(0), ")");
  int64_t group = groupOf(ctx);
  const Shape &x = ctx.shape(0), &w = ctx.shape(1);
  if (x[1].isStatic() && w[1].isStatic() && x[1].value() != checkedMul(ctx, w[1].value(), group))
    ctx.fail("input 0 has ", x[1].value(), " channels, but the weights expect ", w[1].value(),
             " per group x ", group, " groups = ", w[1].value() * group);
  if (w[0].isStatic() && w[0].value() % group != 0)
    ctx.failInput(1, "has ", w[0].value(), " output channels, not divisible by group ", group);
  checkBias(ctx, w[0]);
  Window window = readWindow(ctx, 1);
  Shape out = {x[0], w[0]};
  for (size_t i = 0; i + 2 < x.size(); ++i)
    out.push_back(windowOutput(ctx, window, x[2 + i], i));
  return {{ctx.dtype(0), out}};
}

Types convTranspose(const InferContext &ctx) {
  requireSpatialInput(ctx);
  ctx.requireSameDType(0, 1);
  if (ctx.rank(1) != ctx.rank(0))
    ctx.failInput(1, "(weights) must have the rank of input 0 (", ctx.rank(0), ")");
  int64_t group = groupOf(ctx);
  const Shape &x = ctx.shape(0), &w = ctx.shape(1);
  mergeDims(ctx, x[1], w[0], "the input channels and the weights' dim 0");
  if (x[1].isStatic() && x[1].value() % group != 0)
    ctx.failInput(0, "has ", x[1].value(), " channels, not divisible by group ", group);
  Dim channels = mulDims(ctx, w[1], Dim(group));
  checkBias(ctx, channels);
  Window window = readWindow(ctx, 1);
  size_t spatial = x.size() - 2;
  std::vector<int64_t> outputPadding = intsOfSize(ctx, "output_padding", spatial, 0, 0);
  Shape out = {x[0], channels};
  if (ctx.node().hasAttr("output_shape")) {
    std::vector<int64_t> shape = ctx.node().attrInts("output_shape");
    if (shape.size() != spatial)
      ctx.fail("attribute 'output_shape' has ", shape.size(), " values; expected ", spatial);
    for (int64_t dim : shape)
      out.push_back(nonNegativeDim(ctx, dim, "an 'output_shape' entry"));
    return {{ctx.dtype(0), out}};
  }
  for (size_t i = 0; i < spatial; ++i) {
    if (!x[2 + i].isStatic() || window.kernel[i] < 0) {
      out.push_back(Dim::unknown());
      continue;
    }
    int64_t in = x[2 + i].value();
    int64_t effective =
        checkedAdd(ctx, checkedMul(ctx, window.kernel[i] - 1, window.dilations[i]), 1);
    int64_t size = checkedMul(ctx, window.strides[i], in - 1);
    size = checkedAdd(ctx, checkedAdd(ctx, size, outputPadding[i]), effective);
    if (window.autoPad == "SAME_UPPER" || window.autoPad == "SAME_LOWER") {
      // Pad (never negatively) towards in * stride, as onnxruntime does.
      out.push_back(Dim(std::min(size, checkedMul(ctx, in, window.strides[i]))));
      continue;
    }
    size = checkedAdd(ctx, size, -checkedAdd(ctx, window.pads[i], window.pads[i + spatial]));
    if (size < 0)
      ctx.fail("spatial dim ", i, " of the output would be ", size,
               "; the pads are larger than the output");
    out.push_back(Dim(size));
  }
  return {{ctx.dtype(0), out}};
}

Types pool(const InferContext &ctx) {
  if (ctx.kind() == OpKind::MaxPool)
    ctx.requireDType(0, [](DType t) { return isFloat(t) || t == DType::Int8 || t == DType::Uint8; },
                     "a float type, i8 or u8");
  else
    ctx.requireDType(0, isFloatType, "a float type");
  ctx.requireRankAtLeast(0, 3);
  if (ctx.kind() == OpKind::AveragePool) {
    int64_t countIncludePad = ctx.node().attrInt("count_include_pad", 0);
    if (countIncludePad != 0 && countIncludePad != 1)
      ctx.fail("attribute 'count_include_pad' must be 0 or 1, not ", countIncludePad);
  }
  if (ctx.kind() == OpKind::MaxPool) {
    int64_t storageOrder = ctx.node().attrInt("storage_order", 0);
    if (storageOrder != 0 && storageOrder != 1)
      ctx.fail("attribute 'storage_order' must be 0 or 1, not ", storageOrder);
  }
  Window window = readWindow(ctx, -1);
  const Shape &x = ctx.shape(0);
  Shape out = {x[0], x[1]};
  for (size_t i = 0; i + 2 < x.size(); ++i)
    out.push_back(windowOutput(ctx, window, x[2 + i], i));
  Types types = {{ctx.dtype(0), out}};
  if (ctx.numOutputs() == 2)
    types.push_back({DType::Int64, out});
  return types;
}

Types globalPool(const InferContext &ctx) {
  ctx.requireDType(0, isFloatType, "a float type");
  ctx.requireRankAtLeast(0, 2);
  Shape out = ctx.shape(0);
  std::fill(out.begin() + 2, out.end(), Dim(1));
  return {{ctx.dtype(0), out}};
}

/// Input i must be 1-D with `channels` elements.
void requirePerChannel(const InferContext &ctx, int i, const Dim &channels) {
  ctx.requireRank(i, 1);
  mergeDims(ctx, ctx.shape(i)[0], channels,
            detail::concat("the length of ", ctx.describeInput(i), " and the channel count"));
}

Types batchNormalization(const InferContext &ctx) {
  for (int i = 0; i < 5; ++i)
    ctx.requireDType(i, isFloatType, "a float type");
  ctx.requireSameDType(1, 2);
  ctx.requireSameDType(3, 4);
  ctx.requireRankAtLeast(0, 1);
  int64_t training = ctx.node().attrInt("training_mode", 0);
  if (training != 0 && training != 1)
    ctx.fail("attribute 'training_mode' must be 0 or 1, not ", training);
  const Shape &x = ctx.shape(0);
  Dim channels = x.size() > 1 ? x[1] : Dim(1);
  for (int i = 1; i < 5; ++i)
    requirePerChannel(ctx, i, channels);
  Types types = {ctx.type(0)};
  // running_mean and running_var (training mode) have the statistics' type.
  for (int i = 1; i < ctx.numOutputs(); ++i)
    types.push_back({ctx.dtype(3), {channels}});
  return types;
}

Types instanceNormalization(const InferContext &ctx) {
  ctx.requireDType(0, isFloatType, "a float type");
  ctx.requireSameDType(0, 1);
  ctx.requireSameDType(0, 2);
  ctx.requireRankAtLeast(0, 3);
  requirePerChannel(ctx, 1, ctx.shape(0)[1]);
  requirePerChannel(ctx, 2, ctx.shape(0)[1]);
  return {ctx.type(0)};
}

Types groupNormalization(const InferContext &ctx) {
  ctx.requireDType(0, isFloatType, "a float type");
  ctx.requireSameDType(0, 1);
  ctx.requireSameDType(0, 2);
  ctx.requireRankAtLeast(0, 2);
  if (!ctx.node().hasAttr("num_groups"))
    ctx.fail("attribute 'num_groups' is required");
  int64_t groups = ctx.node().attrInt("num_groups", 1);
  if (groups <= 0)
    ctx.fail("attribute 'num_groups' must be positive, not ", groups);
  const Dim &channels = ctx.shape(0)[1];
  if (channels.isStatic() && channels.value() % groups != 0)
    ctx.failInput(0, "has ", channels.value(), " channels, not divisible by num_groups ", groups);
  requirePerChannel(ctx, 1, channels);
  requirePerChannel(ctx, 2, channels);
  return {ctx.type(0)};
}

/// LayerNormalization and RMSNormalization: normalise over dims [axis, rank).
Types layerNormalization(const InferContext &ctx) {
  ctx.requireDType(0, isFloatType, "a float type");
  ctx.requireSameDType(0, 1);
  const Shape &x = ctx.shape(0);
  int axis = ctx.normalizeAxis(ctx.node().attrInt("axis", -1), int(x.size()));
  DType stash = dtypeFromOnnxAttr(ctx, ctx.node().attrInt("stash_type", 1), "stash_type");
  if (!isFloat(stash))
    ctx.fail("attribute 'stash_type' must name a float type, not ", dtypeName(stash));
  requireUnidirectionalBroadcast(ctx, 1, x);
  if (ctx.hasInput(2)) {
    ctx.requireSameDType(0, 2);
    requireUnidirectionalBroadcast(ctx, 2, x);
  }
  Types types = {ctx.type(0)};
  Shape statistics = x;
  std::fill(statistics.begin() + axis, statistics.end(), Dim(1));
  for (int i = 1; i < ctx.numOutputs(); ++i)
    types.push_back({stash, statistics});
  return types;
}

Types lpNormalization(const InferContext &ctx) {
  ctx.requireDType(0, isFloatType, "a float type");
  ctx.normalizeAxis(ctx.node().attrInt("axis", -1), ctx.rank(0));
  int64_t p = ctx.node().attrInt("p", 2);
  if (p != 1 && p != 2)
    ctx.fail("attribute 'p' must be 1 or 2, not ", p);
  return {ctx.type(0)};
}

Types lrn(const InferContext &ctx) {
  ctx.requireDType(0, isFloatType, "a float type");
  ctx.requireRankAtLeast(0, 3);
  if (!ctx.node().hasAttr("size"))
    ctx.fail("attribute 'size' is required");
  int64_t size = ctx.node().attrInt("size", 1);
  if (size <= 0)
    ctx.fail("attribute 'size' must be positive, not ", size);
  return {ctx.type(0)};
}

Types meanVarianceNormalization(const InferContext &ctx) {
  ctx.requireDType(0, isFloatType, "a float type");
  ctx.normalizeAxes(ctx.node().attrInts("axes", {0, 2, 3}), ctx.rank(0));
  return {ctx.type(0)};
}

} // namespace

void registerNnInference(InferTable &table) {
  table.add(OpKind::Conv, conv);
  table.add(OpKind::ConvTranspose, convTranspose);
  table.add(OpKind::AveragePool, pool);
  table.add(OpKind::MaxPool, pool);
  table.add(OpKind::LpPool, pool);
  table.add(OpKind::GlobalAveragePool, globalPool);
  table.add(OpKind::GlobalMaxPool, globalPool);
  table.add(OpKind::BatchNormalization, batchNormalization);
  table.add(OpKind::InstanceNormalization, instanceNormalization);
  table.add(OpKind::GroupNormalization, groupNormalization);
  table.add(OpKind::LayerNormalization, layerNormalization);
  table.add(OpKind::RMSNormalization, layerNormalization);
  table.add(OpKind::LpNormalization, lpNormalization);
  table.add(OpKind::LRN, lrn);
  table.add(OpKind::MeanVarianceNormalization, meanVarianceNormalization);
}

} // namespace sinter::infer
