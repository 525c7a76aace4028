// Reference rule for MaxUnpool: an output of zeros with each X value written at its index (a
// flat index into the unpooled shape, (in - 1) * stride - pads + kernel per spatial dim, as
// MaxPool's indices give it). With output_shape the unpooled tensor sits at the start of each
// dim of the larger output.
#include "tensor_index.h"
#include "registry.h"
#include "tensor_helpers.h"

namespace sinter::reference {
namespace {

Outputs evalMaxUnpool(const Node &node, const Inputs &inputs) {
  const Tensor &x = requiredInput(node, inputs, 0), &indices = requiredInput(node, inputs, 1);
  const Tensor *outputShape = optionalInput(inputs, 2);
  if (indices.dims() != x.dims())
    userError(node.describe(), ": indices must have X's shape");
  size_t n = size_t(x.rank() - 2);
  std::vector<int64_t> kernel = node.attrInts("kernel_shape");
  std::vector<int64_t> strides = node.attrInts("strides", std::vector<int64_t>(n, 1));
  std::vector<int64_t> pads = node.attrInts("pads", std::vector<int64_t>(2 * n, 0));
  if (kernel.size() != n || strides.size() != n || pads.size() != 2 * n)
    userError(node.describe(), ": kernel_shape, strides and pads must have one value per spatial dim (pads two)");
  std::vector<int64_t> unpooled = {x.dims()[0], x.dims()[1]};
  for (size_t d = 0; d < n; ++d)
    unpooled.push_back((x.dims()[2 + d] - 1) * strides[d] - pads[d] - pads[d + n] + kernel[d]);
  std::vector<int64_t> outDims = outputShape ? outputShape->toInts() : unpooled;
  if (outDims.size() != unpooled.size())
    userError(node.describe(), ": output_shape must have one value per dim of X");
  for (size_t d = 0; d < outDims.size(); ++d)
    if (outDims[d] < unpooled[d])
      userError(node.describe(), ": output_shape dim ", d, " (", outDims[d], ") is smaller than ", unpooled[d]);
  Tensor out(x.dtype(), outDims);
  std::fill(out.data(), out.data() + out.byteSize(), std::byte(0));
  int64_t total = productOf(unpooled);
  for (int64_t i = 0; i < x.elementCount(); ++i) {
    int64_t at = indices.getInt(i);
    if (at < 0 || at >= total)
      userError(node.describe(), ": index ", at, " is outside the unpooled tensor of ", total, " elements");
    copyElements(x, i, out, ravel(unravel(at, unpooled), outDims));
  }
  return {out};
}

} // namespace

void registerMaxUnpoolRules(RuleTable &table) { table.add(OpKind::MaxUnpool, evalMaxUnpool); }

} // namespace sinter::reference
