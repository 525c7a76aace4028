// Reference rule for DeformConv (2-D): a convolution whose every kernel tap reads the input at
// its usual place moved by a learned offset, interpolated bilinearly (zero outside the image),
// and scaled by a mask:
//   y[n, o, p] = B[o] + sum_{c in o's group, k} W[o, c, k] * mask[n, g, k, p]
//                * bilinear(X[n, c], p * stride - pad + k * dilation + offset[n, g, k, p])
// with g the offset group of channel c (offset's channels: per group, per tap, (dy, dx)).
#include "tensor_index.h"
#include "registry.h"
#include "tensor_helpers.h"

#include <cmath>

namespace sinter::reference {
namespace {

Outputs evalDeformConv(const Node &node, const Inputs &inputs) {
  const Tensor &xTensor = requiredInput(node, inputs, 0), &wTensor = requiredInput(node, inputs, 1);
  const Tensor &offsetTensor = requiredInput(node, inputs, 2);
  const Tensor *bias = optionalInput(inputs, 3), *maskTensor = optionalInput(inputs, 4);
  if (xTensor.rank() != 4)
    userError(node.describe(), ": only 2-D DeformConv (4-D X) is supported, X is ", shapeStr(xTensor.type().shape));
  int64_t batch = xTensor.dims()[0], channels = xTensor.dims()[1], height = xTensor.dims()[2], width = xTensor.dims()[3];
  int64_t outChannels = wTensor.dims()[0], perGroup = wTensor.dims()[1];
  int64_t kh = wTensor.dims()[2], kw = wTensor.dims()[3];
  int64_t group = node.attrInt("group", 1), offsetGroup = node.attrInt("offset_group", 1);
  std::vector<int64_t> strides = node.attrInts("strides", {1, 1}), dilations = node.attrInts("dilations", {1, 1});
  std::vector<int64_t> pads = node.attrInts("pads", {0, 0, 0, 0});
  int64_t oh = offsetTensor.dims()[2], ow = offsetTensor.dims()[3];
  int64_t taps = kh * kw;
  if (group <= 0 || offsetGroup <= 0 || perGroup * group != channels || outChannels % group != 0 ||
      channels % offsetGroup != 0 || offsetTensor.dims()[1] != offsetGroup * taps * 2 ||
      (maskTensor && maskTensor->dims()[1] != offsetGroup * taps))
    userError(node.describe(), ": X, W, offset and mask shapes do not agree with group and offset_group");
  std::vector<double> x = toDoubles(xTensor), w = toDoubles(wTensor), offset = toDoubles(offsetTensor);
  std::vector<double> mask = maskTensor ? toDoubles(*maskTensor) : std::vector<double>();
  std::vector<double> out(size_t(batch * outChannels * oh * ow), 0.0);
  auto pixel = [&](int64_t n, int64_t c, int64_t row, int64_t column) {
    if (row < 0 || row >= height || column < 0 || column >= width)
      return 0.0;
    return x[size_t(((n * channels + c) * height + row) * width + column)];
  };
  int64_t outPerGroup = outChannels / group, channelsPerOffsetGroup = channels / offsetGroup;
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t o = 0; o < outChannels; ++o)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double sum = bias ? bias->getDouble(o) : 0.0;
          for (int64_t ci = 0; ci < perGroup; ++ci) {
            int64_t c = (o / outPerGroup) * perGroup + ci, g = c / channelsPerOffsetGroup;
            for (int64_t k = 0; k < taps; ++k) {
              int64_t base = ((n * offsetGroup + g) * taps + k) * 2;
              double dy = offset[size_t((base * oh + i) * ow + j)];
              double dx = offset[size_t(((base + 1) * oh + i) * ow + j)];
              double y = double(i * strides[0] - pads[0] + (k / kw) * dilations[0]) + dy;
              double xPos = double(j * strides[1] - pads[1] + (k % kw) * dilations[1]) + dx;
              // Taps wholly outside the image (and NaN offsets) read zeros.
              if (!(y > -1 && y < double(height) && xPos > -1 && xPos < double(width)))
                continue;
              double y0 = std::floor(y), x0 = std::floor(xPos), fy = y - y0, fx = xPos - x0;
              int64_t r = int64_t(y0), s = int64_t(x0);
              double value = (1 - fy) * ((1 - fx) * pixel(n, c, r, s) + fx * pixel(n, c, r, s + 1)) +
                             fy * ((1 - fx) * pixel(n, c, r + 1, s) + fx * pixel(n, c, r + 1, s + 1));
              if (maskTensor)
                value *= mask[size_t((((n * offsetGroup + g) * taps + k) * oh + i) * ow + j)];
              sum += w[size_t((o * perGroup + ci) * taps + k)] * value;
            }
          }
          out[size_t(((n * outChannels + o) * oh + i) * ow + j)] = sum;
        }
  return {fromDoubles(xTensor.dtype(), {batch, outChannels, oh, ow}, out)};
}

} // namespace

void registerDeformConvRules(RuleTable &table) { table.add(OpKind::DeformConv, evalDeformConv); }

} // namespace sinter::reference
