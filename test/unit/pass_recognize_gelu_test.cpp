// recognize-gelu (lib/passes/recognize_gelu.h): the forms torch exports, other groupings of the
// same products, and near misses. Constants are float32 roundings of sqrt(2) = 1.4142135,
// 1/sqrt(2) = 0.70710677, sqrt(2/pi) = 0.7978846 and 0.044715.
#include "gelu_test_graphs.h"
#include "pass_test_util.h"

using namespace sinter;
using sinter::testing::erfGeluText;
using sinter::testing::expectUnchanged;
using sinter::testing::rewrite;

TEST(RecognizeGelu, ErfFormAsTorchExportsIt) {
  EXPECT_EQ(rewrite("recognize-gelu", erfGeluText(" @\"gelu\"")),
            R"(graph @main(%x: f32[2,8]) -> (%y) {
  %sqrt2 = constant f32[] [1.4142135]
  %one = constant f32[] [1.0]
  %half = constant f32[] [0.5]
  %y = Gelu(%x) {approximate = "none"} : f32[2,8] @"gelu"
  return
}
)");
}

TEST(RecognizeGelu, ErfFormWithOtherGroupings) {
  // (0.5 * x) * (1 + erf(x * 0.70710677)), inside a larger graph: the Gelu feeds a MatMul.
  EXPECT_EQ(rewrite("recognize-gelu", R"(graph @main(%x: f32[2,8], %w: f32[8,3]) -> (%y) {
  %r = constant f32[1] [0.70710677]
  %one = constant f32[1] [1.0]
  %half = constant f32[] [0.5]
  %d = Mul(%r, %x) : f32[2,8]
  %e = Erf(%d) : f32[2,8]
  %a = Add(%one, %e) : f32[2,8]
  %h = Mul(%half, %x) : f32[2,8]
  %g = Mul(%h, %a) : f32[2,8]
  %y = MatMul(%g, %w) : f32[2,3]
  return
})"),
            R"(graph @main(%x: f32[2,8], %w: f32[8,3]) -> (%y) {
  %r = constant f32[1] [0.70710677]
  %one = constant f32[1] [1.0]
  %half = constant f32[] [0.5]
  %g = Gelu(%x) {approximate = "none"} : f32[2,8]
  %y = MatMul(%g, %w) : f32[2,3]
  return
}
)");
}

TEST(RecognizeGelu, TanhFormWithCubeAsProducts) {
  // GPT-2's export: x * x * x, constants on either side.
  EXPECT_EQ(rewrite("recognize-gelu", R"(graph @main(%x: f32[4,8]) -> (%y) {
  %k = constant f32[] [0.044715]
  %c = constant f32[] [0.7978846]
  %one = constant f32[] [1.0]
  %half = constant f32[] [0.5]
  %x2 = Mul(%x, %x) : f32[4,8]
  %x3 = Mul(%x, %x2) : f32[4,8]
  %kx3 = Mul(%k, %x3) : f32[4,8]
  %inner = Add(%x, %kx3) : f32[4,8]
  %arg = Mul(%c, %inner) : f32[4,8]
  %t = Tanh(%arg) : f32[4,8]
  %a = Add(%one, %t) : f32[4,8]
  %m = Mul(%x, %a) : f32[4,8]
  %y = Mul(%half, %m) : f32[4,8]
  return
})"),
            R"(graph @main(%x: f32[4,8]) -> (%y) {
  %k = constant f32[] [0.044715]
  %c = constant f32[] [0.7978846]
  %one = constant f32[] [1.0]
  %half = constant f32[] [0.5]
  %y = Gelu(%x) {approximate = "tanh"} : f32[4,8]
  return
}
)");
}

TEST(RecognizeGelu, TanhFormWithPow) {
  bool changed = false;
  std::string result = rewrite("recognize-gelu", R"(graph @main(%x: f32[4,8]) -> (%y) {
  %three = constant f32[] [3.0]
  %k = constant f32[] [0.044715]
  %c = constant f32[] [0.7978846]
  %one = constant f32[] [1.0]
  %two = constant f32[] [2.0]
  %x3 = Pow(%x, %three) : f32[4,8]
  %kx3 = Mul(%x3, %k) : f32[4,8]
  %inner = Add(%kx3, %x) : f32[4,8]
  %arg = Mul(%inner, %c) : f32[4,8]
  %t = Tanh(%arg) : f32[4,8]
  %a = Add(%t, %one) : f32[4,8]
  %m = Mul(%a, %x) : f32[4,8]
  %y = Div(%m, %two) : f32[4,8]
  return
})", &changed);
  EXPECT_TRUE(changed);
  EXPECT_NE(result.find("%y = Gelu(%x) {approximate = \"tanh\"} : f32[4,8]"), std::string::npos) << result;
  EXPECT_EQ(result.find("Tanh"), std::string::npos) << result;
}

TEST(RecognizeGelu, LeavesNearMissesAlone) {
  // 0.6 instead of 0.5.
  expectUnchanged("recognize-gelu", erfGeluText("", "1.4142135", "0.6"));
  // sqrt(2) written to five digits is not sqrt(2) to float precision.
  expectUnchanged("recognize-gelu", erfGeluText("", "1.41421"));
  // erf's value is also an output, so it must stay computed.
  expectUnchanged("recognize-gelu", R"(graph @main(%x: f32[2,8]) -> (%y, %e) {
  %sqrt2 = constant f32[] [1.4142135]
  %one = constant f32[] [1.0]
  %half = constant f32[] [0.5]
  %d = Div(%x, %sqrt2) : f32[2,8]
  %e = Erf(%d) : f32[2,8]
  %a = Add(%e, %one) : f32[2,8]
  %m = Mul(%x, %a) : f32[2,8]
  %y = Mul(%m, %half) : f32[2,8]
  return
})");
  // The product's x is not erf's x.
  expectUnchanged("recognize-gelu", R"(graph @main(%x: f32[2,8], %z: f32[2,8]) -> (%y) {
  %sqrt2 = constant f32[] [1.4142135]
  %one = constant f32[] [1.0]
  %half = constant f32[] [0.5]
  %d = Div(%z, %sqrt2) : f32[2,8]
  %e = Erf(%d) : f32[2,8]
  %a = Add(%e, %one) : f32[2,8]
  %m = Mul(%x, %a) : f32[2,8]
  %y = Mul(%m, %half) : f32[2,8]
  return
})");
  // Tanh form with x^2 instead of x^3, and 1 - tanh instead of 1 + tanh.
  expectUnchanged("recognize-gelu", R"(graph @main(%x: f32[4,8]) -> (%y, %y2) {
  %k = constant f32[] [0.044715]
  %c = constant f32[] [0.7978846]
  %one = constant f32[] [1.0]
  %half = constant f32[] [0.5]
  %x2 = Mul(%x, %x) : f32[4,8]
  %kx2 = Mul(%k, %x2) : f32[4,8]
  %inner = Add(%x, %kx2) : f32[4,8]
  %arg = Mul(%c, %inner) : f32[4,8]
  %t = Tanh(%arg) : f32[4,8]
  %a = Add(%one, %t) : f32[4,8]
  %m = Mul(%x, %a) : f32[4,8]
  %y = Mul(%half, %m) : f32[4,8]
  %x2b = Mul(%x, %x) : f32[4,8]
  %x3b = Mul(%x, %x2b) : f32[4,8]
  %kx3b = Mul(%k, %x3b) : f32[4,8]
  %innerb = Add(%x, %kx3b) : f32[4,8]
  %argb = Mul(%c, %innerb) : f32[4,8]
  %tb = Tanh(%argb) : f32[4,8]
  %ab = Sub(%one, %tb) : f32[4,8]
  %mb = Mul(%x, %ab) : f32[4,8]
  %y2 = Mul(%half, %mb) : f32[4,8]
  return
})");
  // A broadcasting "constant" 0.5 that makes the result larger than x.
  expectUnchanged("recognize-gelu", R"(graph @main(%x: f32[8]) -> (%y) {
  %sqrt2 = constant f32[] [1.4142135]
  %one = constant f32[] [1.0]
  %half = constant f32[2,1] [0.5, 0.5]
  %d = Div(%x, %sqrt2) : f32[8]
  %e = Erf(%d) : f32[8]
  %a = Add(%e, %one) : f32[8]
  %m = Mul(%x, %a) : f32[8]
  %y = Mul(%m, %half) : f32[2,8]
  return
})");
}
