// Inference for the training losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
#include "infer_rules.h"

namespace sinter::infer {
namespace {

/// The loss shape: the target's with reduction "none", else a scalar.
Types loss(const InferContext &ctx) {
  ctx.requireDType(0, isFloatType, "a float type");
  ctx.requireDType(1, isIndexType, "i32 or i64");
  ctx.requireRankAtLeast(0, 2);
  ctx.requireRank(1, ctx.rank(0) - 1);
  if (ctx.hasInput(2)) {
    ctx.requireSameDType(2, 0);
    ctx.requireRank(2, 1);
  }
  std::string reduction = ctx.node().attrString("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    ctx.fail("attribute 'reduction' must be none, sum or mean, not \"", reduction, "\"");
  const Shape &input = ctx.shape(0), &target = ctx.shape(1);
  Shape perPosition{mergeDims(ctx, input[0], target[0], "the batch dims of input and target")};
  for (size_t d = 2; d < input.size(); ++d)
    perPosition.push_back(mergeDims(ctx, input[d], target[d - 1],
                                    detail::concat("dim ", d, " of the input and dim ", d - 1,
                                                   " of the target")));
  Types out{{ctx.dtype(0), reduction == "none" ? perPosition : Shape{}}};
  if (ctx.numOutputs() > 1)
    out.push_back(ctx.type(0));
  return out;
}

} // namespace

void registerLossInference(InferTable &table) {
  table.add(OpKind::NegativeLogLikelihoodLoss, loss);
  table.add(OpKind::SoftmaxCrossEntropyLoss, loss);
}

} // namespace sinter::infer
