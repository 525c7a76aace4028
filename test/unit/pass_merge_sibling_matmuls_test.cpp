// merge-sibling-matmuls (lib/passes/merge_sibling_matmuls.h). Every rewrite is also checked
// numerically against the unrewritten graph by the reference evaluator (pass_test_util.h).
#include "pass_test_util.h"

using namespace sinter;
using sinter::testing::expectUnchanged;
using sinter::testing::rewrite;

TEST(MergeSiblingMatMuls, ProjectionsWithBiasesBecomeOneProductAndSlices) {
  EXPECT_EQ(rewrite("merge-sibling-matmuls", R"(graph @main(%x: f32[2,3,2]) -> (%y) {
  %wq = constant f32[2,2] [1.0, 2.0, 3.0, 4.0]
  %wk = constant f32[2,1] [5.0, 6.0]
  %bq = constant f32[2] [0.5, -0.5]
  %bk = constant f32[1] [2.0]
  %q0 = MatMul(%x, %wq) : f32[2,3,2]
  %q = Add(%q0, %bq) : f32[2,3,2]
  %k0 = MatMul(%x, %wk) : f32[2,3,1]
  %k = Add(%bk, %k0) : f32[2,3,1]
  %y = Mul(%q, %k) : f32[2,3,2]
  return
})"),
            R"(graph @main(%x: f32[2,3,2]) -> (%y) {
  %wq = constant f32[2,2] [1.0, 2.0, 3.0, 4.0]
  %wk = constant f32[2,1] [5.0, 6.0]
  %bq = constant f32[2] [0.5, -0.5]
  %bk = constant f32[1] [2.0]
  %q0.merged.weight = constant f32[2,3] [1.0, 2.0, 5.0, 3.0, 4.0, 6.0]
  %q0.merged.bias = constant f32[3] [0.5, -0.5, 2.0]
  %q0.merged.axis = constant i64[1] [-1]
  %q0.merged.start = constant i64[1] [0]
  %q0.merged.end = constant i64[1] [2]
  %q0.merged.start.0 = constant i64[1] [2]
  %q0.merged.end.1 = constant i64[1] [3]
  %q0.merged = MatMul(%x, %q0.merged.weight) : f32[2,3,3]
  %q0.merged.biased = Add(%q0.merged, %q0.merged.bias) : f32[2,3,3]
  %q = Slice(%q0.merged.biased, %q0.merged.start, %q0.merged.end, %q0.merged.axis) : f32[2,3,2]
  %k = Slice(%q0.merged.biased, %q0.merged.start.0, %q0.merged.end.1, %q0.merged.axis) : f32[2,3,1]
  %y = Mul(%q, %k) : f32[2,3,2]
  return
}
)");
}

TEST(MergeSiblingMatMuls, ThreeProductsWithoutBiasesMerge) {
  EXPECT_EQ(rewrite("merge-sibling-matmuls", R"(graph @main(%x: f32[3,2]) -> (%y) {
  %a = constant f32[2,1] [1.0, 2.0]
  %b = constant f32[2,1] [3.0, 4.0]
  %c = constant f32[2,1] [5.0, 6.0]
  %p = MatMul(%x, %a) : f32[3,1]
  %q = MatMul(%x, %b) : f32[3,1]
  %r = MatMul(%x, %c) : f32[3,1]
  %s = Add(%p, %q) : f32[3,1]
  %y = Sub(%s, %r) : f32[3,1]
  return
})"),
            R"(graph @main(%x: f32[3,2]) -> (%y) {
  %a = constant f32[2,1] [1.0, 2.0]
  %b = constant f32[2,1] [3.0, 4.0]
  %c = constant f32[2,1] [5.0, 6.0]
  %p.merged.weight = constant f32[2,3] [1.0, 3.0, 5.0, 2.0, 4.0, 6.0]
  %p.merged.axis = constant i64[1] [-1]
  %p.merged.start = constant i64[1] [0]
  %p.merged.end = constant i64[1] [1]
  %p.merged.start.0 = constant i64[1] [1]
  %p.merged.end.1 = constant i64[1] [2]
  %p.merged.start.2 = constant i64[1] [2]
  %p.merged.end.3 = constant i64[1] [3]
  %p.merged = MatMul(%x, %p.merged.weight) : f32[3,3]
  %p = Slice(%p.merged, %p.merged.start, %p.merged.end, %p.merged.axis) : f32[3,1]
  %q = Slice(%p.merged, %p.merged.start.0, %p.merged.end.1, %p.merged.axis) : f32[3,1]
  %r = Slice(%p.merged, %p.merged.start.2, %p.merged.end.3, %p.merged.axis) : f32[3,1]
  %s = Add(%p, %q) : f32[3,1]
  %y = Sub(%s, %r) : f32[3,1]
  return
}
)");
}

// Near misses: a product that is a graph output, a computed rhs, a mix of biased and unbiased
// siblings, and a bias that is not one value per column each leave the graph alone.
TEST(MergeSiblingMatMuls, NearMissesAreLeftAlone) {
  expectUnchanged("merge-sibling-matmuls", R"(graph @main(%x: f32[3,2]) -> (%p, %y) {
  %a = constant f32[2,2] [1.0, 2.0, 3.0, 4.0]
  %b = constant f32[2,2] [5.0, 6.0, 7.0, 8.0]
  %p = MatMul(%x, %a) : f32[3,2]
  %q = MatMul(%x, %b) : f32[3,2]
  %y = Relu(%q) : f32[3,2]
  return
})");
  expectUnchanged("merge-sibling-matmuls", R"(graph @main(%x: f32[3,2], %w: f32[2,2]) -> (%y) {
  %a = constant f32[2,2] [1.0, 2.0, 3.0, 4.0]
  %p = MatMul(%x, %a) : f32[3,2]
  %q = MatMul(%x, %w) : f32[3,2]
  %y = Add(%p, %q) : f32[3,2]
  return
})");
  expectUnchanged("merge-sibling-matmuls", R"(graph @main(%x: f32[3,2]) -> (%y) {
  %a = constant f32[2,2] [1.0, 2.0, 3.0, 4.0]
  %b = constant f32[2,2] [5.0, 6.0, 7.0, 8.0]
  %t = constant f32[2] [1.0, -1.0]
  %p = MatMul(%x, %a) : f32[3,2]
  %pb = Add(%p, %t) : f32[3,2]
  %q = MatMul(%x, %b) : f32[3,2]
  %y = Add(%pb, %q) : f32[3,2]
  return
})");
  expectUnchanged("merge-sibling-matmuls", R"(graph @main(%x: f32[3,2]) -> (%y) {
  %a = constant f32[2,2] [1.0, 2.0, 3.0, 4.0]
  %b = constant f32[2,2] [5.0, 6.0, 7.0, 8.0]
  %t = constant f32[3,1] [1.0, -1.0, 2.0]
  %u = constant f32[2] [1.0, -1.0]
  %p = MatMul(%x, %a) : f32[3,2]
  %pb = Add(%p, %t) : f32[3,2]
  %q = MatMul(%x, %b) : f32[3,2]
  %qb = Add(%q, %u) : f32[3,2]
  %y = Add(%pb, %qb) : f32[3,2]
  return
})");
}
