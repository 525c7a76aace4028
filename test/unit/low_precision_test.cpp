// The low-precision element types (low_precision.h): spot values from the ONNX spec's tables
// (Cast's float8 rules, the float4 and int4 pages, TensorProto packing), and the code generators'
// kernel-IR expansion of the conversions (low_precision_cast.h) against the scalar conversions,
// exhaustively over codes and over a dense set of floats. Whole-range agreement of the scalar
// conversions with ml_dtypes and ONNX's reference is test/python/test_low_precision.py's.
#include "sinter/codegen/kernel/low_precision_cast.h"
#include "sinter/codegen/kernel/expr_evaluator.h"
#include "sinter/ir/low_precision.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

using namespace sinter;
using namespace sinter::codegen;

namespace {

const double kNan = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();
constexpr DType kFloatTypes[] = {DType::Float8E4M3FN, DType::Float8E4M3FNUZ, DType::Float8E5M2,
                                 DType::Float8E5M2FNUZ, DType::Float4E2M1, DType::Float8E8M0};
constexpr DType kIntegerTypes[] = {DType::Int4, DType::Uint4, DType::Int2, DType::Uint2};

uint8_t encode(DType type, double value, bool saturate = true) {
  LowPrecisionRounding rounding;
  rounding.saturate = saturate;
  return encodeLowPrecisionFloat(type, value, rounding);
}

} // namespace

TEST(LowPrecision, Float8FollowsTheSpecTables) {
  // Largest finite values and their codes.
  EXPECT_EQ(encode(DType::Float8E4M3FN, 448), 0x7E);
  EXPECT_EQ(encode(DType::Float8E4M3FNUZ, 240), 0x7F);
  EXPECT_EQ(encode(DType::Float8E5M2, 57344), 0x7B);
  EXPECT_EQ(encode(DType::Float8E5M2FNUZ, 57344), 0x7F);
  // Saturating: infinities and overflow become +-max.
  EXPECT_EQ(encode(DType::Float8E4M3FN, kInf), 0x7E);
  EXPECT_EQ(encode(DType::Float8E4M3FN, -1e6), 0xFE);
  EXPECT_EQ(encode(DType::Float8E5M2, -kInf), 0xFB);
  // Not saturating: NaN for the finite-only forms, infinity for e5m2.
  EXPECT_EQ(encode(DType::Float8E4M3FN, kInf, false), 0x7F);
  EXPECT_EQ(encode(DType::Float8E4M3FN, -kInf, false), 0xFF);
  EXPECT_EQ(encode(DType::Float8E4M3FNUZ, kInf, false), 0x80);
  EXPECT_EQ(encode(DType::Float8E5M2, 1e6, false), 0x7C);
  EXPECT_EQ(encode(DType::Float8E5M2, -1e6, false), 0xFC);
  EXPECT_EQ(encode(DType::Float8E5M2FNUZ, -kInf, false), 0x80);
  // Zeros: -0 stays -0 where the form has it.
  EXPECT_EQ(encode(DType::Float8E4M3FN, -0.0), 0x80);
  EXPECT_EQ(encode(DType::Float8E5M2, -0.0), 0x80);
  EXPECT_EQ(encode(DType::Float8E4M3FNUZ, -0.0), 0x00);
  EXPECT_EQ(encode(DType::Float8E5M2FNUZ, -0.0), 0x00);
  // NaN.
  EXPECT_EQ(encode(DType::Float8E4M3FN, kNan), 0x7F);
  EXPECT_EQ(encode(DType::Float8E4M3FNUZ, kNan), 0x80);
  EXPECT_TRUE(std::isnan(lowPrecisionFloatValue(DType::Float8E4M3FN, 0xFF)));
  EXPECT_TRUE(std::isnan(lowPrecisionFloatValue(DType::Float8E5M2, 0x7D)));
  EXPECT_EQ(lowPrecisionFloatValue(DType::Float8E5M2, 0xFC), -kInf);
  EXPECT_TRUE(std::isnan(lowPrecisionFloatValue(DType::Float8E5M2FNUZ, 0x80)));
  // Subnormals: the smallest is 2^(1 - bias - mantissa bits).
  EXPECT_EQ(lowPrecisionFloatValue(DType::Float8E4M3FN, 0x01), std::ldexp(1.0, -9));
  EXPECT_EQ(lowPrecisionFloatValue(DType::Float8E4M3FNUZ, 0x01), std::ldexp(1.0, -10));
  EXPECT_EQ(lowPrecisionFloatValue(DType::Float8E5M2, 0x01), std::ldexp(1.0, -16));
  EXPECT_EQ(lowPrecisionFloatValue(DType::Float8E5M2FNUZ, 0x01), std::ldexp(1.0, -17));
  // Round to nearest, ties to even: 464 lies halfway between 448 (mantissa 110) and 480.
  EXPECT_EQ(encode(DType::Float8E4M3FN, 464), 0x7E);
  EXPECT_EQ(encode(DType::Float8E4M3FN, 464, false), 0x7E);
  EXPECT_EQ(encode(DType::Float8E4M3FN, 465, false), 0x7F); // rounds to 480: beyond max
  EXPECT_EQ(encode(DType::Float8E4M3FN, 1.0625), 0x38);      // halfway 1 and 1.125: even
  EXPECT_EQ(encode(DType::Float8E4M3FN, 1.1875), 0x3A);      // halfway 1.125 and 1.25: even
  EXPECT_EQ(encode(DType::Float8E4M3FN, std::ldexp(1.0, -10)), 0x00); // half the smallest: even
  EXPECT_EQ(encode(DType::Float8E4M3FN, std::ldexp(1.5, -10)), 0x01);
}

TEST(LowPrecision, Float4AndE8M0) {
  // E2M1: 0, 0.5, 1, 1.5, 2, 3, 4, 6 are codes 0..7; always saturating.
  const double values[] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  for (int code = 0; code < 8; ++code) {
    EXPECT_EQ(lowPrecisionFloatValue(DType::Float4E2M1, uint8_t(code)), values[code]);
    EXPECT_EQ(lowPrecisionFloatValue(DType::Float4E2M1, uint8_t(code | 8)), -values[code]);
    EXPECT_EQ(encode(DType::Float4E2M1, values[code]), code);
  }
  EXPECT_EQ(encode(DType::Float4E2M1, 5), 6);  // halfway 4 and 6: even
  EXPECT_EQ(encode(DType::Float4E2M1, 0.25), 0); // halfway 0 and 0.5: even
  EXPECT_EQ(encode(DType::Float4E2M1, 1e9, false), 7);
  EXPECT_EQ(encode(DType::Float4E2M1, -kInf, false), 15);
  // E8M0: powers of two; the default rounds up.
  EXPECT_EQ(lowPrecisionFloatValue(DType::Float8E8M0, 127), 1.0f);
  EXPECT_EQ(lowPrecisionFloatValue(DType::Float8E8M0, 0), float(std::ldexp(1.0, -127)));
  EXPECT_TRUE(std::isnan(lowPrecisionFloatValue(DType::Float8E8M0, 255)));
  EXPECT_EQ(encode(DType::Float8E8M0, 1.0), 127);
  EXPECT_EQ(encode(DType::Float8E8M0, 0.124), 124); // up: 0.125
  LowPrecisionRounding down;
  down.e8m0 = E8M0Rounding::Down;
  EXPECT_EQ(encodeLowPrecisionFloat(DType::Float8E8M0, 0.124, down), 123);
  LowPrecisionRounding nearest;
  nearest.e8m0 = E8M0Rounding::Nearest;
  EXPECT_EQ(encodeLowPrecisionFloat(DType::Float8E8M0, 1.4, nearest), 127);
  EXPECT_EQ(encodeLowPrecisionFloat(DType::Float8E8M0, 1.6, nearest), 128);
  EXPECT_EQ(encode(DType::Float8E8M0, kInf), 255);
}

TEST(LowPrecision, SubByteIntegers) {
  EXPECT_EQ(lowPrecisionIntegerMin(DType::Int4), -8);
  EXPECT_EQ(lowPrecisionIntegerMax(DType::Uint2), 3);
  // Bytes hold the value; only the low bits are read.
  EXPECT_EQ(lowPrecisionIntegerValue(DType::Int4, 0xF8), -8);
  EXPECT_EQ(lowPrecisionIntegerValue(DType::Int4, 0x08), -8);
  EXPECT_EQ(lowPrecisionIntegerValue(DType::Uint4, 0xFF), 15);
  EXPECT_EQ(lowPrecisionIntegerValue(DType::Int2, 0x03), -1);
  // Cast from integers keeps the low bits (200 -> 0b1000 -> -8), from floats truncates first.
  EXPECT_EQ(int8_t(wrapToLowPrecisionInteger(DType::Int4, 200)), -8);
  EXPECT_EQ(int8_t(wrapToLowPrecisionInteger(DType::Int4, -9)), 7);
  EXPECT_EQ(wrapToLowPrecisionInteger(DType::Uint2, 7), 3);
  EXPECT_EQ(int8_t(truncateToLowPrecisionInteger(DType::Int4, -9.5)), 7);
  EXPECT_EQ(int8_t(truncateToLowPrecisionInteger(DType::Int4, 8.9)), -8);
  EXPECT_EQ(truncateToLowPrecisionInteger(DType::Uint4, kNan), 0);
  EXPECT_EQ(truncateToLowPrecisionInteger(DType::Uint4, 1e30), 0); // 1e30 is a multiple of 16
  // QuantizeLinear clamps instead.
  EXPECT_EQ(int8_t(saturateToLowPrecisionInteger(DType::Int4, 100)), 7);
  EXPECT_EQ(int8_t(saturateToLowPrecisionInteger(DType::Int2, -100)), -2);
}

TEST(LowPrecision, PackingFollowsTensorProto) {
  // The first element in the low bits; an odd count pads with zero.
  const uint8_t int4[] = {uint8_t(1), uint8_t(-1), uint8_t(7)};
  uint8_t packed[2];
  packLowPrecision(DType::Int4, int4, 3, packed);
  EXPECT_EQ(packed[0], 0xF1);
  EXPECT_EQ(packed[1], 0x07);
  uint8_t back[3];
  unpackLowPrecision(DType::Int4, packed, 3, back);
  EXPECT_EQ(int8_t(back[1]), -1); // sign-extended again
  EXPECT_EQ(back[2], 7);
  const uint8_t uint2[] = {0, 1, 2, 3, 1};
  uint8_t packed2[2];
  EXPECT_EQ(packedByteCount(DType::Uint2, 5), 2);
  packLowPrecision(DType::Uint2, uint2, 5, packed2);
  EXPECT_EQ(packed2[0], 0xE4); // 3<<6 | 2<<4 | 1<<2 | 0
  EXPECT_EQ(packed2[1], 0x01);
  EXPECT_EQ(packedByteCount(DType::Float8E5M2, 5), 5);
}

// ---- The kernel-IR expansion against the scalar conversions ----------------------------------

namespace {

/// Floats that probe every rounding boundary of `type`: its values, the midpoints between
/// neighbours and the floats next to them, specials and a log-uniform sample.
std::vector<double> probes(DType type) {
  std::vector<double> values = {0.0, -0.0, kNan, -kNan, kInf, -kInf, 1e30, -1e30, 1e-30, -1e-30};
  std::vector<double> finite;
  for (int code = 0; code < 256; ++code) {
    float value = lowPrecisionFloatValue(type, uint8_t(code));
    if (std::isfinite(value))
      finite.push_back(value);
  }
  std::sort(finite.begin(), finite.end());
  for (size_t i = 0; i < finite.size(); ++i) {
    values.push_back(finite[i]);
    if (i + 1 < finite.size() && finite[i + 1] != finite[i]) {
      float middle = float((finite[i] + finite[i + 1]) / 2);
      values.push_back(middle);
      values.push_back(std::nextafter(middle, kInf));
      values.push_back(std::nextafter(middle, -kInf));
    }
  }
  std::mt19937 random(7);
  std::uniform_real_distribution<double> exponent(-140, 140);
  for (int i = 0; i < 400; ++i)
    values.push_back((i % 2 ? -1 : 1) * std::exp2(exponent(random)));
  return values;
}

struct ExpansionFixture {
  KernelBuilder builder{"k"};
  std::vector<float> f32;
  std::vector<double> f64;
  std::vector<uint8_t> bytes;
  int f32Buffer, f64Buffer, byteBuffer[kNumDTypes] = {};

  explicit ExpansionFixture(const std::vector<double> &values) {
    for (double value : values) {
      f32.push_back(float(value));
      f64.push_back(value);
    }
    for (int code = 0; code < 256; ++code)
      bytes.push_back(uint8_t(code));
    f32Buffer = builder.addBuffer("f32", DType::Float32, int64_t(f32.size()), false);
    f64Buffer = builder.addBuffer("f64", DType::Float64, int64_t(f64.size()), false);
    for (DType type : kFloatTypes)
      byteBuffer[int(type)] = builder.addBuffer(std::string(dtypeName(type)), type, 256, false);
    for (DType type : kIntegerTypes)
      byteBuffer[int(type)] = builder.addBuffer(std::string(dtypeName(type)), type, 256, false);
  }
  ExprEvaluator evaluator() {
    ExprEvaluator eval(builder.kernel());
    eval.setBuffer(f32Buffer, f32.data());
    eval.setBuffer(f64Buffer, f64.data());
    for (DType type : kFloatTypes)
      eval.setBuffer(byteBuffer[int(type)], bytes.data());
    for (DType type : kIntegerTypes)
      eval.setBuffer(byteBuffer[int(type)], bytes.data());
    return eval;
  }
};

uint8_t byteOf(const ScalarValue &value) { return uint8_t(value.intValue); }

} // namespace

TEST(LowPrecisionCast, DecodingMatchesTheScalarConversion) {
  ExpansionFixture f({0.0});
  ExprEvaluator eval = f.evaluator();
  for (DType type : kFloatTypes)
    for (int code = 0; code < 256; ++code) {
      ExprRef element = load(f.byteBuffer[int(type)], type, intConstant(code));
      double got = eval.evaluate(cast(element, DType::Float32)).floatValue;
      float want = lowPrecisionFloatValue(type, uint8_t(code));
      if (std::isnan(want))
        EXPECT_TRUE(std::isnan(got)) << dtypeName(type) << " code " << code;
      else
        EXPECT_EQ(std::bit_cast<uint32_t>(float(got)), std::bit_cast<uint32_t>(want))
            << dtypeName(type) << " code " << code << ": " << got << " vs " << want;
    }
  for (DType type : kIntegerTypes)
    for (int code = 0; code < 256; ++code) {
      ExprRef element = load(f.byteBuffer[int(type)], type, intConstant(code));
      EXPECT_EQ(eval.evaluate(cast(element, DType::Int32)).intValue,
                lowPrecisionIntegerValue(type, uint8_t(code)))
          << dtypeName(type) << " byte " << code;
    }
}

TEST(LowPrecisionCast, EncodingMatchesTheScalarConversion) {
  for (DType type : kFloatTypes) {
    std::vector<double> values = probes(type);
    ExpansionFixture f(values);
    ExprEvaluator eval = f.evaluator();
    std::vector<LowPrecisionRounding> roundings;
    for (bool saturate : {true, false})
      for (E8M0Rounding mode : {E8M0Rounding::Up, E8M0Rounding::Down, E8M0Rounding::Nearest})
        if (type == DType::Float8E8M0 || mode == E8M0Rounding::Up)
          roundings.push_back({saturate, mode});
    for (const LowPrecisionRounding &rounding : roundings)
      for (size_t i = 0; i < values.size(); ++i) {
        ExprRef x32 = load(f.f32Buffer, DType::Float32, intConstant(int64_t(i)));
        ExprRef x64 = load(f.f64Buffer, DType::Float64, intConstant(int64_t(i)));
        EXPECT_EQ(byteOf(eval.evaluate(castLowPrecision(x32, type, rounding))),
                  encodeLowPrecisionFloat(type, f.f32[i], rounding))
            << dtypeName(type) << " from f32 " << f.f32[i] << " saturate " << rounding.saturate;
        EXPECT_EQ(byteOf(eval.evaluate(castLowPrecision(x64, type, rounding))),
                  encodeLowPrecisionFloat(type, f.f64[i], rounding))
            << dtypeName(type) << " from f64 " << f.f64[i] << " saturate " << rounding.saturate;
      }
  }
}

TEST(LowPrecisionCast, IntegerConversionsMatchTheScalarOnes) {
  std::vector<double> values = {0, -0.5, 0.5, 1.5, -1.5, 7.9, 8, -8.5, -9, 15.5, 16, 17, -100.25,
                                1e10, -1e10, 1e30, kNan, kInf, -kInf};
  ExpansionFixture f(values);
  ExprEvaluator eval = f.evaluator();
  for (DType type : kIntegerTypes) {
    for (size_t i = 0; i < values.size(); ++i) {
      ExprRef x = load(f.f32Buffer, DType::Float32, intConstant(int64_t(i)));
      EXPECT_EQ(byteOf(eval.evaluate(cast(x, type))), truncateToLowPrecisionInteger(type, f.f32[i]))
          << dtypeName(type) << " from " << f.f32[i];
    }
    for (int64_t value : {0, 1, -1, 7, 8, -9, 200, -200, 255, 1000001}) {
      ExprRef x = intConstant(value, DType::Int32);
      EXPECT_EQ(byteOf(eval.evaluate(cast(x, type))), wrapToLowPrecisionInteger(type, value))
          << dtypeName(type) << " from " << value;
    }
  }
  // Between low-precision types: through the value.
  ExprRef e4m3 = load(f.byteBuffer[int(DType::Float8E4M3FN)], DType::Float8E4M3FN, intConstant(0x56));
  EXPECT_EQ(lowPrecisionFloatValue(DType::Float8E4M3FN, 0x56), 14.0f);
  EXPECT_EQ(int8_t(byteOf(eval.evaluate(cast(e4m3, DType::Int4)))), -2); // 14 -> 0b1110
  EXPECT_EQ(byteOf(eval.evaluate(cast(e4m3, DType::Float8E5M2))), encode(DType::Float8E5M2, 14.0));
}
