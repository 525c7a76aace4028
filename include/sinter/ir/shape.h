// Shapes and tensor types.
//
// A shape's rank is always known. Each dim is one of:
//   * static:   a non-negative integer;
//   * symbolic: a named symbol ("batch", "seq") shared by every dim that bears the name;
//   * unknown:  data-dependent and unnamed (printed "?"), e.g. NonZero's output length.
// Compiling for a target requires every dim to be static; `--dim`/`--shape` bind symbols.
#pragma once

#include "sinter/ir/dtype.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sinter {

class Dim {
public:
  Dim() = default; ///< unknown
  Dim(int64_t value) : value_(value) {}
  static Dim symbol(std::string name) {
    Dim dim;
    dim.symbol_ = std::move(name);
    return dim;
  }
  static Dim unknown() { return Dim(); }

  bool isStatic() const { return value_ >= 0; }
  bool isSymbol() const { return !symbol_.empty(); }
  bool isUnknown() const { return value_ < 0 && symbol_.empty(); }
  /// The static value; only valid when isStatic().
  int64_t value() const { return value_; }
  const std::string &symbolName() const { return symbol_; }

  bool operator==(const Dim &other) const = default;
  std::string str() const;

private:
  int64_t value_ = -1;
  std::string symbol_;
};

using Shape = std::vector<Dim>;

/// True when every dim is static.
bool isStatic(const Shape &shape);
/// Number of elements; only valid for static shapes. Returns nullopt on int64 overflow.
std::optional<int64_t> elementCount(const Shape &shape);
/// Static dims of a static shape.
std::vector<int64_t> staticDims(const Shape &shape);
Shape shapeOf(const std::vector<int64_t> &dims);
/// "[1,3,batch,?]"
std::string shapeStr(const Shape &shape);

struct TensorType {
  DType dtype = DType::Float32;
  Shape shape;

  int rank() const { return static_cast<int>(shape.size()); }
  bool operator==(const TensorType &other) const = default;
  /// "f32[1,3,224,224]"
  std::string str() const;
};

} // namespace sinter
