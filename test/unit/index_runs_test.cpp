// How index expressions move along a variable (codegen/kernel/index_runs.h): strides per step,
// over runs, and strided gathers. The expected strides follow from the arithmetic of each index
// (worked out in the comments), not from the code.
#include "sinter/codegen/kernel/index_runs.h"

#include <gtest/gtest.h>

using namespace sinter;
using namespace sinter::codegen;

namespace {

constexpr int kI = 0, kJ = 1, kR = 2;
ExprRef i() { return var(kI, DType::Int64); }
ExprRef j() { return var(kJ, DType::Int64); }
ExprRef r() { return var(kR, DType::Int64); }

} // namespace

TEST(IndexRuns, LinearStrideOfARowMajorIndex) {
  // i * 12 + r: one more r is the next element, one more i the next row of 12.
  ExprRef index = add(mul(i(), 12), r());
  EXPECT_EQ(linearStride(index, kR), 1);
  EXPECT_EQ(linearStride(index, kI), 12);
  EXPECT_EQ(linearStride(index, kJ), 0); // j does not appear
  // (i - r) * 3 moves by -3 per r.
  EXPECT_EQ(linearStride(mul(sub(i(), r()), 3), kR), -3);
  // A remainder, and a product of two variables, are not linear.
  EXPECT_EQ(linearStride(rem(r(), 4), kR), std::nullopt);
  EXPECT_EQ(linearStride(mul(i(), j()), kI), std::nullopt);
}

TEST(IndexRuns, RunStrideSeesThroughDivisionsByMultiplesOfTheRun) {
  // r / 64 * 4096 + r % 64 over runs of 8 starting at multiples of 8: r / 64 is the same all
  // along such a run (64 is a multiple of 8), r % 64 steps by one, so the index steps by one.
  ExprRef index = add(mul(div(r(), 64), 4096), rem(r(), 64));
  EXPECT_EQ(runStride(index, kR, 8), 1);
  EXPECT_EQ(linearStride(index, kR), std::nullopt); // not linear over all of r
  // Divided by 12, a run of 8 may cross a multiple of 12 (r = 8 .. 15 crosses 12).
  EXPECT_EQ(runStride(add(mul(div(r(), 12), 4096), rem(r(), 12)), kR, 8), std::nullopt);
  // A convolution's window read, channels fastest in r (C = 16), NCHW input of H * W = 100:
  // (r % 16) * 100 + (r / 16): the channel moves by one a step (100 elements), the window
  // position is fixed over a run of 8 channels.
  EXPECT_EQ(runStride(add(mul(rem(r(), 16), 100), div(r(), 16)), kR, 8), 100);
}

TEST(IndexRuns, StridedGatherOfAPaddedWindow) {
  // select(r / 16 < 3, f32(x[(r % 16) * 100 + r / 16]), 0) with x in f16: the test is fixed over
  // a run of 8 channels and the load moves by 100 elements a step.
  ExprRef index = add(mul(rem(r(), 16), 100), div(r(), 16));
  ExprRef element = load(0, DType::Float16, index);
  ExprRef test = binary(BinaryOp::Lt, div(r(), 16), intConstant(3));
  ExprRef value = select(test, cast(element, DType::Float32), constant(DType::Float32, 0));
  std::optional<StridedGather> gather = stridedGather(value, DType::Float16, kR, 8);
  ASSERT_TRUE(gather.has_value());
  EXPECT_EQ(gather->stride, 100);
  EXPECT_EQ(gather->load, element.get());
  EXPECT_EQ(gather->test.get(), test.get());
  // Unconditional: no test.
  std::optional<StridedGather> plain = stridedGather(cast(element, DType::Float32), DType::Float16, kR, 8);
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(plain->test, nullptr);
  // A test that changes within a run (r % 16 < 3) is no strided gather, nor is a load of
  // another 16-bit type than the one stored.
  ExprRef varying = binary(BinaryOp::Lt, rem(r(), 16), intConstant(3));
  EXPECT_FALSE(stridedGather(select(varying, cast(element, DType::Float32), constant(DType::Float32, 0)),
                             DType::Float16, kR, 8));
  EXPECT_FALSE(stridedGather(cast(element, DType::Float32), DType::BFloat16, kR, 8));
}
