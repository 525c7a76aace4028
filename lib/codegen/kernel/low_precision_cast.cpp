#include "sinter/codegen/kernel/low_precision_cast.h"

#include "sinter/support/error.h"

#include <cmath>
#include <limits>
#include <optional>

namespace sinter::codegen {

namespace {

ExprRef constantOf(DType type, int64_t value) { return intConstant(value, type); }
ExprRef bitAnd(ExprRef a, int64_t mask) {
  DType type = a->type;
  return binary(BinaryOp::BitAnd, std::move(a), constantOf(type, mask));
}
ExprRef shiftRight(ExprRef a, int64_t bits) {
  DType type = a->type;
  return binary(BinaryOp::Shr, std::move(a), constantOf(type, bits));
}
ExprRef shiftLeft(ExprRef a, int64_t bits) {
  DType type = a->type;
  return binary(BinaryOp::Shl, std::move(a), constantOf(type, bits));
}
ExprRef equals(ExprRef a, int64_t value) {
  DType type = a->type;
  return binary(BinaryOp::Eq, std::move(a), constantOf(type, value));
}
ExprRef notEquals(ExprRef a, int64_t value) {
  DType type = a->type;
  return binary(BinaryOp::Ne, std::move(a), constantOf(type, value));
}
ExprRef pick(ExprRef condition, DType type, int64_t ifTrue, int64_t ifFalse) {
  return select(std::move(condition), constantOf(type, ifTrue), constantOf(type, ifFalse));
}
ExprRef logicalAnd(ExprRef a, ExprRef b) { return binary(BinaryOp::LogicalAnd, std::move(a), std::move(b)); }
ExprRef logicalOr(ExprRef a, ExprRef b) { return binary(BinaryOp::LogicalOr, std::move(a), std::move(b)); }

/// The element's byte, zero-extended to u32.
ExprRef byteOf(const ExprRef &a) { return cast(bitcast(a, DType::Uint8), DType::Uint32); }

/// A u32 holding a code in its low byte, as a value of low-precision type `type`.
ExprRef codeAs(const ExprRef &code, DType type) {
  DType byte = isSigned(type) && isLowPrecisionInteger(type) ? DType::Int8 : DType::Uint8;
  return bitcast(cast(code, byte), type);
}

// ---- Out of the low-precision types ----------------------------------------------------------

/// The exact f32 value of a float8 / f4e2m1 / f8e8m0 element.
ExprRef decodeFloat(const ExprRef &a) {
  DType type = a->type;
  const DType f32 = DType::Float32;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  ExprRef code = byteOf(a);
  if (type == DType::Float8E8M0) {
    // 2^(code - 127): the code is f32's exponent field; code 0 is f32's subnormal 2^-127.
    ExprRef bits = select(equals(code, 0), constantOf(DType::Uint32, 0x400000), shiftLeft(code, 23));
    return select(equals(code, 0xff), constant(f32, nan), bitcast(bits, f32));
  }
  const MiniFloatFormat &format = miniFloatFormat(type);
  int width = 1 + format.exponentBits + format.mantissaBits;
  int64_t signBit = int64_t(1) << (width - 1);
  int64_t exponentMask = (int64_t(1) << format.exponentBits) - 1;
  int64_t mantissaMask = (int64_t(1) << format.mantissaBits) - 1;
  code = bitAnd(code, (int64_t(1) << width) - 1);
  ExprRef negative = notEquals(bitAnd(code, signBit), 0);
  ExprRef exponent = bitAnd(shiftRight(code, format.mantissaBits), exponentMask);
  ExprRef mantissa = bitAnd(code, mantissaMask);
  // A normal value has f32's bits with the exponent rebiased and the mantissa moved up.
  ExprRef normalBits = binary(BinaryOp::BitOr,
                              shiftLeft(add(exponent, constantOf(DType::Uint32, 127 - format.bias)), 23),
                              shiftLeft(mantissa, 23 - format.mantissaBits));
  ExprRef subnormal = binary(BinaryOp::Mul, cast(mantissa, f32),
                             constant(f32, std::ldexp(1.0, 1 - format.bias - format.mantissaBits)));
  ExprRef magnitude = select(equals(exponent, 0), subnormal, bitcast(normalBits, f32));
  ExprRef value = select(negative, unary(UnaryOp::Neg, magnitude), magnitude);
  ExprRef signedNan = select(negative, constant(f32, -nan), constant(f32, nan));
  switch (format.specials) {
  case MiniFloatFormat::Specials::IeeeLike: {
    ExprRef infinity = select(negative, constant(f32, -inf), constant(f32, inf));
    ExprRef special = select(equals(mantissa, 0), infinity, signedNan);
    return select(equals(exponent, exponentMask), special, value);
  }
  case MiniFloatFormat::Specials::NanAllOnes:
    return select(equals(bitAnd(code, signBit - 1), signBit - 1), signedNan, value);
  case MiniFloatFormat::Specials::NanNegativeZero:
    return select(equals(code, 0x80), constant(f32, -nan), value); // 0x80 has the sign bit
  case MiniFloatFormat::Specials::None: return value;
  }
  return value;
}

/// The value of a 4- or 2-bit integer element, as i32.
ExprRef decodeInteger(const ExprRef &a) {
  DType type = a->type;
  int bits = dtypeBits(type);
  ExprRef low = cast(bitAnd(byteOf(a), (int64_t(1) << bits) - 1), DType::Int32);
  if (!isSigned(type))
    return low;
  int64_t signBit = int64_t(1) << (bits - 1);
  return sub(binary(BinaryOp::BitXor, low, constantOf(DType::Int32, signBit)),
             constantOf(DType::Int32, signBit));
}

// ---- Into the low-precision types ------------------------------------------------------------

/// The code of `value` (f32 or f64) in a float8 / f4e2m1 form, as u32.
ExprRef encodeMiniFloat(const ExprRef &value, DType type, LowPrecisionRounding rounding) {
  const MiniFloatFormat &format = miniFloatFormat(type);
  bool wide = value->type == DType::Float64;
  DType bitsType = wide ? DType::Uint64 : DType::Uint32;
  int sourceBits = wide ? 64 : 32;
  int sourceMantissa = wide ? 52 : 23;
  int sourceBias = wide ? 1023 : 127;
  auto bitsConstant = [&](uint64_t v) { return constantOf(bitsType, int64_t(v)); };
  auto exponentConstant = [](int64_t v) { return constantOf(DType::Int32, v); };

  ExprRef bits = bitcast(value, bitsType);
  uint64_t sourceSign = uint64_t(1) << (sourceBits - 1);
  uint64_t infinityBits = ((uint64_t(1) << (sourceBits - 1 - sourceMantissa)) - 1) << sourceMantissa;
  ExprRef negative = binary(BinaryOp::Ne, binary(BinaryOp::BitAnd, bits, bitsConstant(sourceSign)),
                            bitsConstant(0));
  ExprRef magnitudeBits = binary(BinaryOp::BitAnd, bits, bitsConstant(sourceSign - 1));
  ExprRef isNan = binary(BinaryOp::Gt, magnitudeBits, bitsConstant(infinityBits));
  ExprRef isInfinity = binary(BinaryOp::Eq, magnitudeBits, bitsConstant(infinityBits));

  // value = significand * 2^(exponent - sourceMantissa), the significand with its implicit bit.
  ExprRef biased = cast(binary(BinaryOp::Shr, magnitudeBits, bitsConstant(uint64_t(sourceMantissa))),
                        DType::Int32);
  ExprRef isNormal = binary(BinaryOp::Ne, biased, exponentConstant(0));
  ExprRef significand =
      binary(BinaryOp::BitOr,
             binary(BinaryOp::BitAnd, magnitudeBits, bitsConstant((uint64_t(1) << sourceMantissa) - 1)),
             select(isNormal, bitsConstant(uint64_t(1) << sourceMantissa), bitsConstant(0)));
  ExprRef exponent = sub(binary(BinaryOp::Max, biased, exponentConstant(1)), exponentConstant(sourceBias));
  // The target's exponent: the value's, or the subnormals' when below the smallest normal.
  int minExponent = 1 - format.bias;
  ExprRef targetExponent = binary(BinaryOp::Max, exponent, exponentConstant(minExponent));
  // Bits of the significand below the target's quantum; capped where everything rounds to zero.
  ExprRef drop = add(sub(targetExponent, exponent), exponentConstant(sourceMantissa - format.mantissaBits));
  drop = binary(BinaryOp::Min, drop, exponentConstant(sourceMantissa + 2));
  ExprRef shift = cast(drop, bitsType);
  ExprRef one = bitsConstant(1);
  ExprRef kept = binary(BinaryOp::Shr, significand, shift);
  ExprRef rest = binary(BinaryOp::BitAnd, significand,
                        binary(BinaryOp::Sub, binary(BinaryOp::Shl, one, shift), one));
  ExprRef half = binary(BinaryOp::Shl, one, binary(BinaryOp::Sub, shift, one));
  ExprRef odd = binary(BinaryOp::Ne, binary(BinaryOp::BitAnd, kept, one), bitsConstant(0));
  ExprRef roundUp = logicalOr(binary(BinaryOp::Gt, rest, half),
                              logicalAnd(binary(BinaryOp::Eq, rest, half), odd));
  kept = add(kept, select(roundUp, one, bitsConstant(0)));
  // (exponent field - 1) << mantissa bits, plus the rounded significand (implicit bit included):
  // a carry out of the mantissa bumps the exponent, and a subnormal's field is 0.
  ExprRef field = cast(add(targetExponent, exponentConstant(format.bias - 1)), bitsType);
  ExprRef magnitude = add(binary(BinaryOp::Shl, field, bitsConstant(uint64_t(format.mantissaBits))), kept);

  const DType u32 = DType::Uint32;
  int64_t signBit = int64_t(1) << (format.exponentBits + format.mantissaBits);
  ExprRef sign = pick(negative, u32, signBit, 0);
  ExprRef overflow = binary(BinaryOp::Gt, magnitude, bitsConstant(format.maxCode));
  ExprRef magnitude32 = cast(binary(BinaryOp::Min, magnitude, bitsConstant(0xff)), u32);
  bool unsignedZero = format.specials == MiniFloatFormat::Specials::NanNegativeZero;
  ExprRef finite = select(equals(magnitude32, 0), unsignedZero ? constantOf(u32, 0) : sign,
                          binary(BinaryOp::BitOr, magnitude32, sign));
  // NaN, and infinities and overflow (alike: +-max when saturating), spelled as the scalar
  // encoder spells them.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  auto bySign = [&](double special) {
    return pick(negative, u32, encodeLowPrecisionFloat(type, -special, rounding),
                encodeLowPrecisionFloat(type, special, rounding));
  };
  return select(isNan, bySign(nan),
                select(logicalOr(isInfinity, overflow), bySign(inf), finite));
}

/// The f8e8m0 code of an f32 value, as u32 (what onnx.numpy_helper.to_float8e8m0 computes).
ExprRef encodeE8M0(const ExprRef &value, LowPrecisionRounding rounding) {
  ExprRef bits = bitcast(value, DType::Uint32);
  ExprRef exponent = bitAnd(shiftRight(bits, 23), 0xff);
  ExprRef roundUp = boolConstant(false);
  switch (rounding.e8m0) {
  case E8M0Rounding::Up: roundUp = notEquals(bitAnd(bits, 0x7fffff), 0); break;
  case E8M0Rounding::Down: break;
  case E8M0Rounding::Nearest: {
    ExprRef guard = notEquals(bitAnd(bits, 0x400000), 0);
    ExprRef round = notEquals(bitAnd(bits, 0x200000), 0);
    ExprRef sticky = notEquals(bitAnd(bits, 0x1fffff), 0);
    roundUp = logicalAnd(guard, logicalOr(logicalOr(round, sticky), notEquals(exponent, 0)));
    break;
  }
  }
  if (rounding.saturate)
    roundUp = logicalAnd(roundUp, notEquals(exponent, 0xfe));
  ExprRef rounded = add(exponent, pick(roundUp, DType::Uint32, 1, 0));
  return select(equals(exponent, 0xff), constantOf(DType::Uint32, 0xff), rounded);
}

/// An i32 wrapped to a 4- or 2-bit integer type's range (its low bits).
ExprRef wrapInteger(const ExprRef &value, DType type) {
  int bits = dtypeBits(type);
  ExprRef low = bitAnd(value, (int64_t(1) << bits) - 1);
  if (!isSigned(type))
    return low;
  int64_t signBit = int64_t(1) << (bits - 1);
  return sub(binary(BinaryOp::BitXor, low, constantOf(DType::Int32, signBit)),
             constantOf(DType::Int32, signBit));
}

/// A value of an ordinary type (float, integer or bool) in low-precision type `to`.
ExprRef encode(ExprRef a, DType to, LowPrecisionRounding rounding) {
  DType from = a->type;
  if (from == DType::Float16 || from == DType::BFloat16) { // exact in f32
    a = cast(std::move(a), DType::Float32);
    from = DType::Float32;
  }
  if (isLowPrecisionInteger(to)) {
    ExprRef value;
    if (isFloat(from)) {
      // Truncate, keep the low bits (fmod is exact; NaN and infinities give NaN, cast to 0).
      double modulus = double(int64_t(1) << dtypeBits(to));
      ExprRef low = binary(BinaryOp::Rem, unary(UnaryOp::Trunc, a), constant(from, modulus));
      value = cast(low, DType::Int32);
    } else {
      value = cast(cast(a, DType::Int64), DType::Int32); // the low bits, as Cast wraps
    }
    return codeAs(cast(wrapInteger(value, to), DType::Uint32), to);
  }
  if (to == DType::Float8E8M0) // ONNX's reference takes the value as float32 first
    return codeAs(encodeE8M0(cast(a, DType::Float32), rounding), to);
  // Integers convert exactly to f64 (up to 2^53; larger ones overflow every form anyway).
  if (!isFloat(from))
    a = cast(a, DType::Float64);
  return codeAs(encodeMiniFloat(a, to, rounding), to);
}

} // namespace

ExprRef castLowPrecision(ExprRef a, DType to, LowPrecisionRounding rounding) {
  // Even into its own type a value goes through decoding and encoding: Cast saturates there too
  // (an f8e5m2 infinity becomes its max).
  DType from = a->type;
  if (isLowPrecisionFloat(from)) {
    ExprRef value = decodeFloat(a);
    return isLowPrecision(to) ? encode(value, to, rounding) : cast(value, to);
  }
  if (isLowPrecisionInteger(from)) {
    ExprRef value = decodeInteger(a);
    return isLowPrecision(to) ? encode(value, to, rounding) : cast(value, to);
  }
  SINTER_ASSERT(isLowPrecision(to), "castLowPrecision from ", dtypeName(from), " to ", dtypeName(to));
  return encode(std::move(a), to, rounding);
}

void checkLowPrecisionLowering(const Node &node) {
  std::optional<DType> lowPrecision;
  for (const Value *value : node.inputs())
    if (value && isLowPrecision(value->dtype()))
      lowPrecision = value->dtype();
  for (const Value *value : node.outputs())
    if (value && isLowPrecision(value->dtype()))
      lowPrecision = value->dtype();
  if (!lowPrecision)
    return;
  switch (node.kind()) {
  case OpKind::Cast: case OpKind::CastLike: case OpKind::BitCast:
  case OpKind::QuantizeLinear: case OpKind::DequantizeLinear:
  case OpKind::Identity: case OpKind::Reshape: case OpKind::Flatten: case OpKind::Squeeze:
  case OpKind::Unsqueeze: case OpKind::Transpose: case OpKind::Concat: case OpKind::Split:
  case OpKind::Slice: case OpKind::Pad: case OpKind::Expand: case OpKind::Tile:
  case OpKind::Gather: case OpKind::GatherElements: case OpKind::GatherND:
  case OpKind::DepthToSpace: case OpKind::SpaceToDepth: case OpKind::Where:
  case OpKind::Shape: case OpKind::Size:
    return;
  default: break;
  }
  userError(node.describe(), ": sinter cannot generate code for ", node.opName(), " on ",
            dtypeName(*lowPrecision), " (the low-precision types are only moved, cast, quantized ",
            "and dequantized; cast to a wider type first)");
}

} // namespace sinter::codegen
