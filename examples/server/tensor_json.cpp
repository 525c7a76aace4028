#include "tensor_json.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

namespace sinter::serving {

uint16_t floatToHalf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  uint32_t sign = (bits >> 16) & 0x8000u;
  uint32_t exponentBits = (bits >> 23) & 0xFF;
  uint32_t mantissa = bits & 0x7FFFFFu;
  if (exponentBits == 0xFF) // inf, nan
    return uint16_t(sign | 0x7C00u | (mantissa ? 0x200u : 0));
  int exponent = int(exponentBits) - 127 + 15;
  if (exponent >= 31)
    return uint16_t(sign | 0x7C00u);
  if (exponent <= 0) { // a subnormal half (or zero): shift the implicit bit in, round to even
    if (exponent < -10)
      return uint16_t(sign);
    mantissa |= 0x800000u;
    int shift = 14 - exponent;
    uint32_t half = mantissa >> shift, rest = mantissa & ((1u << shift) - 1), midpoint = 1u << (shift - 1);
    if (rest > midpoint || (rest == midpoint && (half & 1u)))
      ++half;
    return uint16_t(sign | half);
  }
  uint32_t half = sign | (uint32_t(exponent) << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u)))
    ++half; // may carry into the exponent: the right result
  return uint16_t(half);
}

float halfToFloat(uint16_t half) {
  uint32_t sign = uint32_t(half & 0x8000u) << 16;
  uint32_t exponent = (half >> 10) & 0x1F;
  uint32_t mantissa = half & 0x3FFu;
  if (exponent == 0) {
    float value = std::ldexp(float(mantissa), -24);
    return sign ? -value : value;
  }
  uint32_t bits = exponent == 31 ? (sign | 0x7F800000u | (mantissa << 13))
                                 : (sign | ((exponent - 15 + 127) << 23) | (mantissa << 13));
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

namespace {

[[noreturn]] void fail(std::string message) { throw TensorJsonError(std::move(message)); }

/// The leaves of `data` (a flat or nested array), row-major; refuses anything that is not.
void flatten(const Json &data, std::vector<const Json *> &leaves, const std::string &where,
             size_t limit) {
  if (!data.isArray()) {
    if (leaves.size() >= limit)
      fail(where + ": 'data' has more elements than the shape holds");
    leaves.push_back(&data);
    return;
  }
  for (const Json &item : data.items)
    flatten(item, leaves, where, limit);
}

template <typename T>
T decodeIntegerImpl(const Json &value, const std::string &where, size_t index) {
  if (!value.isNumber())
    fail(where + ": element " + std::to_string(index) + " is not a number");
  T result{};
  const char *begin = value.text.data(), *end = begin + value.text.size();
  auto [stop, status] = std::from_chars(begin, end, result);
  if (status == std::errc::result_out_of_range)
    fail(where + ": element " + std::to_string(index) + " (" + value.text +
           ") is out of the datatype's range");
  if (status != std::errc() || stop != end)
    fail(where + ": element " + std::to_string(index) + " (" + value.text +
           ") is not an integer");
  return result;
}

template <typename T> T decodeFloat(const Json &value, const std::string &where, size_t index) {
  if (!value.isNumber())
    fail(where + ": element " + std::to_string(index) + " is not a number");
  T result{};
  const char *begin = value.text.data(), *end = begin + value.text.size();
  auto [stop, status] = std::from_chars(begin, end, result); // exact: no double rounding
  if (status == std::errc::result_out_of_range) // too large: +-infinity; too small: +-0
    result = std::copysign(std::fabs(value.number) < 1 ? T(0) : std::numeric_limits<T>::infinity(),
                           T(value.text[0] == '-' ? -1 : 1));
  else if (status != std::errc() || stop != end)
    fail(where + ": element " + std::to_string(index) + " (" + value.text + ") is not a number");
  return result;
}

/// Writes element `index` of `leaf` into `out` as `dtype`.
void storeElement(sinter_dtype dtype, const Json &leaf, uint8_t *out, const std::string &where,
                  size_t index) {
  auto store = [&](auto value) { std::memcpy(out, &value, sizeof(value)); };
  switch (dtype) {
  case SINTER_FLOAT32: store(decodeFloat<float>(leaf, where, index)); return;
  case SINTER_FLOAT64: store(decodeFloat<double>(leaf, where, index)); return;
  case SINTER_FLOAT16: store(floatToHalf(decodeFloat<float>(leaf, where, index))); return;
  case SINTER_INT8: store(decodeIntegerImpl<int8_t>(leaf, where, index)); return;
  case SINTER_INT16: store(decodeIntegerImpl<int16_t>(leaf, where, index)); return;
  case SINTER_INT32: store(decodeIntegerImpl<int32_t>(leaf, where, index)); return;
  case SINTER_INT64: store(decodeIntegerImpl<int64_t>(leaf, where, index)); return;
  case SINTER_UINT8: store(decodeIntegerImpl<uint8_t>(leaf, where, index)); return;
  case SINTER_UINT16: store(decodeIntegerImpl<uint16_t>(leaf, where, index)); return;
  case SINTER_UINT32: store(decodeIntegerImpl<uint32_t>(leaf, where, index)); return;
  case SINTER_UINT64: store(decodeIntegerImpl<uint64_t>(leaf, where, index)); return;
  case SINTER_BOOL:
    if (leaf.kind != Json::Kind::Bool)
      fail(where + ": element " + std::to_string(index) + " is not true or false");
    store(uint8_t(leaf.boolean ? 1 : 0));
    return;
  default:
    fail(where + ": this server cannot carry its datatype in JSON");
  }
}

/// Appends element `index` of `bytes` (of `dtype`) as JSON.
void appendElement(std::string &out, sinter_dtype dtype, const uint8_t *bytes) {
  auto load = [&](auto value) {
    std::memcpy(&value, bytes, sizeof(value));
    return value;
  };
  switch (dtype) {
  case SINTER_FLOAT32: out += formatFloat(load(float{})); return;
  case SINTER_FLOAT64: out += formatDouble(load(double{})); return;
  case SINTER_FLOAT16: out += formatFloat(halfToFloat(load(uint16_t{}))); return;
  case SINTER_INT8: out += std::to_string(load(int8_t{})); return;
  case SINTER_INT16: out += std::to_string(load(int16_t{})); return;
  case SINTER_INT32: out += std::to_string(load(int32_t{})); return;
  case SINTER_INT64: out += std::to_string(load(int64_t{})); return;
  case SINTER_UINT8: out += std::to_string(load(uint8_t{})); return;
  case SINTER_UINT16: out += std::to_string(load(uint16_t{})); return;
  case SINTER_UINT32: out += std::to_string(load(uint32_t{})); return;
  case SINTER_UINT64: out += std::to_string(load(uint64_t{})); return;
  case SINTER_BOOL: out += load(uint8_t{}) ? "true" : "false"; return;
  default: out += "null"; return;
  }
}

} // namespace

template <typename T> T decodeInteger(const Json &value, const std::string &where, size_t index) {
  return decodeIntegerImpl<T>(value, where, index);
}
template int64_t decodeInteger<int64_t>(const Json &, const std::string &, size_t);

std::string shapeText(const int64_t *dims, size_t rank) {
  std::string text = "[";
  for (size_t i = 0; i < rank; ++i)
    text += (i ? "," : "") + std::to_string(dims[i]);
  return text + "]";
}

std::string shapeJson(const sinter_tensor_info &info) {
  return shapeText(info.dims, size_t(info.rank));
}

const char *protocolDatatype(sinter_dtype dtype) {
  switch (dtype) {
  case SINTER_BOOL: return "BOOL";
  case SINTER_UINT8: return "UINT8";
  case SINTER_UINT16: return "UINT16";
  case SINTER_UINT32: return "UINT32";
  case SINTER_UINT64: return "UINT64";
  case SINTER_INT8: return "INT8";
  case SINTER_INT16: return "INT16";
  case SINTER_INT32: return "INT32";
  case SINTER_INT64: return "INT64";
  case SINTER_FLOAT16: return "FP16";
  case SINTER_FLOAT32: return "FP32";
  case SINTER_FLOAT64: return "FP64";
  default: return "";
  }
}

std::vector<uint8_t> decodeTensorData(const Json &data, const sinter_tensor_info &info,
                                      const std::string &where) {
  size_t count = sinter::rt::elementCount(info), size = sinter::rt::dtypeSize(info.dtype);
  std::vector<const Json *> leaves;
  leaves.reserve(count);
  flatten(data, leaves, where, count);
  if (leaves.size() != count)
    fail(where + ": 'data' has " + std::to_string(leaves.size()) + " elements but shape " +
         shapeJson(info) + " holds " + std::to_string(count));
  std::vector<uint8_t> bytes(count * size);
  for (size_t i = 0; i < count; ++i)
    storeElement(info.dtype, *leaves[i], bytes.data() + i * size, where, i);
  return bytes;
}

void appendTensorData(std::string &out, const uint8_t *bytes, const sinter_tensor_info &info) {
  size_t count = sinter::rt::elementCount(info), size = sinter::rt::dtypeSize(info.dtype);
  out.reserve(out.size() + count * 12 + 2);
  out += '[';
  for (size_t i = 0; i < count; ++i) {
    if (i)
      out += ',';
    appendElement(out, info.dtype, bytes + i * size);
  }
  out += ']';
}

} // namespace sinter::serving
