// Node attributes: a closed set of kinds, matching ONNX's (minus graphs, which come with control flow).
#pragma once

#include "sinter/ir/op.h"
#include "sinter/ir/tensor.h"

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace sinter {

using TensorPtr = std::shared_ptr<const Tensor>;

/// The variant's alternatives are in AttrKind order.
using Attribute = std::variant<int64_t, float, std::string, std::vector<int64_t>, std::vector<float>,
                               std::vector<std::string>, TensorPtr>;

inline AttrKind attrKind(const Attribute &attribute) {
  return static_cast<AttrKind>(attribute.index());
}

/// Equality that compares tensors by content.
bool attributesEqual(const Attribute &a, const Attribute &b);

} // namespace sinter
