// Inference for object detection: RoiAlign (X [N, C, H, W], rois [R, 4], batch_indices [R] of
// i64; output [R, C, output_height, output_width]) and NonMaxSuppression ([selected, 3] i64).
#include "infer_rules.h"

namespace sinter::infer {
namespace {

/// NonMaxSuppression: [selected, 3] int64, the count known only from the data.
Types nonMaxSuppression(const InferContext &ctx) {
  ctx.requireDType(0, isFloatType, "a float type");
  ctx.requireSameDType(0, 1);
  ctx.requireRank(0, 3);
  ctx.requireRank(1, 3);
  int64_t centered = ctx.node().attrInt("center_point_box", 0);
  if (centered != 0 && centered != 1)
    ctx.fail("attribute 'center_point_box' must be 0 or 1, not ", centered);
  return {{DType::Int64, {Dim::unknown(), Dim(3)}}};
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

} // namespace

void registerDetectionInference(InferTable &table) {
  table.add(OpKind::NonMaxSuppression, nonMaxSuppression);
  table.add(OpKind::RoiAlign, roiAlign);
}

} // namespace sinter::infer
