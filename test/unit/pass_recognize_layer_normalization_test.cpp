// recognize-layer-normalization (lib/passes/recognize_layer_normalization.h).
#include "pass_test_util.h"

using namespace sinter;
using sinter::testing::expectUnchanged;
using sinter::testing::rewrite;

namespace {

/// A decomposed layer norm over the last `axes` of x: f32[2,3,4]; `square`, `epsilon`, `gamma`
/// and `beta` lines vary it.
std::string decomposed(const std::string &axes, const std::string &square, const std::string &tail,
                       const std::string &outputs = "%y", const std::string &epsilon = "1e-05") {
  return R"(graph @main(%x: f32[2,3,4]) -> ()" + outputs + R"() {
  %axes = constant i64[)" + std::to_string(std::count(axes.begin(), axes.end(), ',') + 1) + "] [" + axes + R"(]
  %two = constant f32[] [2.0]
  %eps = constant f32[] [)" + epsilon + R"(]
  %gamma = constant f32[4] [1.0, 2.0, -1.0, 0.5]
  %beta = constant f32[1,4] [0.0, 1.0, 2.0, 3.0]
  %mean = ReduceMean(%x, %axes) : f32[2,3,1]
  %d = Sub(%x, %mean) : f32[2,3,4]
)" + square + R"(
  %var = ReduceMean(%sq, %axes) : f32[2,3,1]
  %ve = Add(%var, %eps) : f32[2,3,1]
  %s = Sqrt(%ve) : f32[2,3,1]
  %n = Div(%d, %s) : f32[2,3,4]
)" + tail + R"(
  return
})";
}

const std::string kPow = "  %sq = Pow(%d, %two) : f32[2,3,4]";
const std::string kAffine = "  %g = Mul(%n, %gamma) : f32[2,3,4]\n  %y = Add(%beta, %g) : f32[2,3,4]";

} // namespace

TEST(RecognizeLayerNormalization, DecomposedFormWithScaleAndBias) {
  EXPECT_EQ(rewrite("recognize-layer-normalization", decomposed("-1", kPow, kAffine)),
            R"(graph @main(%x: f32[2,3,4]) -> (%y) {
  %axes = constant i64[1] [-1]
  %two = constant f32[] [2.0]
  %eps = constant f32[] [1e-05]
  %gamma = constant f32[4] [1.0, 2.0, -1.0, 0.5]
  %beta = constant f32[1,4] [0.0, 1.0, 2.0, 3.0]
  %y.scale = constant f32[4] [1.0, 2.0, -1.0, 0.5]
  %y.bias = constant f32[4] [0.0, 1.0, 2.0, 3.0]
  %y = LayerNormalization(%x, %y.scale, %y.bias) {axis = 2, epsilon = 1e-05} : f32[2,3,4]
  return
}
)");
}

TEST(RecognizeLayerNormalization, WithoutAffineAndWithMulSquare) {
  bool changed = false;
  std::string result = rewrite("recognize-layer-normalization",
                               decomposed("2", "  %sq = Mul(%d, %d) : f32[2,3,4]", "  %y = Neg(%n) : f32[2,3,4]"),
                               &changed);
  EXPECT_TRUE(changed);
  EXPECT_NE(result.find("  %n.scale = constant f32[4] [1.0, 1.0, 1.0, 1.0]\n"
                        "  %n = LayerNormalization(%x, %n.scale) {axis = 2, epsilon = 1e-05} : f32[2,3,4]\n"
                        "  %y = Neg(%n) : f32[2,3,4]"),
            std::string::npos)
      << result;
}

TEST(RecognizeLayerNormalization, OverTwoTrailingAxes) {
  // Axes [-1, 1] of a rank-3 value are the last two: axis 1; gamma [4] broadcasts to [3, 4].
  std::string text = decomposed("-1, 1", kPow, kAffine);
  for (const char *from : {"f32[2,3,1]", "f32[2,3,1]", "f32[2,3,1]", "f32[2,3,1]"})
    text.replace(text.find(from), std::string(from).size(), "f32[2,1,1]");
  std::string result = rewrite("recognize-layer-normalization", text);
  EXPECT_NE(result.find("%y.scale = constant f32[3,4] [1.0, 2.0, -1.0, 0.5, 1.0, 2.0, -1.0, 0.5, 1.0, 2.0, -1.0, 0.5]"),
            std::string::npos)
      << result;
  EXPECT_NE(result.find("%y = LayerNormalization(%x, %y.scale, %y.bias) {axis = 1, epsilon = 1e-05}"),
            std::string::npos)
      << result;
}

TEST(RecognizeLayerNormalization, LeavesNearMissesAlone) {
  // Not the trailing axis.
  std::string middle = decomposed("1", kPow, kAffine);
  for (const char *from : {"f32[2,3,1]", "f32[2,3,1]", "f32[2,3,1]", "f32[2,3,1]"})
    middle.replace(middle.find(from), std::string(from).size(), "f32[2,1,4]");
  expectUnchanged("recognize-layer-normalization", middle);
  // Cube instead of square.
  expectUnchanged("recognize-layer-normalization",
                  decomposed("-1", "  %three = constant f32[] [3.0]\n  %sq = Pow(%d, %three) : f32[2,3,4]", kAffine));
  // The deviation is also a graph output.
  expectUnchanged("recognize-layer-normalization", decomposed("-1", kPow, kAffine, "%y, %d"));
  // The variance is read by something else too.
  expectUnchanged("recognize-layer-normalization",
                  decomposed("-1", kPow, kAffine + "\n  %v2 = Neg(%var) : f32[2,3,1]", "%y, %v2"));
  // Sqrt of the variance without epsilon is not the pattern (the Add is required).
  std::string noEpsilon = decomposed("-1", kPow, kAffine);
  noEpsilon.replace(noEpsilon.find("  %ve = Add(%var, %eps) : f32[2,3,1]\n"),
                    std::string("  %ve = Add(%var, %eps) : f32[2,3,1]\n").size(), "");
  noEpsilon.replace(noEpsilon.find("Sqrt(%ve)"), std::string("Sqrt(%ve)").size(), "Sqrt(%var)");
  expectUnchanged("recognize-layer-normalization", noEpsilon);
}

TEST(RecognizeLayerNormalization, LeavesAScaleThatVariesOverRowsAsAMul) {
  // A gamma over the leading dims cannot be LayerNormalization's scale: the normalisation is
  // recognised, the Mul by it stays.
  std::string text = decomposed("-1", kPow,
                                "  %rows = constant f32[3,1] [1.0, 2.0, 3.0]\n  %y = Mul(%n, %rows) : f32[2,3,4]");
  std::string result = rewrite("recognize-layer-normalization", text);
  EXPECT_NE(result.find("%n = LayerNormalization(%x, %n.scale)"), std::string::npos) << result;
  EXPECT_NE(result.find("%y = Mul(%n, %rows)"), std::string::npos) << result;
}

TEST(RecognizeLayerNormalization, MultiplyByReciprocalStandardDeviation) {
  std::string text = decomposed("-1", kPow, kAffine);
  const std::string divide = "  %n = Div(%d, %s) : f32[2,3,4]";
  text.replace(text.find(divide), divide.size(),
               "  %inv = Reciprocal(%s) : f32[2,3,1]\n  %n = Mul(%inv, %d) : f32[2,3,4]");
  std::string result = rewrite("recognize-layer-normalization", text);
  EXPECT_NE(result.find("%y = LayerNormalization(%x, %y.scale, %y.bias) {axis = 2, epsilon = 1e-05}"),
            std::string::npos)
      << result;
  EXPECT_EQ(result.find("Reciprocal"), std::string::npos) << result;
}
