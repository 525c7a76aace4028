// fold-batch-norm (lib/passes/fold_batch_norm.h). Folded values are worked out by hand: with
// epsilon 0 and variances 4 and 0.25, the scale k = s / sqrt(v) is exact in binary.
#include "pass_test_util.h"

using namespace sinter;
using sinter::testing::expectUnchanged;
using sinter::testing::rewrite;

TEST(FoldBatchNorm, FoldsIntoConvWeightsAndBias) {
  // k = [1/2, 3/0.5] = [0.5, 6]; w' = w * k per output channel;
  // b' = (b - m) * k + t = [(1 - 1) * 0.5 + 0.5, (-1 - 2) * 6 - 1] = [0.5, -19].
  EXPECT_EQ(rewrite("fold-batch-norm", R"(graph @main(%x: f32[1,2,2,2]) -> (%y) {
  %w = constant f32[2,2,1,1] [1.0, 2.0, 3.0, 4.0]
  %b = constant f32[2] [1.0, -1.0]
  %s = constant f32[2] [1.0, 3.0]
  %t = constant f32[2] [0.5, -1.0]
  %m = constant f32[2] [1.0, 2.0]
  %v = constant f32[2] [4.0, 0.25]
  %c = Conv(%x, %w, %b) : f32[1,2,2,2]
  %y = BatchNormalization(%c, %s, %t, %m, %v) {epsilon = 0.0} : f32[1,2,2,2]
  return
})"),
            R"(graph @main(%x: f32[1,2,2,2]) -> (%y) {
  %w = constant f32[2,2,1,1] [1.0, 2.0, 3.0, 4.0]
  %b = constant f32[2] [1.0, -1.0]
  %s = constant f32[2] [1.0, 3.0]
  %t = constant f32[2] [0.5, -1.0]
  %m = constant f32[2] [1.0, 2.0]
  %v = constant f32[2] [4.0, 0.25]
  %w.folded = constant f32[2,2,1,1] [0.5, 1.0, 18.0, 24.0]
  %b.folded = constant f32[2] [0.5, -19.0]
  %y = Conv(%x, %w.folded, %b.folded) : f32[1,2,2,2]
  return
}
)");
}

TEST(FoldBatchNorm, FoldsMulAndAddChainsIntoAConvWithoutBias) {
  // Mul by [2, 3] per channel scales the filters; Add of [1, -1] becomes the bias;
  // Sub of a scalar 0.5 shifts it again; Div by 2 halves everything.
  EXPECT_EQ(rewrite("fold-batch-norm", R"(graph @main(%x: f32[1,2,2,2]) -> (%y) {
  %w = constant f32[2,2,1,1] [1.0, 2.0, 3.0, 4.0]
  %k = constant f32[1,2,1,1] [2.0, 3.0]
  %a = constant f32[2,1,1] [1.0, -1.0]
  %h = constant f32[] [0.5]
  %two = constant f32[1] [2.0]
  %c = Conv(%x, %w) : f32[1,2,2,2]
  %p = Mul(%k, %c) : f32[1,2,2,2]
  %q = Add(%p, %a) : f32[1,2,2,2]
  %r = Sub(%q, %h) : f32[1,2,2,2]
  %y = Div(%r, %two) : f32[1,2,2,2]
  return
})"),
            R"(graph @main(%x: f32[1,2,2,2]) -> (%y) {
  %w = constant f32[2,2,1,1] [1.0, 2.0, 3.0, 4.0]
  %k = constant f32[1,2,1,1] [2.0, 3.0]
  %a = constant f32[2,1,1] [1.0, -1.0]
  %h = constant f32[] [0.5]
  %two = constant f32[1] [2.0]
  %w.folded = constant f32[2,2,1,1] [2.0, 4.0, 9.0, 12.0]
  %c.bias.folded = constant f32[2] [1.0, -1.0]
  %c.bias.folded.0 = constant f32[2] [0.5, -1.5]
  %w.folded.1 = constant f32[2,2,1,1] [1.0, 2.0, 4.5, 6.0]
  %c.bias.folded.2 = constant f32[2] [0.25, -0.75]
  %y = Conv(%x, %w.folded.1, %c.bias.folded.2) : f32[1,2,2,2]
  return
}
)");
}

TEST(FoldBatchNorm, FoldsIntoGemmColumnsAndBias) {
  // transB: row n of B is output column n. k = [0.5, 6]; C' = beta * C * k + t - m * k
  // = [2 * 1 * 0.5 + 0.5 - 0.5, 2 * -1 * 6 - 1 - 12] = [1, -25].
  EXPECT_EQ(rewrite("fold-batch-norm", R"(graph @main(%x: f32[3,2]) -> (%y) {
  %w = constant f32[2,2] [1.0, 2.0, 3.0, 4.0]
  %b = constant f32[2] [1.0, -1.0]
  %s = constant f32[2] [1.0, 3.0]
  %t = constant f32[2] [0.5, -1.0]
  %m = constant f32[2] [1.0, 2.0]
  %v = constant f32[2] [4.0, 0.25]
  %g = Gemm(%x, %w, %b) {beta = 2.0, transB = 1} : f32[3,2]
  %y = BatchNormalization(%g, %s, %t, %m, %v) {epsilon = 0.0} : f32[3,2]
  return
})"),
            R"(graph @main(%x: f32[3,2]) -> (%y) {
  %w = constant f32[2,2] [1.0, 2.0, 3.0, 4.0]
  %b = constant f32[2] [1.0, -1.0]
  %s = constant f32[2] [1.0, 3.0]
  %t = constant f32[2] [0.5, -1.0]
  %m = constant f32[2] [1.0, 2.0]
  %v = constant f32[2] [4.0, 0.25]
  %w.folded = constant f32[2,2] [0.5, 1.0, 18.0, 24.0]
  %b.folded = constant f32[2] [1.0, -25.0]
  %y = Gemm(%x, %w.folded, %b.folded) {transB = 1} : f32[3,2]
  return
}
)");
}

TEST(FoldBatchNorm, ScalesMatMulColumnsAndLeavesTheShiftAsAnAdd) {
  // MatMul has no bias: k = [0.5, 6] scales the columns of w; t - m * k = [0, -13] is an Add.
  EXPECT_EQ(rewrite("fold-batch-norm", R"(graph @main(%x: f32[3,2]) -> (%y) {
  %w = constant f32[2,2] [1.0, 2.0, 3.0, 4.0]
  %s = constant f32[2] [1.0, 3.0]
  %t = constant f32[2] [0.5, -1.0]
  %m = constant f32[2] [1.0, 2.0]
  %v = constant f32[2] [4.0, 0.25]
  %g = MatMul(%x, %w) : f32[3,2]
  %y = BatchNormalization(%g, %s, %t, %m, %v) {epsilon = 0.0} : f32[3,2]
  return
})"),
            R"(graph @main(%x: f32[3,2]) -> (%y) {
  %w = constant f32[2,2] [1.0, 2.0, 3.0, 4.0]
  %s = constant f32[2] [1.0, 3.0]
  %t = constant f32[2] [0.5, -1.0]
  %m = constant f32[2] [1.0, 2.0]
  %v = constant f32[2] [4.0, 0.25]
  %w.folded = constant f32[2,2] [0.5, 12.0, 1.5, 24.0]
  %y.shift = constant f32[2] [0.0, -13.0]
  %g = MatMul(%x, %w.folded) : f32[3,2]
  %y = Add(%g, %y.shift) : f32[3,2]
  return
}
)");
}

TEST(FoldBatchNorm, RoundsOnceFromDouble) {
  // k = 1 / sqrt(3 + 0) is irrational: w' is the float nearest w * k computed in double
  // (0.57735026918962584 -> 0x3F13CD3A), not the product of two rounded floats.
  std::string result = rewrite("fold-batch-norm", R"(graph @main(%x: f32[1,1,1,1]) -> (%y) {
  %w = constant f32[1,1,1,1] [1.0]
  %s = constant f32[1] [1.0]
  %t = constant f32[1] [0.0]
  %m = constant f32[1] [0.0]
  %v = constant f32[1] [3.0]
  %c = Conv(%x, %w) : f32[1,1,1,1]
  %y = BatchNormalization(%c, %s, %t, %m, %v) {epsilon = 0.0} : f32[1,1,1,1]
  return
})");
  EXPECT_NE(result.find("%w.folded = constant f32[1,1,1,1] [0.57735026]"), std::string::npos) << result;
}

TEST(FoldBatchNorm, LeavesNearMissesAlone) {
  // The conv output has a second user; training mode; a Mul varying over space, not channels;
  // c / x; non-constant weights; an Add that broadcasts the output larger.
  expectUnchanged("fold-batch-norm", R"(graph @main(%x: f32[1,2,2,2], %wx: f32[2,2,1,1]) -> (%a, %c1, %b, %d, %e, %f, %g) {
  %w = constant f32[2,2,1,1] [1.0, 2.0, 3.0, 4.0]
  %s = constant f32[2] [1.0, 3.0]
  %v = constant f32[2] [4.0, 0.25]
  %sp = constant f32[1,1,2,2] [1.0, 2.0, 3.0, 4.0]
  %ch = constant f32[1,2,1,1] [2.0, 3.0]
  %big = constant f32[2,2,1,1] [1.0, 2.0, 3.0, 4.0]
  %c1 = Conv(%x, %w) : f32[1,2,2,2]
  %a = BatchNormalization(%c1, %s, %s, %s, %v) : f32[1,2,2,2]
  %c2 = Conv(%x, %w) : f32[1,2,2,2]
  %b = BatchNormalization(%c2, %s, %s, %s, %v) {training_mode = 1} : f32[1,2,2,2]
  %c3 = Conv(%x, %w) : f32[1,2,2,2]
  %d = Mul(%c3, %sp) : f32[1,2,2,2]
  %c4 = Conv(%x, %w) : f32[1,2,2,2]
  %e = Div(%ch, %c4) : f32[1,2,2,2]
  %c5 = Conv(%x, %wx) : f32[1,2,2,2]
  %f = Mul(%c5, %ch) : f32[1,2,2,2]
  %c6 = Conv(%x, %w) : f32[1,2,2,2]
  %g = Add(%c6, %big) : f32[2,2,2,2]
  return
})");
}
