// permute-conv-weights (lib/passes/permute_conv_weights.h): constant convolution weights are
// stored with the input channels innermost and read through a Transpose; weights whose bytes
// would not move, and weights that are not constants, stay.
#include "pass_test_util.h"

using namespace sinter;
using sinter::testing::expectUnchanged;
using sinter::testing::rewrite;

TEST(PermuteConvWeights, WeightsAreStoredChannelsInnermostBehindATranspose) {
  // w[o, c, kh, kw] = 8 o + 4 c + 2 kh + kw; stored as [o, kh, kw, c], so each window position
  // lists its two channels: 0 4, 1 5, ... The result is checked by the reference evaluator too
  // (rewrite compares both graphs' outputs).
  EXPECT_EQ(rewrite("permute-conv-weights", R"(graph @main(%x: f32[1,2,4,4]) -> (%y) {
  %w = constant f32[2,2,2,2] [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]
  %y = Conv(%x, %w) {pads = [1, 0, 0, 1]} : f32[1,2,4,4]
  return
})"),
            R"(graph @main(%x: f32[1,2,4,4]) -> (%y) {
  %w = constant f32[2,2,2,2] [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0]
  %w.permuted = constant f32[2,2,2,2] [0.0, 4.0, 1.0, 5.0, 2.0, 6.0, 3.0, 7.0, 8.0, 12.0, 9.0, 13.0, 10.0, 14.0, 11.0, 15.0]
  %w.view = Transpose(%w.permuted) {perm = [0, 3, 1, 2]} : f32[2,2,2,2]
  %y = Conv(%x, %w.view) {pads = [1, 0, 0, 1]} : f32[1,2,4,4]
  return
}
)");
}

TEST(PermuteConvWeights, SharedWeightsArePermutedOnceAndEachConvolutionGetsItsOwnView) {
  // A 1-D convolution (weights [O, C, k]) with groups, its weights read by two convolutions.
  EXPECT_EQ(rewrite("permute-conv-weights", R"(graph @main(%x: f32[1,4,5]) -> (%a, %b) {
  %w = constant f32[2,2,3] [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
  %a = Conv(%x, %w) {group = 2} : f32[1,2,3]
  %b = Conv(%x, %w) {group = 2, strides = [2]} : f32[1,2,2]
  return
})"),
            R"(graph @main(%x: f32[1,4,5]) -> (%a, %b) {
  %w = constant f32[2,2,3] [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0]
  %w.permuted = constant f32[2,3,2] [1.0, 4.0, 2.0, 5.0, 3.0, 6.0, 7.0, 10.0, 8.0, 11.0, 9.0, 12.0]
  %w.view = Transpose(%w.permuted) {perm = [0, 2, 1]} : f32[2,2,3]
  %a = Conv(%x, %w.view) {group = 2} : f32[1,2,3]
  %w.view.0 = Transpose(%w.permuted) {perm = [0, 2, 1]} : f32[2,2,3]
  %b = Conv(%x, %w.view.0) {group = 2, strides = [2]} : f32[1,2,2]
  return
}
)");
}

TEST(PermuteConvWeights, LeavesWeightsWhoseBytesWouldNotMoveAndWeightsThatAreNotConstants) {
  // A 1x1 convolution, a depthwise one (one input channel per group), and weights from an input.
  expectUnchanged("permute-conv-weights", R"(graph @main(%x: f32[1,2,3,3], %v: f32[2,2,2,2]) -> (%a, %b, %c) {
  %one = constant f32[2,2,1,1] [1.0, 2.0, 3.0, 4.0]
  %depthwise = constant f32[2,1,2,2] [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
  %a = Conv(%x, %one) : f32[1,2,3,3]
  %b = Conv(%x, %depthwise) {group = 2} : f32[1,2,2,2]
  %c = Conv(%x, %v) : f32[1,2,2,2]
  return
})");
}
