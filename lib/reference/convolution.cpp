// Reference rules for convolution and pooling: Conv, ConvTranspose, MaxPool, AveragePool, LpPool,
// GlobalAveragePool, GlobalMaxPool. Tensors are [N, C, D1 .. Dn] with any number of spatial dims.
//
// The window geometry (strides, dilations, padding, output extents) is windowGeometry's
// (sinter/ir/op_attributes.h), which lowering resolves the same way.
//
// AveragePool divides by the window elements inside the input (count_include_pad = 0) or inside
// the input and its explicit pads (count_include_pad = 1); the part of a ceil_mode window that
// hangs past the end padding never counts.
//
// Values are read as double and every sum is in double; results round once on store.
#include "indexing.h"
#include "sinter/ir/op_attributes.h"
#include "registry.h"
#include "tensor_helpers.h"

#include <cmath>
#include <limits>

namespace sinter::reference {
namespace {

/// UserError unless `x` is [N, C, spatial...] with at least `minRank` dims.
void requireImage(const Node &node, const Tensor &x, int minRank) {
  if (x.rank() < minRank)
    userError(node.describe(), ": input must be [N, C, D1, ...] of rank >= ", minRank, ", got ",
              shapeStr(x.type().shape));
}

void requireFloat(const Node &node, const Tensor &x) {
  if (!isFloat(x.dtype()))
    unsupportedDType(node, x.dtype());
}

std::vector<int64_t> spatialDims(const Tensor &x) {
  return std::vector<int64_t>(x.dims().begin() + 2, x.dims().end());
}

/// The kernel extent: W's spatial dims, checked against a kernel_shape attribute when present.
std::vector<int64_t> kernelFromWeights(const Node &node, const Tensor &w) {
  std::vector<int64_t> kernel(w.dims().begin() + 2, w.dims().end());
  if (node.hasAttr("kernel_shape") && node.attrInts("kernel_shape") != kernel)
    userError(node.describe(), ": kernel_shape ", shapeStr(shapeOf(node.attrInts("kernel_shape"))),
              " does not match the weights ", shapeStr(w.type().shape));
  return kernel;
}

/// The bias values (M of them), or zeros when the bias is absent.
std::vector<double> biasValues(const Node &node, const Tensor *bias, int64_t channels) {
  if (!bias)
    return std::vector<double>(channels, 0.0);
  if (bias->rank() != 1 || bias->dims()[0] != channels)
    userError(node.describe(), ": bias must be [", channels, "], got ",
              shapeStr(bias->type().shape));
  return toDoubles(*bias);
}

// ---- Conv -----------------------------------------------------------------------------------

Outputs evalConv(const Node &node, const Inputs &inputs) {
  const Tensor &x = requiredInput(node, inputs, 0);
  const Tensor &w = requiredInput(node, inputs, 1);
  requireSameDTypes(node, inputs, {0, 1, 2});
  requireFloat(node, x);
  requireImage(node, x, 3);
  if (w.rank() != x.rank())
    userError(node.describe(), ": weights ", shapeStr(w.type().shape), " and input ",
              shapeStr(x.type().shape), " differ in rank");
  int64_t batch = x.dims()[0], channels = x.dims()[1], features = w.dims()[0];
  int64_t group = node.attrInt("group", 1);
  if (group < 1 || channels != w.dims()[1] * group || features % group != 0)
    userError(node.describe(), ": input channels ", channels, ", weights ",
              shapeStr(w.type().shape), " and group ", group, " do not agree");
  WindowGeometry g = windowGeometry(node, spatialDims(x), kernelFromWeights(node, w), false);
  std::vector<double> bias = biasValues(node, optionalInput(inputs, 2), features);

  int64_t groupChannels = channels / group, groupFeatures = features / group;
  int64_t inSize = productOf(g.input), kernelSize = productOf(g.kernel);
  std::vector<int64_t> outDims = {batch, features};
  outDims.insert(outDims.end(), g.output.begin(), g.output.end());
  std::vector<double> xs = toDoubles(x), ws = toDoubles(w);
  std::vector<double> ys(static_cast<size_t>(productOf(outDims)), 0.0);
  int64_t outSize = productOf(g.output);
  std::vector<int64_t> inStrides = stridesOf(g.input);

  for (int64_t n = 0; n < batch; ++n)
    for (int64_t m = 0; m < features; ++m) {
      int64_t firstChannel = (m / groupFeatures) * groupChannels;
      std::vector<int64_t> outAt(g.rank(), 0);
      for (int64_t o = 0; o < outSize; ++o, nextIndex(outAt, g.output)) {
        double sum = bias[m];
        for (int64_t c = 0; c < groupChannels; ++c) {
          const double *plane = xs.data() + (n * channels + firstChannel + c) * inSize;
          const double *filter = ws.data() + (m * groupChannels + c) * kernelSize;
          std::vector<int64_t> kernelAt(g.rank(), 0);
          for (int64_t k = 0; k < kernelSize; ++k, nextIndex(kernelAt, g.kernel)) {
            int64_t offset = 0;
            bool inside = true;
            for (size_t i = 0; i < g.rank() && inside; ++i) {
              int64_t p = g.position(i, outAt[i], kernelAt[i]);
              inside = p >= 0 && p < g.input[i];
              offset += p * inStrides[i];
            }
            if (inside)
              sum += plane[offset] * filter[k];
          }
        }
        ys[(n * features + m) * outSize + o] = sum;
      }
    }
  return {fromDoubles(x.dtype(), outDims, ys)};
}

// ---- ConvTranspose --------------------------------------------------------------------------

// The adjoint of Conv: input position p scatters x * w into output position
//   p * stride - pad_begin + k * dilation.
// W is [C, M / group, k...]. The output extent is
//   stride * (input - 1) + output_padding + window - pad_begin - pad_end,
// unless output_shape or SAME_* (which aims at input * stride) fixes it; then the total padding
// follows from that formula and is split with the odd element at the end for SAME_UPPER and at
// the beginning otherwise. A negative total (an output larger than the natural one) pads nothing
// at the beginning: an explicit output_shape grows at the end (as in ONNX's reference
// implementation and onnxruntime), while SAME_* keeps the natural extent (as ONNX's shape
// inference and onnxruntime do; the spec's formula would shift the output).
Outputs evalConvTranspose(const Node &node, const Inputs &inputs) {
  const Tensor &x = requiredInput(node, inputs, 0);
  const Tensor &w = requiredInput(node, inputs, 1);
  requireSameDTypes(node, inputs, {0, 1, 2});
  requireFloat(node, x);
  requireImage(node, x, 3);
  if (w.rank() != x.rank())
    userError(node.describe(), ": weights ", shapeStr(w.type().shape), " and input ",
              shapeStr(x.type().shape), " differ in rank");
  int64_t batch = x.dims()[0], channels = x.dims()[1];
  int64_t group = node.attrInt("group", 1);
  if (group < 1 || w.dims()[0] != channels || channels % group != 0)
    userError(node.describe(), ": input channels ", channels, ", weights ",
              shapeStr(w.type().shape), " and group ", group, " do not agree");
  int64_t groupFeatures = w.dims()[1], features = groupFeatures * group;
  int64_t groupChannels = channels / group;

  std::vector<int64_t> input = spatialDims(x), kernel = kernelFromWeights(node, w);
  size_t rank = input.size();
  std::vector<int64_t> strides = spatialAttribute(node, "strides", rank, 1, 1);
  std::vector<int64_t> dilations = spatialAttribute(node, "dilations", rank, 1, 1);
  std::vector<int64_t> outputPadding = spatialAttribute(node, "output_padding", rank, 0, 0);
  std::vector<int64_t> pads = spatialAttribute(node, "pads", 2 * rank, 0, 0);
  std::string autoPad = node.attrString("auto_pad", "NOTSET");
  if (autoPad != "NOTSET" && !autoPad.empty() && autoPad != "VALID" && autoPad != "SAME_UPPER" &&
      autoPad != "SAME_LOWER")
    userError(node.describe(), ": unknown auto_pad '", autoPad, "'");
  if (autoPad == "VALID")
    pads.assign(2 * rank, 0);

  std::vector<int64_t> outputShape = node.attrInts("output_shape");
  if (outputShape.size() == rank + 2) // tolerate [N, M, spatial...]
    outputShape.erase(outputShape.begin(), outputShape.begin() + 2);
  if (!outputShape.empty() && outputShape.size() != rank)
    userError(node.describe(), ": output_shape has ", outputShape.size(), " values but there are ",
              rank, " spatial dims");
  bool same = autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER";

  std::vector<int64_t> padBegin(rank), output(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t natural =
        strides[i] * (input[i] - 1) + outputPadding[i] + (kernel[i] - 1) * dilations[i] + 1;
    if (!outputShape.empty() || same) {
      int64_t target = outputShape.empty() ? input[i] * strides[i] : outputShape[i];
      int64_t total = natural - target;
      if (total < 0 && outputShape.empty())
        target = natural; // SAME_* never pads negatively
      padBegin[i] = total <= 0 ? 0 : autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      output[i] = target;
    } else {
      padBegin[i] = pads[i];
      output[i] = natural - pads[i] - pads[rank + i];
    }
    if (output[i] < 0)
      userError(node.describe(), ": the output extent along spatial dim ", i, " would be ",
                output[i]);
  }
  std::vector<double> bias = biasValues(node, optionalInput(inputs, 2), features);

  std::vector<int64_t> outDims = {batch, features};
  outDims.insert(outDims.end(), output.begin(), output.end());
  std::vector<double> xs = toDoubles(x), ws = toDoubles(w);
  std::vector<double> ys(static_cast<size_t>(productOf(outDims)), 0.0);
  int64_t inSize = productOf(input), outSize = productOf(output), kernelSize = productOf(kernel);
  std::vector<int64_t> outStrides = stridesOf(output);

  for (int64_t n = 0; n < batch; ++n)
    for (int64_t c = 0; c < channels; ++c) {
      int64_t groupIndex = c / groupChannels;
      std::vector<int64_t> inAt(rank, 0);
      for (int64_t p = 0; p < inSize; ++p, nextIndex(inAt, input)) {
        double value = xs[(n * channels + c) * inSize + p];
        std::vector<int64_t> kernelAt(rank, 0);
        for (int64_t k = 0; k < kernelSize; ++k, nextIndex(kernelAt, kernel)) {
          int64_t offset = 0;
          bool inside = true;
          for (size_t i = 0; i < rank && inside; ++i) {
            int64_t o = inAt[i] * strides[i] - padBegin[i] + kernelAt[i] * dilations[i];
            inside = o >= 0 && o < output[i];
            offset += o * outStrides[i];
          }
          if (!inside)
            continue;
          for (int64_t m = 0; m < groupFeatures; ++m) {
            int64_t feature = groupIndex * groupFeatures + m;
            ys[(n * features + feature) * outSize + offset] +=
                value * ws[(c * groupFeatures + m) * kernelSize + k];
          }
        }
      }
    }
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t m = 0; m < features; ++m)
      for (int64_t o = 0; o < outSize; ++o)
        ys[(n * features + m) * outSize + o] += bias[m];
  return {fromDoubles(x.dtype(), outDims, ys)};
}

// ---- Pools ----------------------------------------------------------------------------------

enum class PoolKind { Max, Average, Lp };

/// Shared by MaxPool, AveragePool and LpPool: walks every window and hands its elements to the
/// per-kind reduction.
Outputs evalPool(const Node &node, const Inputs &inputs, PoolKind kind) {
  const Tensor &x = requiredInput(node, inputs, 0);
  requireImage(node, x, 3);
  if (kind == PoolKind::Max) {
    if (!isFloat(x.dtype()) && x.dtype() != DType::Int8 && x.dtype() != DType::Uint8)
      unsupportedDType(node, x.dtype());
  } else {
    requireFloat(node, x);
  }
  std::vector<int64_t> kernel = node.attrInts("kernel_shape");
  if (kernel.size() != size_t(x.rank() - 2))
    userError(node.describe(), ": kernel_shape has ", kernel.size(), " values but the input has ",
              x.rank() - 2, " spatial dims");
  bool ceilMode = node.attrInt("ceil_mode", 0) != 0;
  WindowGeometry g = windowGeometry(node, spatialDims(x), kernel, ceilMode);
  bool countPadding = node.attrInt("count_include_pad", 0) != 0;
  bool columnMajor = node.attrInt("storage_order", 0) != 0;
  double p = double(node.attrInt("p", 2));
  bool wantIndices = kind == PoolKind::Max && node.numOutputs() > 1;

  int64_t batch = x.dims()[0], channels = x.dims()[1];
  std::vector<int64_t> outDims = {batch, channels};
  outDims.insert(outDims.end(), g.output.begin(), g.output.end());
  int64_t inSize = productOf(g.input), outSize = productOf(g.output),
          kernelSize = productOf(kernel);
  std::vector<int64_t> inStrides = stridesOf(g.input);
  // Column-major (storage_order = 1) strides for the Indices output: first spatial dim fastest.
  std::vector<int64_t> columnStrides(g.rank(), 1);
  for (size_t i = 1; i < g.rank(); ++i)
    columnStrides[i] = columnStrides[i - 1] * g.input[i - 1];

  std::vector<double> xs = toDoubles(x);
  std::vector<double> ys(static_cast<size_t>(productOf(outDims)), 0.0);
  Tensor indices(DType::Int64, outDims);
  for (int64_t plane = 0; plane < batch * channels; ++plane) {
    const double *values = xs.data() + plane * inSize;
    std::vector<int64_t> outAt(g.rank(), 0);
    for (int64_t o = 0; o < outSize; ++o, nextIndex(outAt, g.output)) {
      double best = -std::numeric_limits<double>::infinity(), sum = 0;
      int64_t bestIndex = -1, count = 0;
      std::vector<int64_t> kernelAt(g.rank(), 0);
      for (int64_t k = 0; k < kernelSize; ++k, nextIndex(kernelAt, kernel)) {
        int64_t offset = 0, columnOffset = 0;
        bool inInput = true, inPadded = true;
        for (size_t i = 0; i < g.rank(); ++i) {
          int64_t at = g.position(i, outAt[i], kernelAt[i]);
          inInput = inInput && at >= 0 && at < g.input[i];
          inPadded = inPadded && at < g.input[i] + g.padEnd[i];
          offset += at * inStrides[i];
          columnOffset += at * columnStrides[i];
        }
        if (kind == PoolKind::Average && (countPadding ? inPadded : inInput))
          ++count;
        if (!inInput)
          continue;
        double value = values[offset];
        if (kind == PoolKind::Max && value > best) { // NaN never wins
          best = value;
          bestIndex = plane * inSize + (columnMajor ? columnOffset : offset);
        }
        sum += kind == PoolKind::Lp ? std::pow(std::fabs(value), p) : value;
      }
      int64_t outIndex = plane * outSize + o;
      if (kind == PoolKind::Max) {
        ys[outIndex] = best;
        indices.data<int64_t>()[outIndex] = bestIndex;
      } else if (kind == PoolKind::Average) {
        ys[outIndex] = sum / double(count);
      } else {
        ys[outIndex] = std::pow(sum, 1.0 / p);
      }
    }
  }
  Outputs outputs = {fromDoubles(x.dtype(), outDims, ys)};
  if (wantIndices)
    outputs.push_back(std::move(indices));
  return outputs;
}

Outputs evalMaxPool(const Node &node, const Inputs &inputs) {
  return evalPool(node, inputs, PoolKind::Max);
}
Outputs evalAveragePool(const Node &node, const Inputs &inputs) {
  return evalPool(node, inputs, PoolKind::Average);
}
Outputs evalLpPool(const Node &node, const Inputs &inputs) {
  return evalPool(node, inputs, PoolKind::Lp);
}

/// GlobalAveragePool and GlobalMaxPool: one window covering all spatial dims, kept as 1s.
Outputs evalGlobalPool(const Node &node, const Inputs &inputs, bool average) {
  const Tensor &x = requiredInput(node, inputs, 0);
  requireImage(node, x, 2);
  requireFloat(node, x);
  int64_t planes = x.dims()[0] * x.dims()[1];
  int64_t planeSize = productOf(spatialDims(x));
  std::vector<int64_t> outDims = {x.dims()[0], x.dims()[1]};
  outDims.resize(size_t(x.rank()), 1);
  std::vector<double> xs = toDoubles(x), ys(static_cast<size_t>(planes));
  for (int64_t plane = 0; plane < planes; ++plane) {
    double sum = 0, best = -std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < planeSize; ++i) {
      double value = xs[plane * planeSize + i];
      sum += value;
      best = std::isnan(value) || std::isnan(best) ? std::nan("") : std::max(best, value);
    }
    ys[plane] = average ? sum / double(planeSize) : best;
  }
  return {fromDoubles(x.dtype(), outDims, ys)};
}

Outputs evalGlobalAveragePool(const Node &node, const Inputs &inputs) {
  return evalGlobalPool(node, inputs, true);
}
Outputs evalGlobalMaxPool(const Node &node, const Inputs &inputs) {
  return evalGlobalPool(node, inputs, false);
}

} // namespace

void registerConvolutionRules(RuleTable &table) {
  table.add(OpKind::Conv, evalConv);
  table.add(OpKind::ConvTranspose, evalConvTranspose);
  table.add(OpKind::MaxPool, evalMaxPool);
  table.add(OpKind::AveragePool, evalAveragePool);
  table.add(OpKind::LpPool, evalLpPool);
  table.add(OpKind::GlobalAveragePool, evalGlobalAveragePool);
  table.add(OpKind::GlobalMaxPool, evalGlobalMaxPool);
}

} // namespace sinter::reference
