// Reference rules for Conv and ConvTranspose (DeformConv and Col2Im are in convolution_deform.cpp
// and convolution_col2im.cpp). Tensors are [N, C, D1 .. Dn] with any number of spatial dims.
//
// The window geometry (strides, dilations, padding, output extents) is windowGeometry's
// (sinter/ir/op_attributes.h), which lowering resolves the same way.
//
// Values are read as double and every sum is in double; results round once on store.
#include "tensor_index.h"
#include "sinter/ir/op_attributes.h"
#include "registry.h"
#include "tensor_helpers.h"

#include <cmath>
#include <limits>
#include <utility>

namespace sinter::reference {
namespace {

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

/// Conv's and ConvTranspose's input and weights, checked alike: one float dtype (the bias's too),
/// [N, C, spatial...] and weights of the same rank.
std::pair<const Tensor &, const Tensor &> convolutionOperands(const Node &node, const Inputs &inputs) {
  const Tensor &x = requiredInput(node, inputs, 0);
  const Tensor &w = requiredInput(node, inputs, 1);
  requireSameDTypes(node, inputs, {0, 1, 2});
  requireFloat(node, x);
  requireImage(node, x, 3);
  if (w.rank() != x.rank())
    userError(node.describe(), ": weights ", shapeStr(w.type().shape), " and input ",
              shapeStr(x.type().shape), " differ in rank");
  return {x, w};
}

// ---- Conv -----------------------------------------------------------------------------------

Outputs evalConv(const Node &node, const Inputs &inputs) {
  const auto [x, w] = convolutionOperands(node, inputs);
  int64_t batch = x.dims()[0], channels = x.dims()[1], features = w.dims()[0];
  int64_t group = node.attrInt("group", 1);
  if (group < 1 || channels != w.dims()[1] * group || features % group != 0)
    userError(node.describe(), ": input channels ", channels, ", weights ",
              shapeStr(w.type().shape), " and group ", group, " do not agree");
  WindowGeometry g = windowGeometry(node, spatialDims(x), kernelFromWeights(node, w));
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

// The adjoint of Conv: input position p scatters x * w into the output positions
// windowGeometry gives (transposedWindowExtent: output_shape, SAME_* and output_padding).
// W is [C, M / group, k...].
Outputs evalConvTranspose(const Node &node, const Inputs &inputs) {
  const auto [x, w] = convolutionOperands(node, inputs);
  int64_t batch = x.dims()[0], channels = x.dims()[1];
  int64_t group = node.attrInt("group", 1);
  if (group < 1 || w.dims()[0] != channels || channels % group != 0)
    userError(node.describe(), ": input channels ", channels, ", weights ",
              shapeStr(w.type().shape), " and group ", group, " do not agree");
  int64_t groupFeatures = w.dims()[1], features = groupFeatures * group;
  int64_t groupChannels = channels / group;

  std::vector<int64_t> input = spatialDims(x), kernel = kernelFromWeights(node, w);
  const size_t rank = input.size();
  const WindowGeometry g = windowGeometry(node, input, kernel);
  const std::vector<int64_t> &output = g.output;
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
            int64_t o = g.position(i, inAt[i], kernelAt[i]);
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

} // namespace

void registerConvolutionRules(RuleTable &table) {
  table.add(OpKind::Conv, evalConv);
  table.add(OpKind::ConvTranspose, evalConvTranspose);
}

} // namespace sinter::reference
