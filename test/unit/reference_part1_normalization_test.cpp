// Reference evaluator, part 1: the normalisations, checked against small cases worked out by hand
// from the ONNX spec's formulas.
#include "reference_test_util.h"

#include <cmath>

using namespace sinter;
using namespace sinter::testing;

TEST(ReferenceBatchNorm, InferenceUsesTheGivenStatistics) {
  Tensor x = f32({1, 2, 1, 2}, {1, 2, 3, 4});
  auto y = runOne(OpKind::BatchNormalization,
                  {x, f32({2}, {1, 2}), f32({2}, {0, 1}), f32({2}, {1, 3}), f32({2}, {4, 1})},
                  typeOf(DType::Float32, {1, 2, 1, 2}), {{"epsilon", 0.0f}});
  // channel 0: (x - 1) / 2; channel 1: (x - 3) * 2 + 1
  expectTensor(y, DType::Float32, {1, 2, 1, 2}, {0, 0.5, 1, 3});
  // Default epsilon 1e-5 (as a float).
  auto withEpsilon = runOne(OpKind::BatchNormalization,
                            {f32({1, 1}, {2}), f32({1}, {1}), f32({1}, {0}), f32({1}, {0}), f32({1}, {1})},
                            typeOf(DType::Float32, {1, 1}));
  expectTensor(withEpsilon, DType::Float32, {1, 1}, {2 / std::sqrt(1 + double(1e-5f))}, 1e-7);
  EXPECT_USER_ERROR(runNode(OpKind::BatchNormalization,
                            {x, f32({2}, {1, 2}), f32({2}, {0, 1}), f32({2}, {1, 3}), f32({2}, {4, 1})},
                            {typeOf(DType::Float32, {1, 2, 1, 2}), typeOf(DType::Float32, {2})}),
                    "training_mode");
  EXPECT_USER_ERROR(runOne(OpKind::BatchNormalization,
                           {x, f32({3}, {1, 2, 3}), f32({2}, {0, 1}), f32({2}, {1, 3}), f32({2}, {4, 1})},
                           typeOf(DType::Float32, {1, 2, 1, 2})),
                    "one value per channel");
}

TEST(ReferenceBatchNorm, TrainingModeUsesBatchStatisticsAndUpdatesRunningOnes) {
  // One channel; values 1, 3 (n=0) and 5, 7 (n=1): mean 4, population variance 5.
  Tensor x = f32({2, 1, 2}, {1, 3, 5, 7});
  auto outputs = runNode(OpKind::BatchNormalization,
                         {x, f32({1}, {1}), f32({1}, {0}), f32({1}, {0}), f32({1}, {1})},
                         {typeOf(DType::Float32, {2, 1, 2}), typeOf(DType::Float32, {1}),
                          typeOf(DType::Float32, {1})},
                         {{"epsilon", 0.0f}, {"training_mode", int64_t(1)}, {"momentum", 0.5f}});
  double s = std::sqrt(5.0);
  expectTensor(outputs[0], DType::Float32, {2, 1, 2}, {-3 / s, -1 / s, 1 / s, 3 / s}, 1e-7);
  expectTensor(outputs[1], DType::Float32, {1}, {2});   // 0 * 0.5 + 4 * 0.5
  expectTensor(outputs[2], DType::Float32, {1}, {3});   // 1 * 0.5 + 5 * 0.5
}

TEST(ReferenceLayerNorm, NormalisesTrailingDimsAndReturnsStatistics) {
  Tensor x = f32({2, 3}, {1, 2, 3, 2, 4, 6});
  auto outputs = runNode(OpKind::LayerNormalization, {x, f32({3}, {1, 1, 2}), f32({3}, {0, 0, 1})},
                         {typeOf(DType::Float32, {2, 3}), typeOf(DType::Float32, {2, 1}),
                          typeOf(DType::Float32, {2, 1})},
                         {{"epsilon", 0.0f}});
  double a = std::sqrt(1.5), b = std::sqrt(3.0 / 8);
  expectTensor(outputs[0], DType::Float32, {2, 3}, {-a, 0, 2 * a + 1, -2 * b, 0, 4 * b + 1}, 1e-7);
  expectTensor(outputs[1], DType::Float32, {2, 1}, {2, 4});
  expectTensor(outputs[2], DType::Float32, {2, 1}, {a, b}, 1e-7);
  // axis 0 normalises everything; no bias.
  auto all = runOne(OpKind::LayerNormalization, {f32({2, 2}, {1, 1, 3, 3}), f32({}, {2})},
                    typeOf(DType::Float32, {2, 2}), {{"epsilon", 0.0f}, {"axis", int64_t(0)}});
  expectTensor(all, DType::Float32, {2, 2}, {-2, -2, 2, 2});
  // Statistics take stash_type's dtype even for f64 input.
  auto stats = runNode(OpKind::LayerNormalization,
                       {makeTensor(DType::Float64, {2}, {1, 3}), makeTensor(DType::Float64, {2}, {1, 1})},
                       {typeOf(DType::Float64, {2}), typeOf(DType::Float32, {1})},
                       {{"epsilon", 0.0f}});
  expectTensor(stats[0], DType::Float64, {2}, {-1, 1});
  expectTensor(stats[1], DType::Float32, {1}, {2});
  EXPECT_USER_ERROR(runOne(OpKind::LayerNormalization, {x, f32({2}, {1, 1})},
                           typeOf(DType::Float32, {2, 3})),
                    "broadcast");
}

TEST(ReferenceRMSNorm, DividesByTheRootMeanSquare) {
  auto y = runOne(OpKind::RMSNormalization, {f32({2, 2}, {3, 4, 1, -1}), f32({2}, {1, 2})},
                  typeOf(DType::Float32, {2, 2}), {{"epsilon", 0.0f}});
  double r = std::sqrt(12.5);
  expectTensor(y, DType::Float32, {2, 2}, {3 / r, 8 / r, 1, -2}, 1e-7);
  auto withEpsilon = runOne(OpKind::RMSNormalization, {f32({1}, {0.5}), f32({1}, {1})},
                            typeOf(DType::Float32, {1}), {{"epsilon", 0.75f}});
  expectTensor(withEpsilon, DType::Float32, {1}, {0.5});
}

TEST(ReferenceGroupNorm, GroupsOfChannelsWithPerChannelScale) {
  Tensor x = f32({1, 4, 1}, {1, 2, 3, 5});
  auto y = runOne(OpKind::GroupNormalization, {x, f32({4}, {1, 2, 3, 4}), f32({4}, {0, 0, 0, 1})},
                  typeOf(DType::Float32, {1, 4, 1}), {{"epsilon", 0.0f}, {"num_groups", int64_t(2)}});
  // group 0: {1, 2}, mean 1.5, std 0.5; group 1: {3, 5}, mean 4, std 1.
  expectTensor(y, DType::Float32, {1, 4, 1}, {-1, 2, -3, 5});
  EXPECT_USER_ERROR(runOne(OpKind::GroupNormalization, {x, f32({4}, {1, 1, 1, 1}), f32({4}, {0, 0, 0, 0})},
                           typeOf(DType::Float32, {1, 4, 1}), {{"num_groups", int64_t(3)}}),
                    "groups");
}

TEST(ReferenceInstanceNorm, EachChannelOfEachInstance) {
  Tensor x = f32({1, 2, 2}, {1, 3, 10, 10});
  auto y = runOne(OpKind::InstanceNormalization, {x, f32({2}, {2, 1}), f32({2}, {0.5, -1})},
                  typeOf(DType::Float32, {1, 2, 2}), {{"epsilon", 0.0f}});
  // channel 0: mean 2, std 1; channel 1: constant, 0 / 0 is NaN without epsilon.
  expectTensor(y, DType::Float32, {1, 2, 2}, {-1.5, 2.5, std::nan(""), std::nan("")});
  auto guarded = runOne(OpKind::InstanceNormalization, {x, f32({2}, {2, 1}), f32({2}, {0.5, -1})},
                        typeOf(DType::Float32, {1, 2, 2}), {{"epsilon", 1.0f}});
  expectTensor(guarded, DType::Float32, {1, 2, 2},
               {2 * -1 / std::sqrt(2.0) + 0.5, 2 * 1 / std::sqrt(2.0) + 0.5, -1, -1}, 1e-7);
}

TEST(ReferenceMVN, DefaultAxesAreBatchAndSpatial) {
  Tensor x = f32({1, 2, 1, 2}, {1, 3, 2, 2});
  auto y = runOne(OpKind::MeanVarianceNormalization, {x}, typeOf(DType::Float32, {1, 2, 1, 2}));
  double d = 1 + 1e-9;
  expectTensor(y, DType::Float32, {1, 2, 1, 2}, {-1 / d, 1 / d, 0, 0}, 1e-7);
  auto lastAxis = runOne(OpKind::MeanVarianceNormalization, {f32({2, 2}, {0, 2, 5, 5})},
                         typeOf(DType::Float32, {2, 2}), {{"axes", std::vector<int64_t>{1}}});
  expectTensor(lastAxis, DType::Float32, {2, 2}, {-1, 1, 0, 0}, 1e-7);
}

TEST(ReferenceLpNorm, L1AndL2AlongAnAxis) {
  Tensor x = f32({3, 2}, {3, 4, 0, 0, -1, 3});
  expectTensor(runOne(OpKind::LpNormalization, {x}, typeOf(DType::Float32, {3, 2})), DType::Float32,
               {3, 2}, {0.6, 0.8, 0, 0, -1 / std::sqrt(10.0), 3 / std::sqrt(10.0)}, 1e-7);
  expectTensor(runOne(OpKind::LpNormalization, {x}, typeOf(DType::Float32, {3, 2}), {{"p", int64_t(1)}}),
               DType::Float32, {3, 2}, {3 / 7.0, 4 / 7.0, 0, 0, -0.25, 0.75}, 1e-7);
  expectTensor(runOne(OpKind::LpNormalization, {f32({2, 1}, {3, -4})}, typeOf(DType::Float32, {2, 1}),
                      {{"axis", int64_t(0)}}),
               DType::Float32, {2, 1}, {0.6, -0.8}, 1e-7);
  EXPECT_USER_ERROR(runOne(OpKind::LpNormalization, {x}, typeOf(DType::Float32, {3, 2}), {{"p", int64_t(3)}}),
                    "p must be");
}

TEST(ReferenceLRN, SumsSquaresOverNeighbouringChannels) {
  Tensor x = f32({1, 3, 1, 1}, {1, 2, 3});
  auto y = runOne(OpKind::LRN, {x}, typeOf(DType::Float32, {1, 3, 1, 1}),
                  {{"size", int64_t(2)}, {"alpha", 1.0f}, {"beta", 1.0f}, {"bias", 1.0f}});
  // size 2: channels c .. c + 1. Sums 1 + 4, 4 + 9, 9.
  expectTensor(y, DType::Float32, {1, 3, 1, 1}, {1 / 3.5, 2 / 7.5, 3 / 5.5}, 1e-7);
  auto y3 = runOne(OpKind::LRN, {x}, typeOf(DType::Float32, {1, 3, 1, 1}),
                   {{"size", int64_t(3)}, {"alpha", 3.0f}, {"beta", 0.5f}, {"bias", 2.0f}});
  // size 3: channels c - 1 .. c + 1. Sums 5, 14, 13; alpha / size = 1.
  expectTensor(y3, DType::Float32, {1, 3, 1, 1}, {1 / std::sqrt(7.0), 2 / 4.0, 3 / std::sqrt(15.0)},
               1e-7);
}
