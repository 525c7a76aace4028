// Inference for Col2Im and DeformConv.
//
// Col2Im: input [N, C * prod(block_shape), L], image_shape and block_shape (1-D, one value per
// spatial dim, constants to be known); output [N, C, image_shape...]. L must be the number of
// block positions: prod over dims of (image + pads - dilation (block - 1) - 1) / stride + 1.
//
// DeformConv: X [N, C, spatial...], W [oC, C / group, kernel...], offset [N, offset_group *
// prod(kernel) * rank, out...], B [oC], mask [N, offset_group * prod(kernel), out...]; output
// [N, oC, out...] with out from the convolution's window arithmetic.
//
// RoiAlign: X [N, C, H, W], rois [R, 4], batch_indices [R] (i64); output [R, C, output_height,
// output_width]. MaxUnpool: X and indices [N, C, spatial...]; output [N, C, out...] with out
// from output_shape (input 2) or (in - 1) * stride - pads + kernel.
#include "infer_rules.h"

namespace sinter::infer {
namespace {

std::vector<int64_t> intsAttribute(const InferContext &ctx, const char *name, size_t count, int64_t fallback,
                                   int64_t minimum) {
  std::vector<int64_t> values = ctx.node().attrInts(name, std::vector<int64_t>(count, fallback));
  if (values.size() != count)
    ctx.fail("attribute '", name, "' has ", values.size(), " values; expected ", count);
  for (int64_t value : values)
    if (value < minimum)
      ctx.fail("attribute '", name, "' has ", value, "; values must be at least ", minimum);
  return values;
}

/// Output size of a window sweep along one dim; UserError when the window does not fit.
int64_t sweep(const InferContext &ctx, int64_t size, int64_t padBegin, int64_t padEnd, int64_t kernel,
              int64_t dilation, int64_t stride) {
  int64_t effective = dilation * (kernel - 1) + 1;
  int64_t padded = size + padBegin + padEnd;
  if (padded < effective)
    ctx.fail("a spatial dim of ", size, " (", padded, " padded) is smaller than the ", effective, "-wide window");
  return (padded - effective) / stride + 1;
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
  std::vector<int64_t> dilations = intsAttribute(ctx, "dilations", n, 1, 1);
  std::vector<int64_t> strides = intsAttribute(ctx, "strides", n, 1, 1);
  std::vector<int64_t> pads = intsAttribute(ctx, "pads", 2 * n, 0, 0);
  int64_t blockSize = 1, positions = 1;
  for (size_t d = 0; d < n; ++d) {
    if ((*image)[d] <= 0 || (*block)[d] <= 0)
      ctx.fail("image_shape and block_shape must be positive");
    blockSize = checkedMul(ctx, blockSize, (*block)[d]);
    positions = checkedMul(ctx, positions, sweep(ctx, (*image)[d], pads[d], pads[d + n], (*block)[d], dilations[d], strides[d]));
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
    kernel = intsAttribute(ctx, "kernel_shape", n, 1, 1);
    for (size_t d = 0; d < n; ++d)
      mergeDims(ctx, w[2 + d], Dim(kernel[d]), "kernel_shape and W's spatial dims");
  } else {
    for (size_t d = 0; d < n; ++d) {
      if (!w[2 + d].isStatic())
        ctx.fail("W's spatial dims must be known without kernel_shape");
      kernel.push_back(w[2 + d].value());
    }
  }
  std::vector<int64_t> dilations = intsAttribute(ctx, "dilations", n, 1, 1);
  std::vector<int64_t> strides = intsAttribute(ctx, "strides", n, 1, 1);
  std::vector<int64_t> pads = intsAttribute(ctx, "pads", 2 * n, 0, 0);
  int64_t kernelSize = 1;
  for (int64_t k : kernel)
    kernelSize *= k;
  Shape out = {x[0], w[0]};
  for (size_t d = 0; d < n; ++d)
    out.push_back(x[2 + d].isStatic() ? Dim(sweep(ctx, x[2 + d].value(), pads[d], pads[d + n], kernel[d], dilations[d], strides[d]))
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

Types roiAlign(const InferContext &ctx) {
  ctx.requireDType(0, isFloatType, "a float type");
  ctx.requireRank(0, 4);
  ctx.requireSameDType(0, 1);
  ctx.requireRank(1, 2);
  ctx.requireDType(2, [](DType t) { return t == DType::Int64; }, "i64");
  ctx.requireRank(2, 1);
  mergeDims(ctx, ctx.shape(1)[1], Dim(4), "rois' dim 1 and 4 coordinates");
  Dim rois = mergeDims(ctx, ctx.shape(1)[0], ctx.shape(2)[0], "the number of rois and of batch indices");
  std::string mode = ctx.node().attrString("mode", "avg");
  if (mode != "avg" && mode != "max")
    ctx.fail("mode '", mode, "' is not avg or max");
  std::string transform = ctx.node().attrString("coordinate_transformation_mode", "half_pixel");
  if (transform != "half_pixel" && transform != "output_half_pixel")
    ctx.fail("coordinate_transformation_mode '", transform, "' is not half_pixel or output_half_pixel");
  int64_t height = ctx.node().attrInt("output_height", 1), width = ctx.node().attrInt("output_width", 1);
  if (height <= 0 || width <= 0 || ctx.node().attrInt("sampling_ratio", 0) < 0)
    ctx.fail("output_height and output_width must be positive and sampling_ratio not negative");
  return {{ctx.dtype(0), {rois, ctx.shape(0)[1], Dim(height), Dim(width)}}};
}

Types maxUnpool(const InferContext &ctx) {
  ctx.requireDType(0, isFloatType, "a float type");
  ctx.requireRankAtLeast(0, 3);
  ctx.requireDType(1, [](DType t) { return t == DType::Int64; }, "i64");
  ctx.requireRank(1, ctx.rank(0));
  const Shape &x = ctx.shape(0);
  size_t n = x.size() - 2;
  for (size_t d = 0; d < x.size(); ++d)
    mergeDims(ctx, ctx.shape(1)[d], x[d], "the indices' and X's dims");
  std::vector<int64_t> kernel = intsAttribute(ctx, "kernel_shape", n, 1, 1);
  std::vector<int64_t> strides = intsAttribute(ctx, "strides", n, 1, 1);
  std::vector<int64_t> pads = intsAttribute(ctx, "pads", 2 * n, 0, 0);
  Shape out = {x[0], x[1]};
  for (size_t d = 0; d < n; ++d) {
    if (!x[2 + d].isStatic()) {
      out.push_back(Dim::unknown());
      continue;
    }
    int64_t size = (x[2 + d].value() - 1) * strides[d] - pads[d] - pads[d + n] + kernel[d];
    if (size <= 0)
      ctx.fail("spatial dim ", d, " of the output would be ", size);
    out.push_back(Dim(size));
  }
  if (ctx.hasInput(2)) {
    ctx.requireDType(2, [](DType t) { return t == DType::Int64; }, "i64");
    ctx.requireRank(2, 1);
    std::optional<std::vector<int64_t>> shape = ctx.constantInts(2);
    if (!shape)
      return {{ctx.dtype(0), unknownShape(ctx.rank(0))}};
    if (shape->size() != x.size())
      ctx.failInput(2, "(output_shape) must have one value per dim of X");
    for (size_t d = 0; d < x.size(); ++d) {
      if (out[d].isStatic() && (*shape)[d] < out[d].value())
        ctx.fail("output_shape's dim ", d, " (", (*shape)[d], ") is smaller than the unpooled size ", out[d].value());
      out[d] = Dim((*shape)[d]);
    }
  }
  return {{ctx.dtype(0), out}};
}

} // namespace

void registerImageInference(InferTable &table) {
  table.add(OpKind::Col2Im, col2im);
  table.add(OpKind::DeformConv, deformConv);
  table.add(OpKind::RoiAlign, roiAlign);
  table.add(OpKind::MaxUnpool, maxUnpool);
}

} // namespace sinter::infer
