// Inference for the normalisations: batch, instance, group, layer and RMS normalisation,
// LpNormalization, LRN and MeanVarianceNormalization.
#include "infer_rules.h"


#include <algorithm>

namespace sinter::infer {
namespace {

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

void registerNormalizationInference(InferTable &table) {
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
