// move-scales-after-matmuls (lib/passes/move_scales_after_matmuls.h): attention's query and key
// scalings move after Q.K^T; scalings that broadcast, are read twice, or divide by the operand
// stay.
#include "pass_test_util.h"

using namespace sinter;
using sinter::testing::expectUnchanged;
using sinter::testing::rewrite;

TEST(MoveScalesAfterMatMuls, BothOperandsScaledAsAttentionExportsThem) {
  // q and k each scaled by 64^-1/4 (Mul with the scalar on either side), then Q.K^T.
  EXPECT_EQ(rewrite("move-scales-after-matmuls", R"(graph @main(%q: f32[2,4,16], %k: f32[2,16,4]) -> (%s) {
  %c = constant f32[1] [0.35355338]
  %qs = Mul(%q, %c) : f32[2,4,16]
  %ks = Mul(%c, %k) : f32[2,16,4]
  %s = MatMul(%qs, %ks) : f32[2,4,4] @"scores"
  return
})"),
            R"(graph @main(%q: f32[2,4,16], %k: f32[2,16,4]) -> (%s) {
  %c = constant f32[1] [0.35355338]
  %s.unscaled = MatMul(%q, %k) : f32[2,4,4] @"scores"
  %s.scaled = Mul(%s.unscaled, %c) : f32[2,4,4]
  %s = Mul(%s.scaled, %c) : f32[2,4,4] @"scores"
  return
}
)");
}

TEST(MoveScalesAfterMatMuls, ADivisionOfTheQueryBecomesADivisionOfTheProduct) {
  // And it travels on through a product of the product: ((q / 8) . k) . w = ((q . k) . w) / 8.
  EXPECT_EQ(rewrite("move-scales-after-matmuls", R"(graph @main(%q: f32[4,16], %k: f32[16,4], %w: f32[4,8]) -> (%y) {
  %c = constant f32[] [8.0]
  %qs = Div(%q, %c) : f32[4,16]
  %s = MatMul(%qs, %k) : f32[4,4]
  %y = MatMul(%s, %w) : f32[4,8]
  return
})"),
            R"(graph @main(%q: f32[4,16], %k: f32[16,4], %w: f32[4,8]) -> (%y) {
  %c = constant f32[] [8.0]
  %s.unscaled = MatMul(%q, %k) : f32[4,4]
  %y.unscaled = MatMul(%s.unscaled, %w) : f32[4,8]
  %y = Div(%y.unscaled, %c) : f32[4,8]
  return
}
)");
}

TEST(MoveScalesAfterMatMuls, LeavesScalingsThatAreNotScalarScalesOfOneUse) {
  // A per-column scale (not one element); a scalar divided by the operand; a scaled value that
  // is also a graph output; a scalar of higher rank than the product (it would broadcast the
  // product to rank 3).
  expectUnchanged("move-scales-after-matmuls", R"(graph @main(%q: f32[4,16], %k: f32[16,4]) -> (%a, %b, %c, %cs, %d) {
  %v = constant f32[16] [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]
  %one = constant f32[] [1.0]
  %big = constant f32[1,1,1] [2.0]
  %qv = Mul(%q, %v) : f32[4,16]
  %a = MatMul(%qv, %k) : f32[4,4]
  %qr = Div(%one, %q) : f32[4,16]
  %b = MatMul(%qr, %k) : f32[4,4]
  %cs = Mul(%q, %one) : f32[4,16]
  %c = MatMul(%cs, %k) : f32[4,4]
  %qb = Mul(%q, %big) : f32[1,4,16]
  %d = MatMul(%qb, %k) : f32[1,4,4]
  return
})");
}
