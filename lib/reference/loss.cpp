// Reference rules for the losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
//
// Input [N, C] or [N, C, d1, ...], target [N] or [N, d1, ...] of class indices, optional weight
// [C]. The loss at each target position is -input[n, target, d...] * weight[target] (weight 1
// without a weight input); a position whose target equals ignore_index contributes 0 and weighs
// 0. reduction "none" keeps the target's shape; "sum" adds; "mean" (the default) divides the sum by
// the sum of the weights of the positions that count. SoftmaxCrossEntropyLoss first takes the log
// of the softmax over the class axis (its optional second output) and applies the same loss.
// Computed in double; each output element rounds once.
#include "registry.h"
#include "tensor_helpers.h"

#include "sinter/support/error.h"

#include <cmath>
#include <limits>
#include <optional>

namespace sinter::reference {
namespace {

/// Log-softmax over axis 1 of [N, C, rest...] held as doubles.
std::vector<double> logSoftmaxOverClasses(const std::vector<double> &x, int64_t n, int64_t c,
                                          int64_t rest) {
  std::vector<double> out(x.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t r = 0; r < rest; ++r) {
      double maximum = -std::numeric_limits<double>::infinity();
      for (int64_t k = 0; k < c; ++k)
        maximum = std::max(maximum, x[size_t((i * c + k) * rest + r)]);
      double sum = 0;
      for (int64_t k = 0; k < c; ++k)
        sum += std::exp(x[size_t((i * c + k) * rest + r)] - maximum);
      double logSum = maximum + std::log(sum);
      for (int64_t k = 0; k < c; ++k)
        out[size_t((i * c + k) * rest + r)] = x[size_t((i * c + k) * rest + r)] - logSum;
    }
  return out;
}

/// The reduced (or per-position) loss of log-probabilities `x` [N, C, rest...].
Tensor negativeLogLikelihood(const Node &node, const std::vector<double> &x,
                             const std::vector<int64_t> &xDims, DType dtype, const Tensor &target,
                             const Tensor *weight) {
  if (xDims.size() < 2)
    userError(node.describe(), ": the input must be [N, C, ...], got rank ", xDims.size());
  int64_t n = xDims[0], c = xDims[1];
  int64_t rest = 1;
  for (size_t i = 2; i < xDims.size(); ++i)
    rest *= xDims[i];
  std::vector<int64_t> expected{n};
  expected.insert(expected.end(), xDims.begin() + 2, xDims.end());
  if (target.dims() != expected)
    userError(node.describe(), ": target has shape ", shapeStr(shapeOf(target.dims())),
              ", expected ", shapeStr(shapeOf(expected)));
  if (weight && (weight->rank() != 1 || weight->dims()[0] != c))
    userError(node.describe(), ": weight must be [", c, "], got ",
              shapeStr(shapeOf(weight->dims())));
  std::string reduction = node.attrString("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    userError(node.describe(), ": reduction '", reduction, "' is not none, sum or mean");
  std::optional<int64_t> ignore;
  if (node.hasAttr("ignore_index"))
    ignore = node.attrInt("ignore_index", 0);

  std::vector<double> losses(size_t(n * rest));
  double weightSum = 0, lossSum = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t r = 0; r < rest; ++r) {
      int64_t position = i * rest + r;
      int64_t label = target.getInt(position);
      if (ignore && label == *ignore) {
        losses[size_t(position)] = 0;
        continue;
      }
      if (label < 0 || label >= c)
        userError(node.describe(), ": target ", label, " at position ", position,
                  " is not a class in [0, ", c, ")");
      double w = weight ? loadAsDouble(*weight, label) : 1.0;
      double loss = -x[size_t((i * c + label) * rest + r)] * w;
      losses[size_t(position)] = loss;
      lossSum += loss;
      weightSum += w;
    }
  if (reduction == "none")
    return fromDoubles(dtype, target.dims(), losses);
  double value = reduction == "sum" ? lossSum : lossSum / weightSum;
  return fromDoubles(dtype, {}, {value});
}

Outputs evalNegativeLogLikelihoodLoss(const Node &node, const Inputs &inputs) {
  const Tensor &input = requiredInput(node, inputs, 0);
  const Tensor &target = requiredInput(node, inputs, 1);
  return {negativeLogLikelihood(node, toDoubles(input), input.dims(), input.dtype(), target,
                                optionalInput(inputs, 2))};
}

Outputs evalSoftmaxCrossEntropyLoss(const Node &node, const Inputs &inputs) {
  const Tensor &scores = requiredInput(node, inputs, 0);
  const Tensor &labels = requiredInput(node, inputs, 1);
  if (scores.rank() < 2)
    userError(node.describe(), ": scores must be [N, C, ...], got rank ", scores.rank());
  int64_t n = scores.dims()[0], c = scores.dims()[1];
  int64_t rest = c == 0 ? 0 : scores.elementCount() / std::max<int64_t>(n * c, 1);
  std::vector<double> logProbabilities = logSoftmaxOverClasses(toDoubles(scores), n, c, rest);
  Outputs outputs{negativeLogLikelihood(node, logProbabilities, scores.dims(), scores.dtype(),
                                        labels, optionalInput(inputs, 2))};
  if (node.numOutputs() > 1)
    outputs.push_back(fromDoubles(scores.dtype(), scores.dims(), logProbabilities));
  return outputs;
}

} // namespace

void registerLossRules(RuleTable &table) {
  table.add(OpKind::NegativeLogLikelihoodLoss, evalNegativeLogLikelihoodLoss);
  table.add(OpKind::SoftmaxCrossEntropyLoss, evalSoftmaxCrossEntropyLoss);
}

} // namespace sinter::reference
