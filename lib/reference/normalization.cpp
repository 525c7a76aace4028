// Reference rules for the normalisations (ai.onnx opset 23): BatchNormalization, LayerNormalization,
// RMSNormalization, GroupNormalization (opset-21 form: scale and bias per channel),
// InstanceNormalization, MeanVarianceNormalization, LpNormalization and LRN.
//
// Statistics (means, variances, norms) are computed in double with two passes (mean first, then
// the mean squared deviation), and every output element rounds once to its dtype. Variances are
// population variances (divide by the count), as the spec's formulas say. Epsilon attributes are
// floats in ONNX and are used at float precision, as exporters wrote them.
#include "dispatch.h"
#include "tensor_index.h"
#include "reduction.h"
#include "registry.h"

#include "sinter/ir/op_attributes.h"

#include <cmath>

namespace sinter::reference {
namespace {

void requireFloat(const Node &node, const Tensor &tensor, int index) {
  if (!isFloat(tensor.dtype()))
    userError(node.describe(), ": input ", index, " must be a float tensor, not ",
              dtypeName(tensor.dtype()));
}

/// UserError unless input `index` has exactly `count` elements (one per channel).
void requireChannelVector(const Node &node, const Tensor &tensor, int index, int64_t count) {
  if (tensor.elementCount() != count)
    userError(node.describe(), ": input ", index, " has shape ", shapeStr(shapeOf(tensor.dims())),
              " but must hold one value per channel (", count, ")");
}

/// UserError unless input `index` broadcasts to x's shape without widening it.
void requireBroadcastsTo(const Node &node, const Tensor &tensor, int index, const Tensor &x) {
  if (broadcastDims(node, {x.dims(), tensor.dims()}) != x.dims())
    userError(node.describe(), ": input ", index, " of shape ", shapeStr(shapeOf(tensor.dims())),
              " does not broadcast to the input's shape ", shapeStr(shapeOf(x.dims())));
}

struct Moments {
  double mean = 0;
  double variance = 0;
};

/// Mean and population variance of `count` consecutive elements from `start`.
Moments momentsOf(const Tensor &x, int64_t start, int64_t count) {
  Moments moments;
  for (int64_t i = 0; i < count; ++i)
    moments.mean += loadAsDouble(x, start + i);
  moments.mean /= static_cast<double>(count);
  for (int64_t i = 0; i < count; ++i) {
    double deviation = loadAsDouble(x, start + i) - moments.mean;
    moments.variance += deviation * deviation;
  }
  moments.variance /= static_cast<double>(count);
  return moments;
}

/// The dtype named by a stash_type attribute (float types only).
DType stashTypeOf(const Node &node) {
  int64_t stashType = node.attrInt("stash_type", 1);
  std::optional<DType> dtype = dtypeFromOnnx(static_cast<int>(stashType));
  if (!dtype || !isFloat(*dtype))
    userError(node.describe(), ": stash_type ", stashType, " is not a float type");
  return *dtype;
}

/// BatchNormalization. Inference: y = (x - mean) / sqrt(var + epsilon) * scale + bias per channel
/// (dim 1). Training: the batch's own mean and variance normalise, and outputs 1 and 2 are the
/// running statistics, input * momentum + batch * (1 - momentum).
Outputs batchNormalization(const Node &node, const Inputs &inputs) {
  const Tensor &x = *inputs[0];
  requireFloat(node, x, 0);
  if (x.rank() < 2)
    userError(node.describe(), ": the input must have rank 2 or more (N, C, ...), not ", x.rank());
  AxisSplit split = splitAtAxis(x.dims(), 1); // outer N, size C, inner spatial
  int64_t channels = split.size;
  for (int i = 1; i < 5; ++i) {
    requireFloat(node, *inputs[i], i);
    requireChannelVector(node, *inputs[i], i, channels);
  }
  bool training = node.attrInt("training_mode", 0) != 0;
  if (!training && node.numOutputs() > 1)
    userError(node.describe(), ": running_mean and running_var outputs need training_mode=1");
  double epsilon = normalizationEpsilon(node);
  double momentum = node.attrFloat("momentum", 0.9f);

  const Tensor &runningMean = *inputs[3];
  const Tensor &runningVariance = *inputs[4];
  std::vector<double> mean(channels), variance(channels);
  for (int64_t c = 0; c < channels; ++c) {
    if (!training) {
      mean[c] = loadAsDouble(runningMean, c);
      variance[c] = loadAsDouble(runningVariance, c);
      continue;
    }
    double count = static_cast<double>(split.outer * split.inner);
    for (int64_t n = 0; n < split.outer; ++n)
      for (int64_t s = 0; s < split.inner; ++s)
        mean[c] += loadAsDouble(x, split.at(n, c, s));
    mean[c] /= count;
    for (int64_t n = 0; n < split.outer; ++n)
      for (int64_t s = 0; s < split.inner; ++s) {
        double deviation = loadAsDouble(x, split.at(n, c, s)) - mean[c];
        variance[c] += deviation * deviation;
      }
    variance[c] /= count;
  }

  Outputs outputs;
  Tensor y(x.dtype(), x.dims());
  for (int64_t n = 0; n < split.outer; ++n)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t s = 0; s < split.inner; ++s) {
        int64_t at = split.at(n, c, s);
        double normalized = (loadAsDouble(x, at) - mean[c]) / std::sqrt(variance[c] + epsilon);
        storeFromDouble(y, at, normalized * loadAsDouble(*inputs[1], c) + loadAsDouble(*inputs[2], c));
      }
  outputs.push_back(std::move(y));
  if (node.numOutputs() > 1) {
    Tensor outMean(runningMean.dtype(), runningMean.dims());
    Tensor outVariance(runningVariance.dtype(), runningVariance.dims());
    for (int64_t c = 0; c < channels; ++c) {
      storeFromDouble(outMean, c, loadAsDouble(runningMean, c) * momentum + mean[c] * (1 - momentum));
      storeFromDouble(outVariance, c,
                      loadAsDouble(runningVariance, c) * momentum + variance[c] * (1 - momentum));
    }
    outputs.push_back(std::move(outMean));
    if (node.numOutputs() > 2)
      outputs.push_back(std::move(outVariance));
  }
  return outputs;
}

/// LayerNormalization over the dims from `axis` on: y = (x - mean) * invStdDev * scale + bias,
/// with scale and bias broadcast to x. Optional outputs Mean and InvStdDev have x's dims with
/// the normalised dims set to 1, and the stash_type dtype.
Outputs layerNormalization(const Node &node, const Inputs &inputs) {
  const Tensor &x = *inputs[0];
  requireFloat(node, x, 0);
  if (x.rank() == 0)
    userError(node.describe(), ": the input must have rank 1 or more");
  int64_t axis = normalizeAxis(node, node.attrInt("axis", -1), x.rank());
  double epsilon = normalizationEpsilon(node);
  DType stashType = stashTypeOf(node);
  const Tensor &scale = *inputs[1];
  const Tensor *bias = inputs.size() > 2 ? inputs[2] : nullptr;
  requireBroadcastsTo(node, scale, 1, x);
  if (bias)
    requireBroadcastsTo(node, *bias, 2, x);
  BroadcastIndexer scaleIndex(scale.dims(), x.dims());
  BroadcastIndexer biasIndex(bias ? bias->dims() : std::vector<int64_t>{}, x.dims());

  std::vector<int64_t> statsDims = x.dims();
  for (int64_t d = axis; d < x.rank(); ++d)
    statsDims[d] = 1;
  int64_t rows = productOf(statsDims);
  int64_t columns = productOf(std::vector<int64_t>(x.dims().begin() + axis, x.dims().end()));
  Tensor y(x.dtype(), x.dims());
  Tensor meanOut(stashType, statsDims), invStdDevOut(stashType, statsDims);
  for (int64_t row = 0; row < rows; ++row) {
    Moments moments = momentsOf(x, row * columns, columns);
    double invStdDev = 1 / std::sqrt(moments.variance + epsilon);
    for (int64_t column = 0; column < columns; ++column) {
      int64_t at = row * columns + column;
      double value = (loadAsDouble(x, at) - moments.mean) * invStdDev * loadAsDouble(scale, scaleIndex(at));
      if (bias)
        value += loadAsDouble(*bias, biasIndex(at));
      storeFromDouble(y, at, value);
    }
    storeFromDouble(meanOut, row, moments.mean);
    storeFromDouble(invStdDevOut, row, invStdDev);
  }
  Outputs outputs;
  outputs.push_back(std::move(y));
  if (node.numOutputs() > 1)
    outputs.push_back(std::move(meanOut));
  if (node.numOutputs() > 2)
    outputs.push_back(std::move(invStdDevOut));
  return outputs;
}

/// RMSNormalization over the dims from `axis` on: y = x / sqrt(mean(x^2) + epsilon) * scale.
Tensor rmsNormalization(const Node &node, const Inputs &inputs) {
  const Tensor &x = *inputs[0];
  requireFloat(node, x, 0);
  if (x.rank() == 0)
    userError(node.describe(), ": the input must have rank 1 or more");
  int64_t axis = normalizeAxis(node, node.attrInt("axis", -1), x.rank());
  double epsilon = normalizationEpsilon(node);
  stashTypeOf(node); // validated; the computation is in double regardless
  const Tensor &scale = *inputs[1];
  requireBroadcastsTo(node, scale, 1, x);
  BroadcastIndexer scaleIndex(scale.dims(), x.dims());
  int64_t columns = productOf(std::vector<int64_t>(x.dims().begin() + axis, x.dims().end()));
  int64_t rows = productOf(std::vector<int64_t>(x.dims().begin(), x.dims().begin() + axis));
  Tensor y(x.dtype(), x.dims());
  for (int64_t row = 0; row < rows; ++row) {
    double meanSquare = 0;
    for (int64_t column = 0; column < columns; ++column) {
      double value = loadAsDouble(x, row * columns + column);
      meanSquare += value * value;
    }
    meanSquare /= static_cast<double>(columns);
    double rms = std::sqrt(meanSquare + epsilon);
    for (int64_t column = 0; column < columns; ++column) {
      int64_t at = row * columns + column;
      storeFromDouble(y, at, loadAsDouble(x, at) / rms * loadAsDouble(scale, scaleIndex(at)));
    }
  }
  return y;
}

/// GroupNormalization (opset 21) and InstanceNormalization (one group per channel): the
/// channels of each instance split into `groups` equal groups; each group normalises by its own
/// mean and variance, then each channel scales and shifts by its own scale and bias.
Tensor groupNormalization(const Node &node, const Inputs &inputs, int64_t groups) {
  const Tensor &x = *inputs[0];
  requireFloat(node, x, 0);
  if (x.rank() < 2)
    userError(node.describe(), ": the input must have rank 2 or more (N, C, ...), not ", x.rank());
  AxisSplit split = splitAtAxis(x.dims(), 1);
  int64_t channels = split.size;
  if (groups <= 0 || channels % groups != 0)
    userError(node.describe(), ": ", channels, " channels do not split into ", groups, " groups");
  for (int i = 1; i < 3; ++i) {
    requireFloat(node, *inputs[i], i);
    requireChannelVector(node, *inputs[i], i, channels);
  }
  double epsilon = normalizationEpsilon(node);
  int64_t channelsPerGroup = channels / groups;
  int64_t groupSize = channelsPerGroup * split.inner; // a group's elements are consecutive
  Tensor y(x.dtype(), x.dims());
  for (int64_t n = 0; n < split.outer; ++n) {
    for (int64_t g = 0; g < groups; ++g) {
      int64_t start = split.at(n, g * channelsPerGroup, 0);
      Moments moments = momentsOf(x, start, groupSize);
      double invStdDev = 1 / std::sqrt(moments.variance + epsilon);
      for (int64_t i = 0; i < groupSize; ++i) {
        int64_t channel = g * channelsPerGroup + i / split.inner;
        double normalized = (loadAsDouble(x, start + i) - moments.mean) * invStdDev;
        storeFromDouble(y, start + i,
                        normalized * loadAsDouble(*inputs[1], channel) +
                            loadAsDouble(*inputs[2], channel));
      }
    }
  }
  return y;
}

/// MeanVarianceNormalization, ONNX's function: (x - mean) / (sqrt(variance) + 1e-9), with mean
/// and variance over `axes` (default [0, 2, 3]).
Tensor meanVarianceNormalization(const Node &node, const Tensor &x) {
  requireFloat(node, x, 0);
  ReductionPlan plan = planReduction(node, x.dims(), node.attrInts("axes", {0, 2, 3}), true);
  std::vector<double> mean(plan.outCount), variance(plan.outCount);
  std::vector<int64_t> count(plan.outCount);
  for (int64_t i = 0; i < x.elementCount(); ++i) {
    mean[plan.outIndexOf[i]] += loadAsDouble(x, i);
    ++count[plan.outIndexOf[i]];
  }
  for (int64_t o = 0; o < plan.outCount; ++o)
    mean[o] /= static_cast<double>(count[o]);
  for (int64_t i = 0; i < x.elementCount(); ++i) {
    double deviation = loadAsDouble(x, i) - mean[plan.outIndexOf[i]];
    variance[plan.outIndexOf[i]] += deviation * deviation;
  }
  Tensor y(x.dtype(), x.dims());
  for (int64_t i = 0; i < x.elementCount(); ++i) {
    int64_t o = plan.outIndexOf[i];
    double standardDeviation = std::sqrt(variance[o] / static_cast<double>(count[o]));
    storeFromDouble(y, i, (loadAsDouble(x, i) - mean[o]) / (standardDeviation + 1e-9));
  }
  return y;
}

/// LpNormalization: x divided by its L1 or L2 norm along `axis`; a zero norm gives 0.
Tensor lpNormalization(const Node &node, const Tensor &x) {
  requireFloat(node, x, 0);
  if (x.rank() == 0)
    userError(node.describe(), ": the input must have rank 1 or more");
  int64_t axis = normalizeAxis(node, node.attrInt("axis", -1), x.rank());
  int64_t p = node.attrInt("p", 2);
  if (p != 1 && p != 2)
    userError(node.describe(), ": p must be 1 or 2, not ", p);
  AxisSplit split = splitAtAxis(x.dims(), axis);
  Tensor y(x.dtype(), x.dims());
  for (int64_t o = 0; o < split.outer; ++o)
    for (int64_t i = 0; i < split.inner; ++i) {
      double norm = 0;
      for (int64_t k = 0; k < split.size; ++k) {
        double value = loadAsDouble(x, split.at(o, k, i));
        norm += p == 1 ? std::fabs(value) : value * value;
      }
      if (p == 2)
        norm = std::sqrt(norm);
      for (int64_t k = 0; k < split.size; ++k) {
        int64_t at = split.at(o, k, i);
        storeFromDouble(y, at, norm == 0 ? 0.0 : loadAsDouble(x, at) / norm);
      }
    }
  return y;
}

/// LRN across channels: y = x / (bias + alpha / size * sum of squares)^beta, the sum over the
/// channels from c - floor((size - 1) / 2) to c + ceil((size - 1) / 2), clipped to the tensor.
Tensor localResponseNormalization(const Node &node, const Tensor &x) {
  requireFloat(node, x, 0);
  if (x.rank() < 2)
    userError(node.describe(), ": the input must have rank 2 or more (N, C, ...), not ", x.rank());
  int64_t size = node.attrInt("size", 0);
  if (size <= 0)
    userError(node.describe(), ": size must be positive, not ", size);
  double alpha = node.attrFloat("alpha", 1e-4f);
  double beta = node.attrFloat("beta", 0.75f);
  double bias = node.attrFloat("bias", 1.0f);
  AxisSplit split = splitAtAxis(x.dims(), 1);
  int64_t before = (size - 1) / 2;
  int64_t after = size - 1 - before; // ceil((size - 1) / 2)
  Tensor y(x.dtype(), x.dims());
  for (int64_t n = 0; n < split.outer; ++n)
    for (int64_t c = 0; c < split.size; ++c)
      for (int64_t s = 0; s < split.inner; ++s) {
        double sumOfSquares = 0;
        for (int64_t k = std::max<int64_t>(0, c - before); k <= std::min(split.size - 1, c + after); ++k) {
          double value = loadAsDouble(x, split.at(n, k, s));
          sumOfSquares += value * value;
        }
        int64_t at = split.at(n, c, s);
        storeFromDouble(y, at, loadAsDouble(x, at) /
                                   std::pow(bias + alpha / static_cast<double>(size) * sumOfSquares, beta));
      }
  return y;
}

} // namespace

void registerNormalizationRules(RuleTable &table) {
  table.add(OpKind::BatchNormalization, batchNormalization);
  table.add(OpKind::LayerNormalization, layerNormalization);
  table.add(OpKind::RMSNormalization, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {rmsNormalization(node, inputs)};
  });
  table.add(OpKind::GroupNormalization, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {groupNormalization(node, inputs, node.attrInt("num_groups", 0))};
  });
  table.add(OpKind::InstanceNormalization, [](const Node &node, const Inputs &inputs) -> Outputs {
    int64_t channels = inputs[0]->rank() >= 2 ? inputs[0]->dims()[1] : 0;
    return {groupNormalization(node, inputs, channels)};
  });
  table.add(OpKind::MeanVarianceNormalization, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {meanVarianceNormalization(node, *inputs[0])};
  });
  table.add(OpKind::LpNormalization, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {lpNormalization(node, *inputs[0])};
  });
  table.add(OpKind::LRN, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {localResponseNormalization(node, *inputs[0])};
  });
}

} // namespace sinter::reference
