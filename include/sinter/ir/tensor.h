// A dense, row-major tensor with its bytes: constants in the IR, and the reference evaluator's
// values. Storage is shared and immutable once wrapped in a constant; copy-on-write is the
// caller's business (use clone()).
#pragma once

#include "sinter/ir/dtype.h"
#include "sinter/ir/shape.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

namespace sinter {

class Tensor {
public:
  Tensor() = default;
  /// Zero-filled tensor of the given type and dims. Throws UserError when the size overflows.
  Tensor(DType dtype, std::vector<int64_t> dims);
  /// The tensor of the given type and dims whose bytes are a copy of the byteSize() bytes at
  /// `bytes` (written once, not zero-filled first: an imported model's weights).
  static Tensor fromBytes(DType dtype, std::vector<int64_t> dims, const void *bytes);

  DType dtype() const { return dtype_; }
  const std::vector<int64_t> &dims() const { return dims_; }
  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t elementCount() const { return count_; }
  size_t byteSize() const { return static_cast<size_t>(count_) * dtypeSize(dtype_); }
  TensorType type() const { return {dtype_, shapeOf(dims_)}; }

  std::byte *data() { return bytes_.data(); }
  const std::byte *data() const { return bytes_.data(); }
  template <typename T> T *data() { return reinterpret_cast<T *>(bytes_.data()); }
  template <typename T> const T *data() const { return reinterpret_cast<const T *>(bytes_.data()); }
  template <typename T> std::span<const T> values() const { return {data<T>(), size_t(count_)}; }

  /// Element i converted to double / int64 (for shapes, indices, folding and printing).
  double getDouble(int64_t index) const;
  int64_t getInt(int64_t index) const;
  /// Stores a double into element i, converting (and rounding) to the tensor's dtype.
  void setDouble(int64_t index, double value);
  void setInt(int64_t index, int64_t value);

  /// All elements as int64 (for shape-like tensors).
  std::vector<int64_t> toInts() const;
  static Tensor fromInts(const std::vector<int64_t> &values, DType dtype = DType::Int64);
  static Tensor scalar(DType dtype, double value);

  /// Bitwise equality of dtype, dims and bytes.
  bool identical(const Tensor &other) const;

private:
  struct Unallocated {};
  /// The type, dims and count checked and set, no bytes yet.
  Tensor(DType dtype, std::vector<int64_t> dims, Unallocated);

  DType dtype_ = DType::Float32;
  std::vector<int64_t> dims_;
  int64_t count_ = 1;
  std::vector<std::byte> bytes_;
};

/// IEEE binary16 and bfloat16 conversions (round to nearest even).
float halfToFloat(uint16_t bits);
uint16_t floatToHalf(float value);
float bfloat16ToFloat(uint16_t bits);
uint16_t floatToBfloat16(float value);

} // namespace sinter
