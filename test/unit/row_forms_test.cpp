// RowForms (row_forms.h) against brute force: what it proves must hold at every point, checked
// by evaluating the expression at all of them (IndexProgram); and the forms the CPU's row split
// relies on (shuffles, planes, clamped indices, batched images) must be proved.
#include "sinter/codegen/kernel/index_program.h"
#include "sinter/codegen/kernel/row_forms.h"

#include <gtest/gtest.h>

#include <random>

namespace sinter::codegen {
namespace {

ExprRef gid() { return var(0, DType::Int64); }
ExprRef k(int64_t value) { return intConstant(value); }
ExprRef clamp(ExprRef x, int64_t lo, int64_t hi) {
  return binary(BinaryOp::Min, binary(BinaryOp::Max, std::move(x), k(lo)), k(hi));
}

/// What the expression is along rows of `length`, by evaluating it at every point.
AlongRow bruteForce(const ExprRef &e, int64_t extent, int64_t length) {
  std::optional<IndexProgram> program = IndexProgram::compile(e);
  EXPECT_TRUE(program.has_value());
  std::span<const int64_t> values = program->evaluate(0, 0, extent);
  bool invariant = true, unit = true;
  for (int64_t x = 0; x < extent; ++x) {
    const int64_t start = values[size_t(x - x % length)];
    invariant = invariant && values[size_t(x)] == start;
    unit = unit && values[size_t(x)] == start + x % length;
  }
  return invariant ? AlongRow::Invariant : unit ? AlongRow::Unit : AlongRow::Neither;
}

AlongRow proved(const ExprRef &e, int64_t extent, int64_t length) { return RowForms(extent, length).classify(e); }

TEST(RowForms, ProvesTheIndicesOfPlanesAndChannels) {
  const int64_t extent = 8 * 232 * 196; // eight images of 232 channels of 14 x 14
  EXPECT_EQ(proved(gid(), extent, 196), AlongRow::Unit);
  EXPECT_EQ(proved(rem(gid(), 196), extent, 196), AlongRow::Unit);
  EXPECT_EQ(proved(rem(gid(), 14), extent, 14), AlongRow::Unit);
  EXPECT_EQ(proved(div(gid(), 14), extent, 14), AlongRow::Invariant);
  EXPECT_EQ(proved(rem(div(gid(), 196), 232), extent, 196), AlongRow::Invariant);
  EXPECT_EQ(proved(rem(div(gid(), 196), 232), extent, 14), AlongRow::Invariant);
  EXPECT_EQ(proved(div(gid(), 232 * 196), extent, 196), AlongRow::Invariant);
  // The channel of a shuffled concatenation's first half, clamped as a Slice clamps it.
  ExprRef channel = clamp(rem(div(gid(), 196), 232), 0, 115);
  EXPECT_EQ(proved(channel, extent, 196), AlongRow::Invariant);
  // Re-flattened: ((image * 232 + channel) * 14 + row) * 14 + column, unit along a plane's rows.
  ExprRef flat = add(mul(add(mul(add(mul(div(gid(), 232 * 196), 232), channel), 14), rem(div(gid(), 14), 14)), 14),
                     rem(gid(), 14));
  EXPECT_EQ(proved(flat, extent, 14), AlongRow::Unit);
  EXPECT_EQ(proved(flat, extent, 196), AlongRow::Neither); // the division by 14 is per column there
  EXPECT_EQ(bruteForce(flat, extent, 14), AlongRow::Unit);
  // A clamp the values never reach is the value itself; one they do is not proved.
  EXPECT_EQ(proved(clamp(rem(gid(), 196), 0, 195), extent, 196), AlongRow::Unit);
  EXPECT_EQ(proved(clamp(rem(gid(), 196), 0, 100), extent, 196), AlongRow::Neither);
  // Comparisons of an invariant; and one decided by the intervals.
  EXPECT_EQ(proved(binary(BinaryOp::Lt, rem(div(gid(), 196), 232), k(116)), extent, 196), AlongRow::Invariant);
  EXPECT_EQ(proved(binary(BinaryOp::Lt, rem(gid(), 196), k(196)), extent, 196), AlongRow::Invariant);
}

TEST(RowForms, DoesNotClaimWhatFails) {
  const int64_t extent = 4 * 12 * 10;
  // Rows of 4 within planes of 10: a row may cross a plane's end.
  EXPECT_EQ(proved(div(gid(), 10), extent, 4), AlongRow::Neither);
  EXPECT_EQ(bruteForce(div(gid(), 10), extent, 4), AlongRow::Neither);
  EXPECT_EQ(proved(rem(gid(), 10), extent, 4), AlongRow::Neither);
  EXPECT_EQ(proved(mul(gid(), 2), extent, 4), AlongRow::Neither);
  EXPECT_EQ(proved(sub(k(100), gid()), extent, 4), AlongRow::Neither);
  EXPECT_EQ(proved(add(gid(), gid()), extent, 4), AlongRow::Neither);
  // A load is not index arithmetic of gid alone.
  EXPECT_EQ(proved(load(0, DType::Int64, gid()), extent, 4), AlongRow::Neither);
  // Negative values: truncating division is not floor, so nothing is claimed.
  EXPECT_EQ(proved(div(sub(gid(), k(5)), 4), extent, 4), AlongRow::Neither);
}

TEST(RowForms, AnInt32ThatWrapsIsNotAUnit) {
  const int64_t extent = int64_t(1) << 33, length = 1 << 16;
  ExprRef narrow = cast(gid(), DType::Int32);
  EXPECT_EQ(proved(narrow, extent, length), AlongRow::Neither);
  EXPECT_EQ(proved(cast(rem(gid(), 1 << 20), DType::Int32), extent, length), AlongRow::Unit);
}

/// A random index expression of gid: sums, products by constants, divisions and remainders by
/// small constants, clamps, comparisons and selects, as lowering builds them.
ExprRef randomIndex(std::mt19937 &rng, int depth) {
  auto pick = [&](int n) { return int(std::uniform_int_distribution<int>(0, n - 1)(rng)); };
  auto small = [&] { return int64_t(std::uniform_int_distribution<int>(1, 24)(rng)); };
  if (depth == 0)
    return pick(4) == 0 ? k(small()) : gid();
  ExprRef a = randomIndex(rng, depth - 1);
  switch (pick(9)) {
  case 0: return add(a, randomIndex(rng, depth - 1));
  case 1: return sub(a, randomIndex(rng, depth - 1));
  case 2: return mul(a, small());
  case 3: return div(a, small());
  case 4: return rem(a, small());
  case 5: return clamp(a, 0, small() * 4);
  case 6: return select(binary(BinaryOp::Lt, randomIndex(rng, depth - 1), k(small() * 3)), a,
                        randomIndex(rng, depth - 1));
  case 7: return mul(a, randomIndex(rng, depth - 1));
  default: return cast(cast(a, DType::Int32), DType::Int64);
  }
}

TEST(RowForms, WhatItProvesHoldsAtEveryPoint) {
  std::mt19937 rng(23);
  const int64_t lengths[] = {1, 2, 3, 4, 6, 7, 8, 12, 14, 16, 24, 48};
  int provedCount = 0;
  for (int trial = 0; trial < 6000; ++trial) {
    const int64_t length = lengths[trial % std::size(lengths)];
    const int64_t extent = length * std::uniform_int_distribution<int64_t>(1, 60)(rng);
    ExprRef e = randomIndex(rng, 1 + trial % 4);
    AlongRow claim = proved(e, extent, length);
    if (claim == AlongRow::Neither)
      continue;
    ++provedCount;
    AlongRow truth = bruteForce(e, extent, length);
    // An invariant expression that is also unit (rows of 1) may be reported either way.
    if (length == 1)
      EXPECT_NE(truth, AlongRow::Neither);
    else
      ASSERT_EQ(claim, truth) << "trial " << trial << ", rows of " << length << " over " << extent;
  }
  // The test means something only if a good share of the expressions were proved.
  EXPECT_GT(provedCount, 1000);
}

} // namespace
} // namespace sinter::codegen
