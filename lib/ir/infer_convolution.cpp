// Inference for convolutions: Conv, ConvTranspose, DeformConv and Col2Im. Conv's and
// ConvTranspose's window extents are windowExtent's and transposedWindowExtent's
// (sinter/ir/op_attributes.h), as the reference and lowering resolve them; here they apply where
// the extents are static, and a dim is unknown otherwise.
//
// Col2Im: input [N, C * prod(block_shape), L], image_shape and block_shape (1-D, one value per
// spatial dim, constants to be known); output [N, C, image_shape...]. L must be the number of
// block positions: prod over dims of (image + pads - dilation (block - 1) - 1) / stride + 1.
//
// DeformConv: X [N, C, spatial...], W [oC, C / group, kernel...], offset [N, offset_group *
// prod(kernel) * rank, out...], B [oC], mask [N, offset_group * prod(kernel), out...]; output
// [N, oC, out...] with out from the convolution's window arithmetic.
#include "infer_rules.h"

#include "sinter/ir/op_attributes.h"

namespace sinter::infer {
namespace {

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

/// What Conv and ConvTranspose check alike: a float [N, C, spatial...] input, weights of its
/// dtype and rank. Returns the group.
int64_t checkConvolutionInputs(const InferContext &ctx) {
  requireSpatialInput(ctx);
  ctx.requireSameDType(0, 1);
  if (ctx.rank(1) != ctx.rank(0))
    ctx.failInput(1, "(weights) must have the rank of input 0 (", ctx.rank(0), ")");
  return groupOf(ctx);
}

Types conv(const InferContext &ctx) {
  int64_t group = checkConvolutionInputs(ctx);
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
  int64_t group = checkConvolutionInputs(ctx);
  const Shape &x = ctx.shape(0), &w = ctx.shape(1);
  mergeDims(ctx, x[1], w[0], "the input channels and the weights' dim 0");
  if (x[1].isStatic() && x[1].value() % group != 0)
    ctx.failInput(0, "has ", x[1].value(), " channels, not divisible by group ", group);
  Dim channels = mulDims(ctx, w[1], Dim(group));
  checkBias(ctx, channels);
  Window window = readWindow(ctx, 1);
  Shape out = {x[0], channels};
  for (size_t i = 0; i + 2 < x.size(); ++i)
    out.push_back(window.attributes.outputShape.empty() ? windowOutput(ctx, window, x[2 + i], i, /*transposed=*/true)
                                                        : Dim(window.attributes.outputShape[i]));
  return {{ctx.dtype(0), out}};
}

Types col2im(const InferContext &ctx) {
  ctx.requireDType(0, [](DType t) { return isNumeric(t); }, "a numeric type");
  ctx.requireRank(0, 3);
  for (int i : {1, 2}) {
    ctx.requireDType(i, [](DType t) { return t == DType::Int64; }, "i64");
    ctx.requireRank(i, 1);
  }
  std::optional<std::vector<int64_t>> image = ctx.constantInts(1), block = ctx.constantInts(2);
  const Shape &x = ctx.shape(0);
  const Dim &spatialCount = ctx.shape(1)[0];
  if (!image || !block) {
    if (!spatialCount.isStatic())
      ctx.fail("image_shape's length must be known");
    Shape out = {x[0], Dim::unknown()};
    for (int64_t d = 0; d < spatialCount.value(); ++d)
      out.push_back(Dim::unknown());
    return {{ctx.dtype(0), out}};
  }
  size_t n = image->size();
  if (block->size() != n || n == 0)
    ctx.fail("image_shape and block_shape must have one value per spatial dim (", n, " and ", block->size(), ")");
  const WindowAttributes window = windowAttributes(ctx.node(), n);
  int64_t blockSize = 1, positions = 1;
  for (size_t d = 0; d < n; ++d) {
    if ((*image)[d] <= 0 || (*block)[d] <= 0)
      ctx.fail("image_shape and block_shape must be positive");
    blockSize = checkedMul(ctx, blockSize, (*block)[d]);
    positions = checkedMul(ctx, positions, windowExtent(ctx.node(), window, d, (*image)[d], (*block)[d]).output);
  }
  Dim channels = Dim::unknown();
  if (x[1].isStatic()) {
    if (x[1].value() % blockSize != 0)
      ctx.failInput(0, "has ", x[1].value(), " rows, not a multiple of the block size ", blockSize);
    channels = Dim(x[1].value() / blockSize);
  }
  mergeDims(ctx, x[2], Dim(positions), "the input's last dim and the number of block positions");
  Shape out = {x[0], channels};
  for (int64_t size : *image)
    out.push_back(Dim(size));
  return {{ctx.dtype(0), out}};
}

Types deformConv(const InferContext &ctx) {
  ctx.requireDType(0, isFloatType, "a float type");
  ctx.requireRankAtLeast(0, 3);
  int rank = ctx.rank(0);
  size_t n = size_t(rank - 2);
  for (int i = 1; i <= 4; ++i) {
    if (!ctx.hasInput(i))
      continue;
    ctx.requireSameDType(0, i);
    if (i != 3)
      ctx.requireRank(i, rank);
  }
  if (ctx.hasInput(3))
    ctx.requireRank(3, 1);
  const Shape &x = ctx.shape(0), &w = ctx.shape(1), &offset = ctx.shape(2);
  int64_t group = ctx.node().attrInt("group", 1), offsetGroup = ctx.node().attrInt("offset_group", 1);
  if (group <= 0 || offsetGroup <= 0)
    ctx.fail("group and offset_group must be positive");
  if (x[1].isStatic() && w[1].isStatic() && x[1].value() != w[1].value() * group)
    ctx.fail("X has ", x[1].value(), " channels; W expects ", w[1].value(), " x group ", group);
  if (x[1].isStatic() && x[1].value() % offsetGroup != 0)
    ctx.fail("X's ", x[1].value(), " channels do not split into ", offsetGroup, " offset groups");
  if (w[0].isStatic() && w[0].value() % group != 0)
    ctx.failInput(1, "has ", w[0].value(), " output channels, not divisible by group ", group);
  std::vector<int64_t> kernel;
  if (ctx.node().hasAttr("kernel_shape")) {
    kernel = spatialAttribute(ctx.node(), "kernel_shape", n, 1, 1);
    for (size_t d = 0; d < n; ++d)
      mergeDims(ctx, w[2 + d], Dim(kernel[d]), "kernel_shape and W's spatial dims");
  } else {
    for (size_t d = 0; d < n; ++d) {
      if (!w[2 + d].isStatic())
        ctx.fail("W's spatial dims must be known without kernel_shape");
      kernel.push_back(w[2 + d].value());
    }
  }
  const WindowAttributes window = windowAttributes(ctx.node(), n);
  int64_t kernelSize = 1;
  for (int64_t k : kernel)
    kernelSize *= k;
  Shape out = {x[0], w[0]};
  for (size_t d = 0; d < n; ++d)
    out.push_back(x[2 + d].isStatic() ? Dim(windowExtent(ctx.node(), window, d, x[2 + d].value(), kernel[d]).output)
                                      : Dim::unknown());
  mergeDims(ctx, offset[0], x[0], "offset's batch and X's");
  mergeDims(ctx, offset[1], Dim(offsetGroup * kernelSize * int64_t(n)), "offset's channels and offset_group x kernel size x rank");
  for (size_t d = 0; d < n; ++d)
    mergeDims(ctx, offset[2 + d], out[2 + d], "offset's spatial dims and the output's");
  if (ctx.hasInput(3))
    mergeDims(ctx, ctx.shape(3)[0], w[0], "B's length and the output channels");
  if (ctx.hasInput(4)) {
    const Shape &mask = ctx.shape(4);
    mergeDims(ctx, mask[0], x[0], "mask's batch and X's");
    mergeDims(ctx, mask[1], Dim(offsetGroup * kernelSize), "mask's channels and offset_group x kernel size");
    for (size_t d = 0; d < n; ++d)
      mergeDims(ctx, mask[2 + d], out[2 + d], "mask's spatial dims and the output's");
  }
  return {{ctx.dtype(0), out}};
}

} // namespace

void registerConvolutionInference(InferTable &table) {
  table.add(OpKind::Conv, conv);
  table.add(OpKind::ConvTranspose, convTranspose);
  table.add(OpKind::Col2Im, col2im);
  table.add(OpKind::DeformConv, deformConv);
}

} // namespace sinter::infer
