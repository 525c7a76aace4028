#include "sinter/ir/shape.h"

#include <limits>

namespace sinter {

std::string Dim::str() const {
  if (isStatic())
    return std::to_string(value_);
  if (isSymbol())
    return symbol_;
  return "?";
}

bool isStatic(const Shape &shape) {
  for (const Dim &dim : shape)
    if (!dim.isStatic())
      return false;
  return true;
}

std::optional<int64_t> elementCount(const Shape &shape) {
  int64_t count = 1;
  for (const Dim &dim : shape) {
    if (!dim.isStatic())
      return std::nullopt;
    if (dim.value() != 0 && count > std::numeric_limits<int64_t>::max() / dim.value())
      return std::nullopt;
    count *= dim.value();
  }
  return count;
}

std::vector<int64_t> staticDims(const Shape &shape) {
  std::vector<int64_t> dims;
  dims.reserve(shape.size());
  for (const Dim &dim : shape)
    dims.push_back(dim.isStatic() ? dim.value() : -1);
  return dims;
}

Shape shapeOf(const std::vector<int64_t> &dims) { return Shape(dims.begin(), dims.end()); }

std::string shapeStr(const Shape &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      text += ",";
    text += shape[i].str();
  }
  return text + "]";
}

std::string TensorType::str() const { return std::string(dtypeName(dtype)) + shapeStr(shape); }

} // namespace sinter
