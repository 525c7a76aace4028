// eliminate-common-subexpressions (lib/passes/eliminate_common_subexpressions.h).
#include "pass_test_util.h"

using namespace sinter;
using sinter::testing::expectUnchanged;
using sinter::testing::rewrite;

TEST(EliminateCommonSubexpressions, MergesEqualNodesIncludingSwappedCommutativeInputs) {
  EXPECT_EQ(rewrite("eliminate-common-subexpressions", R"(graph @main(%x: f32[2,3], %w: f32[2,3]) -> (%y) {
  %a = Mul(%x, %w) : f32[2,3]
  %b = Mul(%w, %x) : f32[2,3]
  %e1 = Exp(%a) : f32[2,3]
  %e2 = Exp(%b) : f32[2,3]
  %y = Sub(%e1, %e2) : f32[2,3]
  return
})"),
            R"(graph @main(%x: f32[2,3], %w: f32[2,3]) -> (%y) {
  %a = Mul(%x, %w) : f32[2,3]
  %e1 = Exp(%a) : f32[2,3]
  %y = Sub(%e1, %e1) : f32[2,3]
  return
}
)");
}

TEST(EliminateCommonSubexpressions, MergesConstantsWithEqualContents) {
  EXPECT_EQ(rewrite("eliminate-common-subexpressions", R"(graph @main(%x: f32[2]) -> (%y) {
  %c1 = constant f32[2] [0.5, 2.0]
  %c2 = constant f32[2] [0.5, 2.0]
  %a = Mul(%x, %c1) : f32[2]
  %b = Mul(%x, %c2) : f32[2]
  %y = Add(%a, %b) : f32[2]
  return
})"),
            R"(graph @main(%x: f32[2]) -> (%y) {
  %c1 = constant f32[2] [0.5, 2.0]
  %c2 = constant f32[2] [0.5, 2.0]
  %a = Mul(%x, %c1) : f32[2]
  %y = Add(%a, %a) : f32[2]
  return
}
)");
}

TEST(EliminateCommonSubexpressions, KeepsAGraphOutputsName) {
  // The duplicate is a graph output: the original's value takes its name.
  EXPECT_EQ(rewrite("eliminate-common-subexpressions", R"(graph @main(%x: f32[3]) -> (%y, %z) {
  %a = Neg(%x) : f32[3]
  %y = Exp(%a) : f32[3]
  %z = Neg(%x) : f32[3]
  return
})"),
            R"(graph @main(%x: f32[3]) -> (%y, %z) {
  %z = Neg(%x) : f32[3]
  %y = Exp(%z) : f32[3]
  return
}
)");
  // Both are graph outputs: both names must stay, so both nodes do.
  expectUnchanged("eliminate-common-subexpressions", R"(graph @main(%x: f32[3]) -> (%y, %z) {
  %y = Neg(%x) : f32[3]
  %z = Neg(%x) : f32[3]
  return
})");
}

TEST(EliminateCommonSubexpressions, LeavesNearMissesAlone) {
  // Different attributes, non-commutative swapped inputs, different constant dims or dtypes
  // with equal bytes' worth of values.
  expectUnchanged("eliminate-common-subexpressions", R"(graph @main(%x: f32[2,2], %w: f32[2,2]) -> (%a, %b, %c, %d, %e, %f, %g, %h) {
  %a = LeakyRelu(%x) {alpha = 0.1} : f32[2,2]
  %b = LeakyRelu(%x) {alpha = 0.2} : f32[2,2]
  %c = Sub(%x, %w) : f32[2,2]
  %d = Sub(%w, %x) : f32[2,2]
  %k1 = constant f32[4] [1.0, 2.0, 3.0, 4.0]
  %k2 = constant f32[2,2] [1.0, 2.0, 3.0, 4.0]
  %k3 = constant i32[2,2] [1, 2, 3, 4]
  %s = constant i64[2] [2, 2]
  %e = Reshape(%k1, %s) : f32[2,2]
  %f = Add(%k2, %x) : f32[2,2]
  %g = Cast(%k3) {to = 1} : f32[2,2]
  %h = MatMul(%w, %x) : f32[2,2]
  return
})");
}
