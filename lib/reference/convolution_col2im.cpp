// Reference rule for Col2Im: the inverse of im2col. Input [N, C * prod(block), L] holds, for each
// of the L block positions (row-major over the sweep of the block across the padded image), the
// block's C * prod(block) values; each is added into the image element it covers (elements in
// the padding are dropped). Output [N, C, image_shape...].
#include "tensor_index.h"
#include "registry.h"
#include "tensor_helpers.h"

namespace sinter::reference {
namespace {

Outputs evalCol2Im(const Node &node, const Inputs &inputs) {
  const Tensor &x = requiredInput(node, inputs, 0);
  std::vector<int64_t> image = requiredInput(node, inputs, 1).toInts();
  std::vector<int64_t> block = requiredInput(node, inputs, 2).toInts();
  size_t n = image.size();
  if (x.rank() != 3 || block.size() != n || n == 0)
    userError(node.describe(), ": needs a 3-D input and one image and block size per spatial dim");
  std::vector<int64_t> dilations = node.attrInts("dilations", std::vector<int64_t>(n, 1));
  std::vector<int64_t> strides = node.attrInts("strides", std::vector<int64_t>(n, 1));
  std::vector<int64_t> pads = node.attrInts("pads", std::vector<int64_t>(2 * n, 0));
  if (dilations.size() != n || strides.size() != n || pads.size() != 2 * n)
    userError(node.describe(), ": dilations, strides and pads must have one value per spatial dim (pads two)");
  std::vector<int64_t> sweep(n);
  int64_t blockSize = productOf(block);
  for (size_t d = 0; d < n; ++d) {
    int64_t effective = dilations[d] * (block[d] - 1) + 1;
    int64_t padded = image[d] + pads[d] + pads[d + n];
    if (image[d] <= 0 || block[d] <= 0 || strides[d] <= 0 || dilations[d] <= 0 || padded < effective)
      userError(node.describe(), ": block ", block[d], " does not fit image dim ", image[d]);
    sweep[d] = (padded - effective) / strides[d] + 1;
  }
  int64_t batch = x.dims()[0], rows = x.dims()[1], positions = x.dims()[2];
  if (blockSize == 0 || rows % blockSize != 0 || productOf(sweep) != positions)
    userError(node.describe(), ": input ", shapeStr(x.type().shape), " does not hold ", productOf(sweep),
              " positions of blocks of ", blockSize);
  int64_t channels = rows / blockSize;
  std::vector<int64_t> outDims = {batch, channels};
  outDims.insert(outDims.end(), image.begin(), image.end());
  std::vector<double> in = toDoubles(x), out(size_t(productOf(outDims)), 0.0);
  int64_t imageSize = productOf(image);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t row = 0; row < rows; ++row) {
      int64_t c = row / blockSize;
      std::vector<int64_t> offset = unravel(row % blockSize, block);
      for (int64_t p = 0; p < positions; ++p) {
        std::vector<int64_t> at = unravel(p, sweep), pixel(n);
        bool inside = true;
        for (size_t d = 0; d < n; ++d) {
          pixel[d] = at[d] * strides[d] - pads[d] + offset[d] * dilations[d];
          inside = inside && pixel[d] >= 0 && pixel[d] < image[d];
        }
        if (inside)
          out[size_t((b * channels + c) * imageSize + ravel(pixel, image))] += in[size_t((b * rows + row) * positions + p)];
      }
    }
  return {fromDoubles(x.dtype(), outDims, out)};
}

} // namespace

void registerCol2ImRules(RuleTable &table) { table.add(OpKind::Col2Im, evalCol2Im); }

} // namespace sinter::reference
