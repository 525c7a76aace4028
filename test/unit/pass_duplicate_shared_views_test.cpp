// duplicate-shared-views (lib/passes/duplicate_shared_views.h): a view read by contractions only
// (through other views and casts) is copied per reader; a view that something else reads, or that
// is a graph output, is left alone. The rewrite changes no value (pass_test_util checks it with
// the reference evaluator).
#include "pass_test_util.h"

using namespace sinter;
using sinter::testing::expectUnchanged;
using sinter::testing::rewrite;

TEST(DuplicateSharedViews, AHeadSplitIsCopiedForEachProduct) {
  // [2, 3, 4] split on axis 0 by one Transpose, then query and key gathered from it for Q.K^T:
  // the Transpose is copied for the key's Gather.
  EXPECT_EQ(rewrite("duplicate-shared-views", R"(graph @main(%x: f32[3,2,4]) -> (%s) {
  %zero = constant i64[] [0]
  %one = constant i64[] [1]
  %t = Transpose(%x) {perm = [1, 0, 2]} : f32[2,3,4]
  %q = Gather(%t, %zero) {axis = 0} : f32[3,4]
  %k = Gather(%t, %one) {axis = 0} : f32[3,4]
  %kt = Transpose(%k) {perm = [1, 0]} : f32[4,3]
  %s = MatMul(%q, %kt) : f32[3,3]
  return
})"),
            R"(graph @main(%x: f32[3,2,4]) -> (%s) {
  %zero = constant i64[] [0]
  %one = constant i64[] [1]
  %t = Transpose(%x) {perm = [1, 0, 2]} : f32[2,3,4]
  %q = Gather(%t, %zero) {axis = 0} : f32[3,4]
  %t.1 = Transpose(%x) {perm = [1, 0, 2]} : f32[2,3,4]
  %k = Gather(%t.1, %one) {axis = 0} : f32[3,4]
  %kt = Transpose(%k) {perm = [1, 0]} : f32[4,3]
  %s = MatMul(%q, %kt) : f32[3,3]
  return
}
)");
}

TEST(DuplicateSharedViews, AChainOfSharedViewsSplitsFromItsEnd) {
  // Reshape -> Transpose, read by two MatMuls through a cast each: both views are copied.
  EXPECT_EQ(rewrite("duplicate-shared-views", R"(graph @main(%x: f32[2,6], %w: f16[3,3]) -> (%a, %b) {
  %shape = constant i64[2] [3, 4]
  %r = Reshape(%x, %shape) : f32[3,4]
  %t = Transpose(%r) {perm = [1, 0]} : f32[4,3]
  %h = Cast(%t) {to = 10} : f16[4,3]
  %a = MatMul(%h, %w) : f16[4,3]
  %g = Cast(%t) {to = 10} : f16[4,3]
  %b = MatMul(%g, %w) : f16[4,3]
  return
})"),
            R"(graph @main(%x: f32[2,6], %w: f16[3,3]) -> (%a, %b) {
  %shape = constant i64[2] [3, 4]
  %r = Reshape(%x, %shape) : f32[3,4]
  %t = Transpose(%r) {perm = [1, 0]} : f32[4,3]
  %h = Cast(%t) {to = 10} : f16[4,3]
  %a = MatMul(%h, %w) : f16[4,3]
  %r.1 = Reshape(%x, %shape) : f32[3,4]
  %t.1 = Transpose(%r.1) {perm = [1, 0]} : f32[4,3]
  %g = Cast(%t.1) {to = 10} : f16[4,3]
  %b = MatMul(%g, %w) : f16[4,3]
  return
}
)");
}

TEST(DuplicateSharedViews, LeavesViewsThatOtherNodesOrTheGraphRead) {
  // %t is also read by a Relu; %u is a graph output.
  expectUnchanged("duplicate-shared-views", R"(graph @main(%x: f32[3,4], %w: f32[3,3]) -> (%a, %b, %c, %d, %u) {
  %t = Transpose(%x) {perm = [1, 0]} : f32[4,3]
  %a = MatMul(%t, %w) : f32[4,3]
  %b = Relu(%t) : f32[4,3]
  %u = Transpose(%x) {perm = [1, 0]} : f32[4,3]
  %c = MatMul(%u, %w) : f32[4,3]
  %d = MatMul(%u, %w) : f32[4,3]
  return
})");
}
