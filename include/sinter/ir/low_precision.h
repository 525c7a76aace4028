// The low-precision element types: their encodings inside sinter, at the ONNX boundary, and the
// conversions Cast, QuantizeLinear and DequantizeLinear need, bit-exact with the ONNX spec. The
// reference evaluator, the ONNX importer and the code generators (which expand the same rules into
// kernel-IR bit arithmetic, lib/codegen/low_precision_cast.cpp) all follow this file.
//
// Storage inside sinter: one element per byte, everywhere (Tensor, IR constants, artifact weights
// and arena, the runtime's input and output buffers, `sinter run`'s .npy files):
//   f8e4m3fn, f8e4m3fnuz, f8e5m2, f8e5m2fnuz, f8e8m0   the 8-bit code
//   f4e2m1                                              the 4-bit code in bits 0-3, bits 4-7 zero
//   i4, i2                                              the value as a two's-complement int8
//                                                       (sign-extended: -8 is 0xF8)
//   u4, u2                                              the value as a uint8
// This is also how ml_dtypes (numpy's float8 / int4 types) holds them in memory. Only ONNX's
// TensorProto packs them: two 4-bit elements per byte (the first in the low nibble) or four 2-bit
// elements (the first in the lowest bits), in raw_data and, one packed byte per int32, int32_data.
// packLowPrecision / unpackLowPrecision convert between the two.
//
// Reading an element looks only at its type's bits (the low 4 or 2 bits of a sub-byte integer or
// of f4e2m1), so a byte with other bits set still has one defined value; every element sinter
// writes is in the canonical form above.
//
// The float formats (sign, exponent bits, mantissa bits, exponent bias):
//   f8e4m3fn    1.4.3 bias 7    no infinities; NaN is S.1111.111; max 448
//   f8e4m3fnuz  1.4.3 bias 8    no infinities, no -0; NaN is 0x80; max 240
//   f8e5m2      1.5.2 bias 15   IEEE-like: infinities S.11111.00, NaN S.11111.{01,10,11}; max 57344
//   f8e5m2fnuz  1.5.2 bias 16   no infinities, no -0; NaN is 0x80; max 57344
//   f4e2m1      1.2.1 bias 1    no infinities, no NaN; max 6
//   f8e8m0      0.8.0 bias 127  powers of two 2^-127 .. 2^127; 0xFF is NaN; no zero, no sign
#pragma once

#include "sinter/ir/dtype.h"

#include <cstdint>
#include <optional>
#include <string_view>

namespace sinter {

/// Cast's `round_mode` for f8e8m0 (ONNX opset 24): up (the default), down, or nearest.
enum class E8M0Rounding : uint8_t { Up, Down, Nearest };
std::optional<E8M0Rounding> e8m0RoundingFromName(std::string_view name);

/// How a value is narrowed into a low-precision float (Cast's and QuantizeLinear's attributes).
struct LowPrecisionRounding {
  /// The float8 forms: an infinity or a value beyond the largest finite one becomes +-max
  /// (true, the default) or, when false, NaN (+-infinity for f8e5m2). f4e2m1 always saturates.
  bool saturate = true;
  E8M0Rounding e8m0 = E8M0Rounding::Up;
};

/// The layout of a float8 / float4 form (not f8e8m0).
struct MiniFloatFormat {
  int exponentBits;
  int mantissaBits;
  int bias;
  /// How NaN and infinities are spelled.
  enum class Specials : uint8_t {
    IeeeLike,         ///< exponent all ones: infinity with a zero mantissa, else NaN (f8e5m2)
    NanAllOnes,       ///< S.1111.111 is NaN, no infinities (f8e4m3fn)
    NanNegativeZero,  ///< 0x80 is the only NaN, no -0, no infinities (the fnuz forms)
    None,             ///< every code is a finite number (f4e2m1)
  } specials;
  /// The largest finite value.
  double max;
  /// The code of +max (the sign bit is 1 << (exponentBits + mantissaBits)).
  uint8_t maxCode;
};
/// The format of a low-precision float other than f8e8m0.
const MiniFloatFormat &miniFloatFormat(DType type);

// ---- Element values -----------------------------------------------------------------------

/// The value of a low-precision float's code (exact: every such value is a float). Only the
/// type's bits are read.
float lowPrecisionFloatValue(DType type, uint8_t code);
/// The value of a 4- or 2-bit integer from its byte (only the low bits are read).
int lowPrecisionIntegerValue(DType type, uint8_t byte);
/// The smallest and largest value of a 4- or 2-bit integer type.
int lowPrecisionIntegerMin(DType type);
int lowPrecisionIntegerMax(DType type);
/// The canonical byte of any element (see the top of this file).
uint8_t canonicalLowPrecisionByte(DType type, uint8_t byte);

// ---- Conversions into the low-precision types ----------------------------------------------

/// A number rounded to a low-precision float's code with Cast's rules: round to nearest, ties to
/// even; overflow and infinities as `rounding.saturate` says; NaN stays NaN (f4e2m1, which has no
/// NaN, gives the code 0x8 for it, as ONNX's reference does). f8e8m0 follows ONNX's reference
/// (onnx.numpy_helper.to_float8e8m0): the value is taken as float32 and its exponent rounded by
/// `rounding.e8m0`; the sign is ignored.
uint8_t encodeLowPrecisionFloat(DType type, double value, LowPrecisionRounding rounding = {});
/// An integer into a 4- or 2-bit integer with Cast's rule for integers: the low bits, read as
/// two's complement for the signed types (200 -> i4 is -8 + 8 = 8 mod 16 -> -8).
uint8_t wrapToLowPrecisionInteger(DType type, int64_t value);
/// A float into a 4- or 2-bit integer with Cast's rule (what ONNX's reference computes): truncated
/// toward zero, then wrapped like an integer; NaN and infinities give 0.
uint8_t truncateToLowPrecisionInteger(DType type, double value);
/// A number already rounded to an integer, clamped to the type's range (QuantizeLinear).
uint8_t saturateToLowPrecisionInteger(DType type, double value);

// ---- The ONNX boundary ---------------------------------------------------------------------

/// Bytes ONNX's packed form of `count` elements takes (count for the 8-bit types).
int64_t packedByteCount(DType type, int64_t count);
/// Packs `count` elements (one byte each, as sinter stores them) into ONNX's form.
void packLowPrecision(DType type, const uint8_t *elements, int64_t count, uint8_t *packed);
/// Unpacks ONNX's form into one canonical byte per element.
void unpackLowPrecision(DType type, const uint8_t *packed, int64_t count, uint8_t *elements);

} // namespace sinter
