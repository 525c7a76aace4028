#include "tensor_index.h"

#include "sinter/support/error.h"

namespace sinter::reference {

std::vector<int64_t> stridesOf(const std::vector<int64_t> &dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (int i = int(dims.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * dims[i + 1];
  return strides;
}

int64_t productOf(const std::vector<int64_t> &dims) {
  int64_t product = 1;
  for (int64_t dim : dims)
    product *= dim;
  return product;
}

std::vector<int64_t> broadcastDims(const Node &node, const std::vector<std::vector<int64_t>> &shapes) {
  size_t rank = 0;
  for (const auto &shape : shapes)
    rank = std::max(rank, shape.size());
  std::vector<int64_t> out(rank, 1);
  for (const auto &shape : shapes) {
    size_t offset = rank - shape.size();
    for (size_t i = 0; i < shape.size(); ++i) {
      int64_t &dim = out[offset + i];
      if (shape[i] == dim || shape[i] == 1)
        continue;
      if (dim != 1)
        userError(node.describe(), ": shapes ", shapeStr(shapeOf(shapes[0])), " and ",
                  shapeStr(shapeOf(shape)), " do not broadcast");
      dim = shape[i];
    }
  }
  return out;
}

BroadcastIndexer::BroadcastIndexer(const std::vector<int64_t> &inDims,
                                   const std::vector<int64_t> &outDims)
    : outStrides_(stridesOf(outDims)), inStrides_(outDims.size(), 0) {
  std::vector<int64_t> inStrides = stridesOf(inDims);
  size_t offset = outDims.size() - inDims.size();
  for (size_t i = 0; i < inDims.size(); ++i)
    inStrides_[offset + i] = inDims[i] == 1 ? 0 : inStrides[i];
}

int64_t BroadcastIndexer::operator()(int64_t outIndex) const {
  int64_t inIndex = 0;
  for (size_t i = 0; i < outStrides_.size(); ++i) {
    int64_t coordinate = outIndex / outStrides_[i];
    outIndex -= coordinate * outStrides_[i];
    inIndex += coordinate * inStrides_[i];
  }
  return inIndex;
}

std::vector<int64_t> unravel(int64_t index, const std::vector<int64_t> &dims) {
  std::vector<int64_t> out(dims.size(), 0);
  for (int i = int(dims.size()) - 1; i >= 0; --i) {
    if (dims[i] > 0) {
      out[i] = index % dims[i];
      index /= dims[i];
    }
  }
  return out;
}

int64_t ravel(const std::vector<int64_t> &index, const std::vector<int64_t> &dims) {
  int64_t out = 0;
  for (size_t i = 0; i < dims.size(); ++i)
    out = out * dims[i] + index[i];
  return out;
}

bool nextIndex(std::vector<int64_t> &index, const std::vector<int64_t> &dims) {
  for (int i = int(dims.size()) - 1; i >= 0; --i) {
    if (++index[i] < dims[i])
      return true;
    index[i] = 0;
  }
  return false;
}

int64_t normalizeAxis(const Node &node, int64_t axis, int64_t rank) {
  int64_t normalized = axis < 0 ? axis + rank : axis;
  if (normalized < 0 || normalized >= std::max<int64_t>(rank, 1))
    userError(node.describe(), ": axis ", axis, " is out of range for rank ", rank);
  return normalized;
}

AxisSplit splitAtAxis(const std::vector<int64_t> &dims, int64_t axis) {
  AxisSplit split;
  for (int64_t d = 0; d < int64_t(dims.size()); ++d) {
    if (d < axis)
      split.outer *= dims[d];
    else if (d == axis)
      split.size = dims[d];
    else
      split.inner *= dims[d];
  }
  return split;
}

} // namespace sinter::reference
