// permute-conv-weights (lib/passes/permute_conv_weights.h): constant convolution weights are
// stored with the input channels innermost and read through a Transpose; weights whose bytes
// would not move, and weights that are not constants, stay.
#include "pass_test_util.h"

using namespace sinter;
using sinter::testing::expectUnchanged;
using sinter::testing::rewrite;

TEST(PermuteConvWeights, WeightsAreStoredChannelsInnermostBehindATranspose) {
  // w[0, c, 0, kw] = 2 c + kw; stored as [o, kh, kw, c], so each window position lists its
  // eight channels: 0 2 4 .. 14, then 1 3 5 .. 15. The result is checked by the reference
  // evaluator too (rewrite compares both graphs' outputs).
  EXPECT_EQ(rewrite("permute-conv-weights", R"(graph @main(%x: f32[1,8,3,3]) -> (%y) {
  %w = constant f32[1,8,1,2] [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]
  %y = Conv(%x, %w) {pads = [1, 0, 0, 1]} : f32[1,1,4,3]
  return
})"),
            R"(graph @main(%x: f32[1,8,3,3]) -> (%y) {
  %w = constant f32[1,8,1,2] [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0]
  %w.permuted = constant f32[1,1,2,8] [0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 1.0, 3.0, 5.0, 7.0, 9.0, 11.0, 13.0, 15.0]
  %w.view = Transpose(%w.permuted) {perm = [0, 3, 1, 2]} : f32[1,8,1,2]
  %y = Conv(%x, %w.view) {pads = [1, 0, 0, 1]} : f32[1,1,4,3]
  return
}
)");
}

TEST(PermuteConvWeights, SharedWeightsArePermutedOnceAndEachConvolutionGetsItsOwnView) {
  // A 1-D convolution (weights [O, C, k]), its weights read by two convolutions.
  EXPECT_EQ(rewrite("permute-conv-weights", R"(graph @main(%x: f32[1,8,5]) -> (%a, %b) {
  %w = constant f32[1,8,2] [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]
  %a = Conv(%x, %w) : f32[1,1,4]
  %b = Conv(%x, %w) {strides = [2]} : f32[1,1,2]
  return
})"),
            R"(graph @main(%x: f32[1,8,5]) -> (%a, %b) {
  %w = constant f32[1,8,2] [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0]
  %w.permuted = constant f32[1,2,8] [0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 1.0, 3.0, 5.0, 7.0, 9.0, 11.0, 13.0, 15.0]
  %w.view = Transpose(%w.permuted) {perm = [0, 2, 1]} : f32[1,8,2]
  %a = Conv(%x, %w.view) : f32[1,1,4]
  %w.view.0 = Transpose(%w.permuted) {perm = [0, 2, 1]} : f32[1,8,2]
  %b = Conv(%x, %w.view.0) {strides = [2]} : f32[1,1,2]
  return
}
)");
}

TEST(PermuteConvWeights, LeavesWindowInnermostConvolutionsUnmovedBytesAndWeightsThatAreNotConstants) {
  // Three channels (the window stays innermost), a 1x1 window of eight channels, a depthwise
  // convolution (one input channel per group), and weights from an input.
  expectUnchanged("permute-conv-weights", R"(graph @main(%x: f32[1,8,3,3], %x3: f32[1,3,3,3], %v: f32[2,8,2,2]) -> (%a, %b, %c, %d) {
  %rgb = constant f32[1,3,2,2] [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0]
  %one = constant f32[2,8,1,1] [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0]
  %depthwise = constant f32[8,1,1,2] [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0]
  %a = Conv(%x3, %rgb) : f32[1,1,2,2]
  %b = Conv(%x, %one) : f32[1,2,3,3]
  %c = Conv(%x, %depthwise) {group = 8} : f32[1,8,3,2]
  %d = Conv(%x, %v) : f32[1,2,2,2]
  return
})");
}
