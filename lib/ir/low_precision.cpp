#include "sinter/ir/low_precision.h"

#include "sinter/support/error.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace sinter {

namespace {

using Specials = MiniFloatFormat::Specials;

// Bits and bias per form, with the largest finite value (and its code) worked out from them.
constexpr MiniFloatFormat kE4M3FN{4, 3, 7, Specials::NanAllOnes, 448.0, 0x7E};
constexpr MiniFloatFormat kE4M3FNUZ{4, 3, 8, Specials::NanNegativeZero, 240.0, 0x7F};
constexpr MiniFloatFormat kE5M2{5, 2, 15, Specials::IeeeLike, 57344.0, 0x7B};
constexpr MiniFloatFormat kE5M2FNUZ{5, 2, 16, Specials::NanNegativeZero, 57344.0, 0x7F};
constexpr MiniFloatFormat kE2M1{2, 1, 1, Specials::None, 6.0, 0x7};

uint8_t signBit(const MiniFloatFormat &format) {
  return uint8_t(1u << (format.exponentBits + format.mantissaBits));
}

/// The code of NaN (with the sign of `negative` where the form has signed NaNs).
uint8_t nanCode(const MiniFloatFormat &format, bool negative) {
  uint8_t sign = negative ? signBit(format) : 0;
  switch (format.specials) {
  case Specials::IeeeLike: // the quiet NaN: exponent all ones, top mantissa bit
    return sign | uint8_t(((1u << format.exponentBits) - 1) << format.mantissaBits) |
           uint8_t(1u << (format.mantissaBits - 1));
  case Specials::NanAllOnes: return sign | uint8_t(signBit(format) - 1);
  case Specials::NanNegativeZero: return 0x80;
  case Specials::None: return negative ? 0 : signBit(format); // ONNX's reference: a zero
  }
  return 0;
}

/// The code of a value beyond max (or an infinity) when not saturating.
uint8_t overflowCode(const MiniFloatFormat &format, bool negative) {
  uint8_t sign = negative ? signBit(format) : 0;
  switch (format.specials) {
  case Specials::IeeeLike: // infinity
    return sign | uint8_t(((1u << format.exponentBits) - 1) << format.mantissaBits);
  case Specials::NanAllOnes:
  case Specials::NanNegativeZero: return nanCode(format, negative);
  case Specials::None: return sign | format.maxCode; // no special values: saturate
  }
  return 0;
}

uint8_t encodeMiniFloat(const MiniFloatFormat &format, double value, bool saturate) {
  bool negative = std::signbit(value);
  uint8_t sign = negative ? signBit(format) : 0;
  if (std::isnan(value))
    return nanCode(format, negative);
  double magnitude = std::fabs(value);
  if (std::isinf(magnitude))
    return saturate ? sign | format.maxCode : overflowCode(format, negative);
  // The unbiased exponent of the value's binade, no lower than the smallest normal's: below it
  // the quantum stays that of the subnormals.
  int minExponent = 1 - format.bias;
  int exponent = minExponent;
  if (magnitude != 0) {
    int binade;
    std::frexp(magnitude, &binade); // magnitude = f * 2^binade, f in [0.5, 1)
    exponent = std::max(binade - 1, minExponent);
  }
  double quantum = std::ldexp(1.0, exponent - format.mantissaBits);
  // Dividing by a power of two is exact; nearbyint rounds half to even (the default mode).
  double steps = std::nearbyint(magnitude / quantum);
  double rounded = steps * quantum;
  if (rounded > format.max)
    return saturate ? sign | format.maxCode : overflowCode(format, negative);
  if (rounded == 0)
    return format.specials == Specials::NanNegativeZero ? 0 : sign;
  int binade;
  std::frexp(rounded, &binade);
  int roundedExponent = binade - 1;
  if (roundedExponent < minExponent) // subnormal: exponent field 0
    return sign | uint8_t(std::ldexp(rounded, format.mantissaBits - minExponent));
  auto mantissa = uint32_t(std::ldexp(rounded, format.mantissaBits - roundedExponent)) -
                  (1u << format.mantissaBits);
  auto biased = uint32_t(roundedExponent + format.bias);
  return sign | uint8_t((biased << format.mantissaBits) | mantissa);
}

float decodeMiniFloat(const MiniFloatFormat &format, uint8_t code) {
  int width = 1 + format.exponentBits + format.mantissaBits;
  code = uint8_t(code & ((1u << width) - 1));
  bool negative = (code & signBit(format)) != 0;
  uint32_t exponentMask = (1u << format.exponentBits) - 1;
  uint32_t exponentField = (code >> format.mantissaBits) & exponentMask;
  uint32_t mantissa = code & ((1u << format.mantissaBits) - 1);
  // NaN keeps its sign where the form has signed NaNs.
  float nan = negative ? -std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::quiet_NaN();
  switch (format.specials) {
  case Specials::IeeeLike:
    if (exponentField == exponentMask)
      return mantissa ? nan : (negative ? -1.0f : 1.0f) * std::numeric_limits<float>::infinity();
    break;
  case Specials::NanAllOnes:
    if (exponentField == exponentMask && mantissa == (1u << format.mantissaBits) - 1)
      return nan;
    break;
  case Specials::NanNegativeZero: // 0x80, whose sign bit is set (ml_dtypes reads it as -NaN)
    if (code == 0x80)
      return nan;
    break;
  case Specials::None: break;
  }
  double magnitude =
      exponentField == 0
          ? std::ldexp(double(mantissa), 1 - format.bias - format.mantissaBits)
          : std::ldexp(double(mantissa + (1u << format.mantissaBits)),
                       int(exponentField) - format.bias - format.mantissaBits);
  return float(negative ? -magnitude : magnitude);
}

/// f8e8m0 from a float's bits, as onnx.numpy_helper.to_float8e8m0 computes it.
uint8_t encodeE8M0(double value, LowPrecisionRounding rounding) {
  uint32_t bits = std::bit_cast<uint32_t>(static_cast<float>(value));
  uint32_t exponent = (bits >> 23) & 0xff;
  if (exponent == 0xff) // infinity or NaN
    return 0xff;
  bool roundUp = false;
  switch (rounding.e8m0) {
  case E8M0Rounding::Up: roundUp = (bits & 0x7fffff) != 0; break;
  case E8M0Rounding::Down: break;
  case E8M0Rounding::Nearest: {
    bool guard = bits & 0x400000, round = bits & 0x200000, sticky = bits & 0x1fffff;
    roundUp = guard && (round || sticky || exponent > 0);
    break;
  }
  }
  if (rounding.saturate && exponent == 0xfe)
    roundUp = false;
  return uint8_t(exponent + (roundUp ? 1 : 0));
}

int integerBits(DType type) {
  SINTER_ASSERT(isLowPrecisionInteger(type), dtypeName(type), " is not a 4- or 2-bit integer");
  return dtypeBits(type);
}

} // namespace

std::optional<E8M0Rounding> e8m0RoundingFromName(std::string_view name) {
  if (name == "up")
    return E8M0Rounding::Up;
  if (name == "down")
    return E8M0Rounding::Down;
  if (name == "nearest")
    return E8M0Rounding::Nearest;
  return std::nullopt;
}

const MiniFloatFormat &miniFloatFormat(DType type) {
  switch (type) {
  case DType::Float8E4M3FN: return kE4M3FN;
  case DType::Float8E4M3FNUZ: return kE4M3FNUZ;
  case DType::Float8E5M2: return kE5M2;
  case DType::Float8E5M2FNUZ: return kE5M2FNUZ;
  case DType::Float4E2M1: return kE2M1;
  default: break;
  }
  SINTER_ASSERT(false, dtypeName(type), " is not a float8 / float4 form with a mantissa");
}

float lowPrecisionFloatValue(DType type, uint8_t code) {
  if (type == DType::Float8E8M0)
    return code == 0xff ? std::numeric_limits<float>::quiet_NaN()
                        : float(std::ldexp(1.0, int(code) - 127));
  return decodeMiniFloat(miniFloatFormat(type), code);
}

int lowPrecisionIntegerValue(DType type, uint8_t byte) {
  int bits = integerBits(type);
  int mask = (1 << bits) - 1;
  int value = byte & mask;
  if (isSigned(type)) {
    int signBit = 1 << (bits - 1);
    value = (value ^ signBit) - signBit;
  }
  return value;
}

int lowPrecisionIntegerMin(DType type) {
  int bits = integerBits(type);
  return isSigned(type) ? -(1 << (bits - 1)) : 0;
}

int lowPrecisionIntegerMax(DType type) {
  int bits = integerBits(type);
  return isSigned(type) ? (1 << (bits - 1)) - 1 : (1 << bits) - 1;
}

uint8_t canonicalLowPrecisionByte(DType type, uint8_t byte) {
  if (isLowPrecisionInteger(type))
    return uint8_t(lowPrecisionIntegerValue(type, byte));
  if (type == DType::Float4E2M1)
    return byte & 0x0f;
  return byte;
}

uint8_t encodeLowPrecisionFloat(DType type, double value, LowPrecisionRounding rounding) {
  if (type == DType::Float8E8M0)
    return encodeE8M0(value, rounding);
  // f4e2m1 has nothing to overflow into: it always saturates.
  return encodeMiniFloat(miniFloatFormat(type), value,
                         rounding.saturate || type == DType::Float4E2M1);
}

uint8_t wrapToLowPrecisionInteger(DType type, int64_t value) {
  return uint8_t(lowPrecisionIntegerValue(type, uint8_t(uint64_t(value) & 0xff)));
}

uint8_t truncateToLowPrecisionInteger(DType type, double value) {
  if (!std::isfinite(value))
    return 0;
  // fmod is exact, so even values beyond int64 keep their low bits.
  double low = std::fmod(std::trunc(value), double(1 << integerBits(type)));
  return wrapToLowPrecisionInteger(type, static_cast<int64_t>(low));
}

uint8_t saturateToLowPrecisionInteger(DType type, double value) {
  if (std::isnan(value))
    return 0;
  double clamped = std::min<double>(std::max<double>(value, lowPrecisionIntegerMin(type)),
                                    lowPrecisionIntegerMax(type));
  return wrapToLowPrecisionInteger(type, static_cast<int64_t>(clamped));
}

int64_t packedByteCount(DType type, int64_t count) {
  int perByte = 8 / dtypeBits(type);
  return (count + perByte - 1) / perByte;
}

void packLowPrecision(DType type, const uint8_t *elements, int64_t count, uint8_t *packed) {
  int bits = dtypeBits(type);
  int perByte = 8 / bits;
  uint8_t mask = uint8_t((1u << bits) - 1);
  for (int64_t byte = 0; byte < packedByteCount(type, count); ++byte)
    packed[byte] = 0; // the padding of an odd count stays zero
  for (int64_t i = 0; i < count; ++i)
    packed[i / perByte] |= uint8_t((elements[i] & mask) << (bits * (i % perByte)));
}

void unpackLowPrecision(DType type, const uint8_t *packed, int64_t count, uint8_t *elements) {
  int bits = dtypeBits(type);
  int perByte = 8 / bits;
  for (int64_t i = 0; i < count; ++i)
    elements[i] = canonicalLowPrecisionByte(type, uint8_t(packed[i / perByte] >> (bits * (i % perByte))));
}

} // namespace sinter
