// Interval analysis of kernel-IR indices (codegen/index_ranges.h): the ranges it derives must
// contain every value the expression can take, and fits32 must refuse anything that could
// overflow 32 bits.
#include "sinter/codegen/kernel/index_ranges.h"

#include "sinter/codegen/kernel/expr_evaluator.h"

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

namespace {

/// Whether a Div or Rem in `e` has `variable` in its dividend.
bool dividesVariable(const ExprRef &e, int variable) {
  if (e->kind == ExprKind::Binary && (e->binary == BinaryOp::Div || e->binary == BinaryOp::Rem) &&
      usesVariable(e->operands[0], variable))
    return true;
  for (const ExprRef &operand : e->operands)
    if (dividesVariable(operand, variable))
      return true;
  return false;
}

} // namespace

// Attention's key, read as K^T [batch x heads, dim, keys] through reshapes and transposes of the
// projection's [batch, keys, 3 x heads x dim] output: the flat index is divided back into its
// coordinates. simplify takes the divisions of the reduction variable out (the index becomes
// affine in it) and keeps every value: checked against direct evaluation over the whole domain.
TEST(IndexRanges, SimplifyTakesAHeadSplitBackToItsCoordinates) {
  constexpr int64_t kBatch = 2, kHeads = 3, kDim = 8, kKeys = 5, kWidth = kHeads * kDim;
  KernelBuilder builder("k");
  int b = builder.addVariable("b", DType::Int64), r = builder.addVariable("r", DType::Int64),
      j = builder.addVariable("j", DType::Int64);
  builder.setParallelExtent(1);
  Kernel kernel = builder.take();
  IndexRanges ranges(kernel);
  ranges.setVariable(b, {0, kBatch * kHeads - 1});
  ranges.setVariable(r, {0, kDim - 1});
  ranges.setVariable(j, {0, kKeys - 1});
  ExprRef vb = var(b, DType::Int64), vr = var(r, DType::Int64), vj = var(j, DType::Int64);
  ExprRef flat = add(mul(add(mul(vb, kDim), vr), kKeys), vj);     // [b, r, j] of K^T
  ExprRef head = div(flat, kDim * kKeys), within = rem(flat, kDim * kKeys);
  ExprRef dim = div(within, kKeys), key = rem(within, kKeys);      // K^T -> K: [head, key, dim]
  ExprRef kFlat = add(mul(add(mul(head, kKeys), key), kDim), dim); // K flat, viewed [batch, heads, keys, dim]
  ExprRef batch = div(kFlat, kHeads * kKeys * kDim);
  ExprRef h = rem(div(kFlat, kKeys * kDim), kHeads);
  ExprRef keyAgain = rem(div(kFlat, kDim), kKeys), dimAgain = rem(kFlat, kDim);
  // The projection's output [batch, keys, 3 x width]: the keys are its second third.
  ExprRef index = add(mul(add(mul(batch, kKeys), keyAgain), 3 * kWidth), add(intConstant(kWidth), add(mul(h, kDim), dimAgain)));

  ExprRef simple = ranges.simplify(index);
  EXPECT_TRUE(dividesVariable(index, r));
  EXPECT_FALSE(dividesVariable(simple, r));
  ExprEvaluator eval(kernel);
  for (int64_t bv = 0; bv < kBatch * kHeads; ++bv)
    for (int64_t rv = 0; rv < kDim; ++rv)
      for (int64_t jv = 0; jv < kKeys; ++jv) {
        eval.setVariable(b, bv);
        eval.setVariable(r, rv);
        eval.setVariable(j, jv);
        ASSERT_EQ(eval.evaluate(simple).intValue, eval.evaluate(index).intValue) << bv << " " << rv << " " << jv;
        ASSERT_EQ(eval.evaluate(index).intValue,
                  ((bv / kHeads) * kKeys + jv) * 3 * kWidth + kWidth + (bv % kHeads) * kDim + rv);
      }

  // A remainder whose rest can reach the divisor keeps a remainder of the rest (r + j may pass 8).
  ExprRef unsure = rem(add(mul(vb, 8), add(vr, vj)), intConstant(8));
  EXPECT_TRUE(dividesVariable(ranges.simplify(unsure), r));
}

TEST(IndexRanges, SimplifySplitsAMultipleOffADividendOfAnySize) {
  // ViT-B/16's query rows read through torch's unbind of the QKV split, [197, 32, 3, 768] viewed
  // as [32 * 12 heads, 197, 64]: the head index bh < 384 is divided by 12 after a multiple of
  // 384, so the rest is not below the divisor; the index is still affine in the position.
  KernelBuilder builder("k");
  int i = builder.addVariable("i", DType::Int64), h = builder.addVariable("h", DType::Int64),
      c = builder.addVariable("c", DType::Int64);
  builder.setParallelExtent(1);
  Kernel kernel = builder.take();
  IndexRanges ranges(kernel);
  ranges.setVariable(i, {0, 196});
  ranges.setVariable(h, {0, 383});
  ranges.setVariable(c, {0, 63});
  ExprRef vi = var(i, DType::Int64), vh = var(h, DType::Int64), vc = var(c, DType::Int64);
  ExprRef flat = add(mul(vi, 384), vh);
  ExprRef index = add(mul(add(mul(add(mul(vi, 32), rem(div(flat, 12), intConstant(32))), 3), intConstant(1)), 768),
                      add(mul(rem(flat, intConstant(12)), 64), vc));
  ExprRef simple = ranges.simplify(index);
  EXPECT_TRUE(dividesVariable(index, i));
  EXPECT_FALSE(dividesVariable(simple, i));
  ExprEvaluator eval(kernel);
  for (int64_t iv = 0; iv <= 196; iv += 7)
    for (int64_t hv = 0; hv < 384; ++hv)
      for (int64_t cv : {0, 5, 63}) {
        eval.setVariable(i, iv);
        eval.setVariable(h, hv);
        eval.setVariable(c, cv);
        ASSERT_EQ(eval.evaluate(simple).intValue, ((iv * 32 + hv / 12) * 3 + 1) * 768 + (hv % 12) * 64 + cv)
            << iv << " " << hv << " " << cv;
      }
}

TEST(IndexRanges, SimplifyRecombinesAnIndexUnravelledAndRavelledBack) {
  // GlobalAveragePool's tap r over a 7 x 9 plane, read as (r / 9, r % 9) and ravelled into
  // [2, 5, 7, 9]: ((image * 5 + channel) * 7 + r / 9) * 9 + r % 9 has no division left. The
  // identity div(x, n) * n + rem(x, n) = x holds for negative x as well (C's truncation).
  KernelBuilder builder("k");
  int image = builder.addVariable("image", DType::Int64), channel = builder.addVariable("channel", DType::Int64),
      r = builder.addVariable("r", DType::Int64);
  builder.setParallelExtent(1);
  Kernel kernel = builder.take();
  IndexRanges ranges(kernel);
  ranges.setVariable(image, {0, 1});
  ranges.setVariable(channel, {0, 4});
  ranges.setVariable(r, {-70, 62});
  ExprRef vi = var(image, DType::Int64), vc = var(channel, DType::Int64), vr = var(r, DType::Int64);
  ExprRef index = add(mul(add(mul(add(mul(vi, 5), vc), 7), div(vr, 9)), 9), rem(vr, intConstant(9)));
  // Scaled pairs (a quotient times 3 * 4 beside the remainder times 4) recombine too; a pair of
  // different divisors or dividends does not.
  ExprRef scaled = add(mul(div(vr, 3), 12), mul(rem(vr, intConstant(3)), 4));
  ExprRef mismatched = add(mul(div(vr, 9), 9), rem(vr, intConstant(8)));
  ExprRef otherDividend = add(mul(div(vr, 9), 9), rem(vc, intConstant(9)));
  ExprRef simple = ranges.simplify(index), simpleScaled = ranges.simplify(scaled);
  EXPECT_FALSE(dividesVariable(simple, r));
  EXPECT_FALSE(dividesVariable(simpleScaled, r));
  EXPECT_TRUE(dividesVariable(ranges.simplify(mismatched), r));
  EXPECT_TRUE(dividesVariable(ranges.simplify(otherDividend), r));
  ExprEvaluator eval(kernel);
  for (int64_t iv = 0; iv < 2; ++iv)
    for (int64_t cv = 0; cv < 5; ++cv)
      for (int64_t rv = -70; rv <= 62; ++rv) {
        eval.setVariable(image, iv);
        eval.setVariable(channel, cv);
        eval.setVariable(r, rv);
        ASSERT_EQ(eval.evaluate(simple).intValue, eval.evaluate(index).intValue) << iv << " " << cv << " " << rv;
        ASSERT_EQ(eval.evaluate(simple).intValue, (iv * 5 + cv) * 63 + rv);
        ASSERT_EQ(eval.evaluate(simpleScaled).intValue, rv * 4) << rv;
      }
}
