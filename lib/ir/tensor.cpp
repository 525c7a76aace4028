#include "sinter/ir/tensor.h"

#include "sinter/ir/low_precision.h"
#include "sinter/support/error.h"

#include <bit>
#include <cmath>
#include <limits>

namespace sinter {

Tensor::Tensor(DType dtype, std::vector<int64_t> dims) : Tensor(dtype, std::move(dims), Unallocated{}) {
  bytes_.assign(byteSize(), std::byte{0});
}

Tensor Tensor::fromBytes(DType dtype, std::vector<int64_t> dims, const void *bytes) {
  Tensor tensor(dtype, std::move(dims), Unallocated{});
  const auto *begin = static_cast<const std::byte *>(bytes);
  tensor.bytes_.assign(begin, begin + tensor.byteSize());
  return tensor;
}

Tensor::Tensor(DType dtype, std::vector<int64_t> dims, Unallocated) : dtype_(dtype), dims_(std::move(dims)) {
  count_ = 1;
  for (int64_t dim : dims_) {
    if (dim < 0)
      userError("tensor dimension ", dim, " is negative");
    if (dim != 0 && count_ > std::numeric_limits<int64_t>::max() / dim / 8)
      userError("tensor of shape ", shapeStr(shapeOf(dims_)), " is too large");
    count_ *= dim;
  }
}

float halfToFloat(uint16_t bits) {
  uint32_t sign = uint32_t(bits & 0x8000) << 16;
  uint32_t exponent = (bits >> 10) & 0x1f;
  uint32_t mantissa = bits & 0x3ff;
  uint32_t out;
  if (exponent == 0) {
    if (mantissa == 0) {
      out = sign;
    } else { // subnormal: renormalise
      exponent = 127 - 15 + 1;
      while (!(mantissa & 0x400)) {
        mantissa <<= 1;
        --exponent;
      }
      mantissa &= 0x3ff;
      out = sign | (exponent << 23) | (mantissa << 13);
    }
  } else if (exponent == 0x1f) {
    out = sign | 0x7f800000u | (mantissa << 13);
  } else {
    out = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  return std::bit_cast<float>(out);
}

uint16_t floatToHalf(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  uint16_t sign = uint16_t((bits >> 16) & 0x8000);
  uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude >= 0x7f800000u) // inf or nan
    return sign | 0x7c00 | (magnitude > 0x7f800000u ? 0x200 : 0);
  if (magnitude >= 0x477ff000u) // rounds to >= 65520: overflow to inf
    return sign | 0x7c00;
  if (magnitude < 0x38800000u) { // below the smallest normal half: subnormal or zero
    float scaled = std::bit_cast<float>(magnitude) * 16777216.0f; // 2^24: one half ulp of subnormals
    uint32_t rounded = static_cast<uint32_t>(std::nearbyint(scaled));
    return sign | uint16_t(rounded);
  }
  uint32_t exponent = (magnitude >> 23) - 127 + 15;
  uint32_t mantissa = magnitude & 0x7fffff;
  uint32_t half = (exponent << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1)))
    ++half;
  return sign | uint16_t(half);
}

float bfloat16ToFloat(uint16_t bits) { return std::bit_cast<float>(uint32_t(bits) << 16); }

uint16_t floatToBfloat16(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((bits >> 16) | 0x40);
  uint32_t rounding = 0x7fff + ((bits >> 16) & 1);
  return uint16_t((bits + rounding) >> 16);
}

double Tensor::getDouble(int64_t i) const {
  switch (dtype_) {
  case DType::Float32: return data<float>()[i];
  case DType::Float64: return data<double>()[i];
  case DType::Float16: return halfToFloat(data<uint16_t>()[i]);
  case DType::BFloat16: return bfloat16ToFloat(data<uint16_t>()[i]);
  case DType::Int8: return data<int8_t>()[i];
  case DType::Uint8: return data<uint8_t>()[i];
  case DType::Int16: return data<int16_t>()[i];
  case DType::Uint16: return data<uint16_t>()[i];
  case DType::Int32: return data<int32_t>()[i];
  case DType::Uint32: return data<uint32_t>()[i];
  case DType::Int64: return double(data<int64_t>()[i]);
  case DType::Uint64: return double(data<uint64_t>()[i]);
  case DType::Bool: return data<uint8_t>()[i] ? 1.0 : 0.0;
  case DType::Int4:
  case DType::Uint4:
  case DType::Int2:
  case DType::Uint2: return lowPrecisionIntegerValue(dtype_, data<uint8_t>()[i]);
  case DType::Float8E4M3FN:
  case DType::Float8E4M3FNUZ:
  case DType::Float8E5M2:
  case DType::Float8E5M2FNUZ:
  case DType::Float8E8M0:
  case DType::Float4E2M1: return lowPrecisionFloatValue(dtype_, data<uint8_t>()[i]);
  }
  SINTER_ASSERT(false, "unhandled dtype");
}

int64_t Tensor::getInt(int64_t i) const {
  switch (dtype_) {
  case DType::Int8: return data<int8_t>()[i];
  case DType::Uint8: return data<uint8_t>()[i];
  case DType::Int16: return data<int16_t>()[i];
  case DType::Uint16: return data<uint16_t>()[i];
  case DType::Int32: return data<int32_t>()[i];
  case DType::Uint32: return data<uint32_t>()[i];
  case DType::Int64: return data<int64_t>()[i];
  case DType::Uint64: return int64_t(data<uint64_t>()[i]);
  case DType::Bool: return data<uint8_t>()[i] ? 1 : 0;
  case DType::Int4:
  case DType::Uint4:
  case DType::Int2:
  case DType::Uint2: return lowPrecisionIntegerValue(dtype_, data<uint8_t>()[i]);
  default: {
    double value = getDouble(i);
    if (!std::isfinite(value))
      return 0;
    return static_cast<int64_t>(value);
  }
  }
}

void Tensor::setDouble(int64_t i, double value) {
  switch (dtype_) {
  case DType::Float32: data<float>()[i] = float(value); return;
  case DType::Float64: data<double>()[i] = value; return;
  case DType::Float16: data<uint16_t>()[i] = floatToHalf(float(value)); return;
  case DType::BFloat16: data<uint16_t>()[i] = floatToBfloat16(float(value)); return;
  case DType::Bool: data<uint8_t>()[i] = value != 0.0; return;
  case DType::Float8E4M3FN:
  case DType::Float8E4M3FNUZ:
  case DType::Float8E5M2:
  case DType::Float8E5M2FNUZ:
  case DType::Float8E8M0:
  case DType::Float4E2M1: data<uint8_t>()[i] = encodeLowPrecisionFloat(dtype_, value); return;
  case DType::Int4:
  case DType::Uint4:
  case DType::Int2:
  case DType::Uint2: data<uint8_t>()[i] = truncateToLowPrecisionInteger(dtype_, value); return;
  default:
    // Float to integer conversion truncates toward zero; out-of-range values are undefined in
    // ONNX, here they saturate so the evaluator stays deterministic.
    if (std::isnan(value))
      value = 0;
    value = std::trunc(value);
    if (value >= 9.2233720368547758e18)
      setInt(i, std::numeric_limits<int64_t>::max());
    else if (value <= -9.2233720368547758e18)
      setInt(i, std::numeric_limits<int64_t>::min());
    else
      setInt(i, static_cast<int64_t>(value));
    return;
  }
}

void Tensor::setInt(int64_t i, int64_t value) {
  switch (dtype_) {
  case DType::Int8: data<int8_t>()[i] = int8_t(value); return;
  case DType::Uint8: data<uint8_t>()[i] = uint8_t(value); return;
  case DType::Int16: data<int16_t>()[i] = int16_t(value); return;
  case DType::Uint16: data<uint16_t>()[i] = uint16_t(value); return;
  case DType::Int32: data<int32_t>()[i] = int32_t(value); return;
  case DType::Uint32: data<uint32_t>()[i] = uint32_t(value); return;
  case DType::Int64: data<int64_t>()[i] = value; return;
  case DType::Uint64: data<uint64_t>()[i] = uint64_t(value); return;
  case DType::Bool: data<uint8_t>()[i] = value != 0; return;
  case DType::Int4:
  case DType::Uint4:
  case DType::Int2:
  case DType::Uint2: data<uint8_t>()[i] = wrapToLowPrecisionInteger(dtype_, value); return;
  default: setDouble(i, double(value)); return;
  }
}

std::vector<int64_t> Tensor::toInts() const {
  std::vector<int64_t> out(count_);
  for (int64_t i = 0; i < count_; ++i)
    out[i] = getInt(i);
  return out;
}

Tensor Tensor::fromInts(const std::vector<int64_t> &values, DType dtype) {
  Tensor tensor(dtype, {int64_t(values.size())});
  for (size_t i = 0; i < values.size(); ++i)
    tensor.setInt(int64_t(i), values[i]);
  return tensor;
}

Tensor Tensor::scalar(DType dtype, double value) {
  Tensor tensor(dtype, {});
  tensor.setDouble(0, value);
  return tensor;
}

bool Tensor::identical(const Tensor &other) const {
  return dtype_ == other.dtype_ && dims_ == other.dims_ && bytes_ == other.bytes_;
}

} // namespace sinter
