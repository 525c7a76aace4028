// Interval analysis of kernel-IR indices (codegen/index_ranges.h): the ranges it derives must
// contain every value the expression can take, and fits32 must refuse anything that could
// overflow 32 bits.
#include "sinter/codegen/index_ranges.h"

#include <gtest/gtest.h>

using namespace sinter;
using namespace sinter::codegen;

TEST(IndexRanges, FollowsTheParallelExtentLoopsAndAssignments) {
  KernelBuilder builder("k");
  int data = builder.addBuffer("x", DType::Int64, 16, false);
  int row = builder.addVariable("row", DType::Int64);
  int r = builder.addVariable("r", DType::Int64);
  int acc = builder.addVariable("acc", DType::Int64);
  builder.setParallelExtent(100);
  ExprRef gid = builder.gid();
  builder.emit(assign(row, div(gid, 10)));
  builder.emit(assign(acc, intConstant(0)));
  builder.emit(forLoop(r, intConstant(7), {assign(acc, add(var(acc, DType::Int64), var(r, DType::Int64)))}));
  Kernel kernel = builder.take();
  IndexRanges ranges(kernel);

  auto range = ranges.of(var(row, DType::Int64));
  ASSERT_TRUE(range);
  EXPECT_EQ(range->lo, 0);
  EXPECT_EQ(range->hi, 9);
  range = ranges.of(sub(mul(var(r, DType::Int64), 3), intConstant(4)));
  ASSERT_TRUE(range);
  EXPECT_EQ(range->lo, -4);
  EXPECT_EQ(range->hi, 14);
  range = ranges.of(rem(sub(gid, intConstant(50)), intConstant(8)));
  ASSERT_TRUE(range);
  EXPECT_EQ(range->lo, -7); // C's remainder keeps the dividend's sign
  EXPECT_EQ(range->hi, 7);

  // An accumulator assigned from itself, and data loaded from memory, have no known range.
  EXPECT_FALSE(ranges.of(var(acc, DType::Int64)));
  EXPECT_FALSE(ranges.of(load(data, DType::Int64, gid)));
  EXPECT_FALSE(ranges.fits32(add(gid, load(data, DType::Int64, gid))));

  EXPECT_TRUE(ranges.fits32(add(mul(var(row, DType::Int64), 1000), gid)));
  // The result fits but an intermediate does not: 32-bit arithmetic would overflow on the way.
  ExprRef big = mul(gid, int64_t(1) << 30);
  EXPECT_FALSE(ranges.fits32(big));
  EXPECT_FALSE(ranges.fits32(div(big, int64_t(1) << 30)));

  ranges.setVariable(row, {0, int64_t(1) << 40});
  EXPECT_FALSE(ranges.fits32(add(var(row, DType::Int64), gid)));
}
