// Reference evaluator, part 1: QuantizeLinear and DequantizeLinear, checked against values worked
// out by hand from the ONNX spec (round half to even, saturate; per-tensor, per-axis, blocked).
#include "reference_test_util.h"

using namespace sinter;
using namespace sinter::testing;

namespace {
int64_t onnxType(DType dtype) { return dtypeToOnnx(dtype); }
} // namespace

TEST(ReferenceQuantize, PerTensorRoundsHalfToEvenAndSaturates) {
  Tensor x = f32({8}, {0, 1, 2.5, 3.5, -1, 1000, 0.25, 0.75});
  auto y = runOne(OpKind::QuantizeLinear, {x, f32({}, {0.5}), makeInts(DType::Uint8, {}, {10})},
                  typeOf(DType::Uint8, {8}));
  // x / 0.5 = 0 2 5 7 -2 2000 0.5 1.5 -> rint -> 0 2 5 7 -2 2000 0 2; + 10; clamp to [0, 255]
  expectInts(y, DType::Uint8, {8}, {10, 12, 15, 17, 8, 255, 10, 12});
  // No zero point: uint8 with zero point 0.
  expectInts(runOne(OpKind::QuantizeLinear, {f32({3}, {-3, 2.5, 300}), f32({}, {1})},
                    typeOf(DType::Uint8, {3})),
             DType::Uint8, {3}, {0, 2, 255});
  expectInts(runOne(OpKind::QuantizeLinear,
                    {f32({3}, {-300, -1.5, 300}), f32({1}, {1}), makeInts(DType::Int8, {1}, {-1})},
                    typeOf(DType::Int8, {3})),
             DType::Int8, {3}, {-128, -3, 127});
  // output_dtype picks the type when there is no zero point.
  expectInts(runOne(OpKind::QuantizeLinear, {f32({2}, {-40000, 12.5}), f32({}, {1})},
                    typeOf(DType::Int16, {2}), {{"output_dtype", onnxType(DType::Int16)}}),
             DType::Int16, {2}, {-32768, 12});
  expectInts(runOne(OpKind::QuantizeLinear,
                    {f32({2}, {-1, 70000}), f32({}, {1}), makeInts(DType::Uint16, {}, {0})},
                    typeOf(DType::Uint16, {2})),
             DType::Uint16, {2}, {0, 65535});
  EXPECT_USER_ERROR(runOne(OpKind::QuantizeLinear, {x, f32({}, {1}), makeInts(DType::Uint8, {}, {0})},
                           typeOf(DType::Uint8, {8}), {{"output_dtype", onnxType(DType::Int8)}}),
                    "differs");
}

TEST(ReferenceQuantize, DivisionHappensAtTheScalesPrecision) {
  // 0.35f / 0.1f rounds to exactly 3.5 in float32, a tie that goes to 4 (even); the exact
  // quotient of the two float values, 3.49999989, would round to 3.
  ASSERT_EQ(0.35f / 0.1f, 3.5f);
  auto y = runOne(OpKind::QuantizeLinear, {f32({1}, {double(0.35f)}), f32({}, {double(0.1f)})},
                  typeOf(DType::Uint8, {1}));
  expectInts(y, DType::Uint8, {1}, {4});
  // With precision = f64 (beyond the spec's float types, but a float type) the exact quotient wins.
  auto wide = runOne(OpKind::QuantizeLinear, {f32({1}, {double(0.35f)}), f32({}, {double(0.1f)})},
                     typeOf(DType::Uint8, {1}), {{"precision", onnxType(DType::Float64)}});
  expectInts(wide, DType::Uint8, {1}, {3});
}

TEST(ReferenceQuantize, PerAxisAndBlocked) {
  Tensor x = f32({2, 3}, {1, 2, 4, -1, -2, -4});
  auto perAxis = runOne(OpKind::QuantizeLinear,
                        {x, f32({3}, {1, 2, 4}), makeInts(DType::Int8, {3}, {0, 1, 2})},
                        typeOf(DType::Int8, {2, 3}));
  expectInts(perAxis, DType::Int8, {2, 3}, {1, 2, 3, -1, 0, 1});
  auto axis0 = runOne(OpKind::QuantizeLinear, {x, f32({2}, {1, 0.5}), makeInts(DType::Int8, {2}, {0, 0})},
                      typeOf(DType::Int8, {2, 3}), {{"axis", int64_t(0)}});
  expectInts(axis0, DType::Int8, {2, 3}, {1, 2, 4, -2, -4, -8});
  // Blocks of 2 along axis 1; the last block is partial.
  Tensor wide = f32({1, 5}, {10, 20, 30, 40, 50});
  auto blocked = runOne(OpKind::QuantizeLinear,
                        {wide, f32({1, 3}, {10, 5, 50}), makeInts(DType::Uint8, {1, 3}, {0, 1, 2})},
                        typeOf(DType::Uint8, {1, 5}), {{"block_size", int64_t(2)}});
  expectInts(blocked, DType::Uint8, {1, 5}, {1, 2, 7, 9, 3});
  EXPECT_USER_ERROR(runOne(OpKind::QuantizeLinear, {x, f32({2}, {1, 2})}, typeOf(DType::Uint8, {2, 3})),
                    "per-axis");
  EXPECT_USER_ERROR(runOne(OpKind::QuantizeLinear, {wide, f32({1, 2}, {1, 2})},
                           typeOf(DType::Uint8, {1, 5}), {{"block_size", int64_t(2)}}),
                    "blocked");
  EXPECT_USER_ERROR(runOne(OpKind::QuantizeLinear,
                           {x, f32({3}, {1, 2, 4}), makeInts(DType::Uint8, {1}, {0})},
                           typeOf(DType::Uint8, {2, 3})),
                    "zero point's shape");
}

TEST(ReferenceDequantize, ScalesAndShifts) {
  auto y = runOne(OpKind::DequantizeLinear,
                  {makeInts(DType::Uint8, {3}, {0, 128, 255}), f32({}, {0.5}), makeInts(DType::Uint8, {}, {128})},
                  typeOf(DType::Float32, {3}));
  expectTensor(y, DType::Float32, {3}, {-64, 0, 63.5});
  // Per axis 0 with int8.
  auto perAxis = runOne(OpKind::DequantizeLinear,
                        {makeInts(DType::Int8, {2, 2}, {-128, 127, 10, -10}), f32({2}, {1, 0.25}),
                         makeInts(DType::Int8, {2}, {0, 2})},
                        typeOf(DType::Float32, {2, 2}), {{"axis", int64_t(0)}});
  expectTensor(perAxis, DType::Float32, {2, 2}, {-128, 127, 2, -3});
  // int32 without a zero point; x - 0 is exact before the float multiply.
  auto int32 = runOne(OpKind::DequantizeLinear, {makeInts(DType::Int32, {2}, {-2000000000, 7}), f32({}, {2})},
                      typeOf(DType::Float32, {2}));
  expectTensor(int32, DType::Float32, {2}, {-4e9, 14});
  // output_dtype rounds the float32 product to float16.
  auto half = runOne(OpKind::DequantizeLinear, {makeInts(DType::Uint8, {1}, {3}), f32({}, {0.1})},
                     typeOf(DType::Float16, {1}), {{"output_dtype", onnxType(DType::Float16)}});
  expectTensor(half, DType::Float16, {1}, {halfToFloat(floatToHalf(3 * 0.1f))});
  // The scale's type is the default output type.
  auto bf = runOne(OpKind::DequantizeLinear,
                   {makeInts(DType::Int8, {1}, {3}), makeTensor(DType::BFloat16, {}, {0.5})},
                   typeOf(DType::BFloat16, {1}));
  expectTensor(bf, DType::BFloat16, {1}, {1.5});
  EXPECT_USER_ERROR(runOne(OpKind::DequantizeLinear,
                           {makeInts(DType::Uint8, {1}, {3}), f32({}, {1}), makeInts(DType::Int8, {}, {0})},
                           typeOf(DType::Float32, {1})),
                    "zero point is i8");
}
