// fuse-attention (lib/passes/fuse_attention.h): Q.K^T, scalings, a mask, a softmax and P.V become
// one Attention node. Every rewrite is also checked numerically: the reference evaluator runs
// the products and the softmax before, and its Attention rule after, on the same inputs.
#include "pass_test_util.h"

using namespace sinter;
using sinter::testing::expectUnchanged;
using sinter::testing::rewrite;

TEST(FuseAttention, FourDimensionalHeadsWithTwoScalingsAndAMask) {
  // As BERT exports it after move-scales-after-matmuls: [batch, heads, L, D], the query's and
  // the key's scalings both after the product (the constants stay for eliminate-dead-code), an
  // additive [batch, 1, 1, L] mask.
  EXPECT_EQ(rewrite("fuse-attention", R"(graph @main(%q: f32[2,3,5,8], %kt: f32[2,3,8,5], %v: f32[2,3,5,4], %mask: f32[2,1,1,5]) -> (%o) {
  %c = constant f32[1] [0.59460355]
  %s = MatMul(%q, %kt) : f32[2,3,5,5] @"scores"
  %s1 = Mul(%s, %c) : f32[2,3,5,5]
  %s2 = Mul(%s1, %c) : f32[2,3,5,5]
  %s3 = Add(%s2, %mask) : f32[2,3,5,5]
  %p = Softmax(%s3) {axis = -1} : f32[2,3,5,5]
  %o = MatMul(%p, %v) : f32[2,3,5,4] @"context"
  return
})",
                    nullptr, 1e-5),
            R"(graph @main(%q: f32[2,3,5,8], %kt: f32[2,3,8,5], %v: f32[2,3,5,4], %mask: f32[2,1,1,5]) -> (%o) {
  %c = constant f32[1] [0.59460354]
  %kt.keys = Transpose(%kt) {perm = [0, 1, 3, 2]} : f32[2,3,5,8]
  %o = Attention(%q, %kt.keys, %v, %mask) {scale = 0.35355335} : f32[2,3,5,4] @"context"
  return
}
)");
}

TEST(FuseAttention, ThreeDimensionalHeadsAreReshapedToFourAndBack) {
  // As torch's older exporter writes nn.MultiheadAttention: [batch * heads, L, D], the scores
  // divided by sqrt(D), no mask.
  EXPECT_EQ(rewrite("fuse-attention", R"(graph @main(%q: f32[6,7,4], %kt: f32[6,4,7], %v: f32[6,7,4]) -> (%o) {
  %d = constant f32[] [2.0]
  %s = MatMul(%q, %kt) : f32[6,7,7]
  %s1 = Div(%s, %d) : f32[6,7,7]
  %p = Softmax(%s1) {axis = 2} : f32[6,7,7]
  %o = MatMul(%p, %v) : f32[6,7,4]
  return
})",
                    nullptr, 1e-5),
            R"(graph @main(%q: f32[6,7,4], %kt: f32[6,4,7], %v: f32[6,7,4]) -> (%o) {
  %d = constant f32[] [2.0]
  %q.shape4 = constant i64[4] [6, 1, 7, 4]
  %kt.shape4 = constant i64[4] [6, 1, 4, 7]
  %v.shape4 = constant i64[4] [6, 1, 7, 4]
  %o.shape3 = constant i64[3] [6, 7, 4]
  %q.4d = Reshape(%q, %q.shape4) : f32[6,1,7,4]
  %kt.4d = Reshape(%kt, %kt.shape4) : f32[6,1,4,7]
  %v.4d = Reshape(%v, %v.shape4) : f32[6,1,7,4]
  %kt.keys = Transpose(%kt.4d) {perm = [0, 1, 3, 2]} : f32[6,1,7,4]
  %o.attention = Attention(%q.4d, %kt.keys, %v.4d) {scale = 0.5} : f32[6,1,7,4]
  %o = Reshape(%o.attention, %o.shape3) : f32[6,7,4]
  return
}
)");
}

TEST(FuseAttention, TorchsGuardOfFullyMaskedRowsGoesWithTheSoftmax) {
  // BERT's dynamo export: Where(IsNaN(P), 0, P) after the softmax. The fused op gives 0 for a
  // row with every key masked, as the guard does.
  EXPECT_EQ(rewrite("fuse-attention", R"(graph @main(%q: f32[2,2,5,8], %kt: f32[2,2,8,5], %v: f32[2,2,5,8], %mask: f32[2,1,1,5]) -> (%o) {
  %zero = constant f32[] [0.0]
  %c = constant f32[] [0.35355338]
  %s = MatMul(%q, %kt) : f32[2,2,5,5]
  %s1 = Mul(%s, %c) : f32[2,2,5,5]
  %s2 = Add(%s1, %mask) : f32[2,2,5,5]
  %p = Softmax(%s2) {axis = -1} : f32[2,2,5,5]
  %nan = IsNaN(%p) : bool[2,2,5,5]
  %p1 = Where(%nan, %zero, %p) : f32[2,2,5,5]
  %o = MatMul(%p1, %v) : f32[2,2,5,8]
  return
})",
                    nullptr, 1e-5),
            R"(graph @main(%q: f32[2,2,5,8], %kt: f32[2,2,8,5], %v: f32[2,2,5,8], %mask: f32[2,1,1,5]) -> (%o) {
  %zero = constant f32[] [0.0]
  %c = constant f32[] [0.35355338]
  %kt.keys = Transpose(%kt) {perm = [0, 1, 3, 2]} : f32[2,2,5,8]
  %o = Attention(%q, %kt.keys, %v, %mask) {scale = 0.35355338} : f32[2,2,5,8]
  return
}
)");
}

TEST(FuseAttention, LeavesWhatIsNotAttention) {
  // The scores also a graph output; a softmax over another axis; a scaling by a tensor; a
  // negative scale (the op scales Q and K by its square root); keys broadcast over the batch.
  expectUnchanged("fuse-attention", R"(graph @main(%q: f32[2,5,8], %kt: f32[2,8,5], %v: f32[2,5,4], %w: f32[5], %k1: f32[8,5]) -> (%a, %s, %b, %c, %d, %e) {
  %n = constant f32[] [-0.5]
  %s = MatMul(%q, %kt) : f32[2,5,5]
  %ps = Softmax(%s) {axis = -1} : f32[2,5,5]
  %a = MatMul(%ps, %v) : f32[2,5,4]
  %s2 = MatMul(%q, %kt) : f32[2,5,5]
  %p2 = Softmax(%s2) {axis = 1} : f32[2,5,5]
  %b = MatMul(%p2, %v) : f32[2,5,4]
  %s3 = MatMul(%q, %kt) : f32[2,5,5]
  %s3w = Mul(%s3, %w) : f32[2,5,5]
  %p3 = Softmax(%s3w) {axis = -1} : f32[2,5,5]
  %c = MatMul(%p3, %v) : f32[2,5,4]
  %s4 = MatMul(%q, %kt) : f32[2,5,5]
  %s4n = Mul(%s4, %n) : f32[2,5,5]
  %p4 = Softmax(%s4n) {axis = -1} : f32[2,5,5]
  %d = MatMul(%p4, %v) : f32[2,5,4]
  %s5 = MatMul(%q, %k1) : f32[2,5,5]
  %p5 = Softmax(%s5) {axis = -1} : f32[2,5,5]
  %e = MatMul(%p5, %v) : f32[2,5,4]
  return
})");
}
