// Private to the reference evaluator: whole-tensor helpers shared by the contraction,
// convolution, data-movement and creation rules.
//
// Data movement copies bytes (copyElement), so it is exact for every dtype, 64-bit integers and
// NaN payloads included. Arithmetic rules that accumulate in double read a tensor once with
// toDoubles and write the result with fromDoubles, which rounds once to the output dtype.
#pragma once

#include "dispatch.h"

#include "sinter/ir/graph.h"
#include "sinter/ir/tensor.h"

#include <cstring>
#include <vector>

namespace sinter::reference {

/// Copies `count` consecutive elements, byte for byte, from `source` at element `from` to `target`
/// at element `to`. Both tensors must have the same dtype.
inline void copyElements(const Tensor &source, int64_t from, Tensor &target, int64_t to,
                         int64_t count = 1) {
  size_t size = static_cast<size_t>(dtypeSize(source.dtype()));
  if (count > 0)
    std::memcpy(target.data() + static_cast<size_t>(to) * size,
                source.data() + static_cast<size_t>(from) * size,
                static_cast<size_t>(count) * size);
}

/// A copy of x (its dtype, dims and bytes).
inline Tensor copyOf(const Tensor &x) {
  Tensor out(x.dtype(), x.dims());
  copyElements(x, 0, out, 0, x.elementCount());
  return out;
}

/// A tensor's elements as doubles (exact except for 64-bit integers beyond 2^53).
inline std::vector<double> toDoubles(const Tensor &tensor) {
  std::vector<double> values(static_cast<size_t>(tensor.elementCount()));
  for (int64_t i = 0; i < tensor.elementCount(); ++i)
    values[i] = loadAsDouble(tensor, i);
  return values;
}

/// A tensor of `dtype` and `dims` holding `values`, each rounded once to `dtype`.
inline Tensor fromDoubles(DType dtype, const std::vector<int64_t> &dims,
                          const std::vector<double> &values) {
  Tensor out(dtype, dims);
  for (int64_t i = 0; i < out.elementCount(); ++i)
    storeFromDouble(out, i, values[i]);
  return out;
}

/// The input `index` of a node that the op requires; an absent one is a UserError.
inline const Tensor &requiredInput(const Node &node, const std::vector<const Tensor *> &inputs,
                                   int index) {
  if (index >= static_cast<int>(inputs.size()) || !inputs[index])
    userError(node.describe(), ": input ", index, " is required");
  return *inputs[index];
}

/// The input `index`, or null when it is absent.
inline const Tensor *optionalInput(const std::vector<const Tensor *> &inputs, int index) {
  return index < static_cast<int>(inputs.size()) ? inputs[index] : nullptr;
}

/// UserError unless every input that is present has the dtype of input 0.
inline void requireSameDTypes(const Node &node, const std::vector<const Tensor *> &inputs,
                              const std::vector<int> &indices) {
  const Tensor *first = nullptr;
  int firstIndex = 0;
  for (int index : indices) {
    const Tensor *input = optionalInput(inputs, index);
    if (!input)
      continue;
    if (!first) {
      first = input;
      firstIndex = index;
    } else if (input->dtype() != first->dtype()) {
      userError(node.describe(), ": input ", index, " has element type ", dtypeName(input->dtype()),
                " but input ", firstIndex, " has ", dtypeName(first->dtype()));
    }
  }
}

/// UserError unless `x` is [N, C, spatial...] with at least `minRank` dims.
inline void requireImage(const Node &node, const Tensor &x, int minRank) {
  if (x.rank() < minRank)
    userError(node.describe(), ": input must be [N, C, D1, ...] of rank >= ", minRank, ", got ",
              shapeStr(x.type().shape));
}

inline void requireFloat(const Node &node, const Tensor &x) {
  if (!isFloat(x.dtype()))
    unsupportedDType(node, x.dtype());
}

inline std::vector<int64_t> spatialDims(const Tensor &x) {
  return std::vector<int64_t>(x.dims().begin() + 2, x.dims().end());
}
/// Floor and ceiling of a / b for b > 0 (C++ division truncates toward zero).
inline int64_t floorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && (a < 0)); }
inline int64_t ceilDiv(int64_t a, int64_t b) { return a / b + ((a % b != 0) && (a > 0)); }

} // namespace sinter::reference
