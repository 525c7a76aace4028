// Shape inference for convolution, pooling and normalisation. Expected sizes are worked out by
// hand from the ONNX spec formulas (floor/ceil of (in + pads - dilated kernel) / stride + 1, the
// ceil_mode rule that drops a window starting in the right padding, SAME = ceil(in / stride),
// ConvTranspose's stride * (in - 1) + output_padding + kernel - pads); each was also confirmed
// against onnxruntime when the test was written.
#include "infer_test_helpers.h"

using namespace sinter;
using namespace sinter::testing;

TEST(InferConv, StridedPaddedAndGrouped) {
  InferBuilder b;
  // (224 + 3 + 3 - 7) / 2 + 1 = 112.
  EXPECT_EQ(b.infer(OpKind::Conv, {b.input(f32({1, 3, 224, 224})), b.input(f32({64, 3, 7, 7}))},
                    {{"strides", intsAttr({2, 2})}, {"pads", intsAttr({3, 3, 3, 3})}}),
            f32({1, 64, 112, 112}));
  // Depthwise: C = 32 = 1 per group x 32 groups.
  EXPECT_EQ(b.infer(OpKind::Conv, {b.input(f32({1, 32, 56, 56})), b.input(f32({32, 1, 3, 3})),
                                   b.input(f32({32}))},
                    {{"group", intAttr(32)}, {"pads", intsAttr({1, 1, 1, 1})}}),
            f32({1, 32, 56, 56}));
  // Dilation 2 makes a 3-wide kernel 5 wide: 10 - 5 + 1 = 6.
  EXPECT_EQ(b.infer(OpKind::Conv, {b.input(f32({sym("N"), 2, 10, 10})), b.input(f32({4, 2, 3, 3}))},
                    {{"dilations", intsAttr({2, 2})}}),
            f32({sym("N"), 4, 6, 6}));
  // 1-D, spatial dim symbolic: unknown.
  EXPECT_EQ(b.infer(OpKind::Conv, {b.input(f32({1, 2, sym("L")})), b.input(f32({4, 2, 3}))}),
            f32({1, 4, unk()}));
}

TEST(InferConv, AutoPad) {
  InferBuilder b;
  Value *x = b.input(f32({1, 2, 7, 7}));
  Value *w = b.input(f32({4, 2, 3, 3}));
  // SAME: ceil(7 / 2) = 4. VALID: (7 - 3) / 2 + 1 = 3.
  EXPECT_EQ(b.infer(OpKind::Conv, {x, w},
                    {{"strides", intsAttr({2, 2})}, {"auto_pad", strAttr("SAME_UPPER")}}),
            f32({1, 4, 4, 4}));
  EXPECT_EQ(b.infer(OpKind::Conv, {x, w},
                    {{"strides", intsAttr({2, 2})}, {"auto_pad", strAttr("VALID")}}),
            f32({1, 4, 3, 3}));
  EXPECT_EQ(b.infer(OpKind::AveragePool, {x},
                    {{"kernel_shape", intsAttr({3, 3})},
                     {"strides", intsAttr({2, 2})},
                     {"auto_pad", strAttr("SAME_LOWER")}}),
            f32({1, 2, 4, 4}));
  EXPECT_INFER_ERROR(b, OpKind::Conv, {x, w}, {{"auto_pad", strAttr("SAME")}});
}

TEST(InferConv, InvalidShapesAreErrors) {
  InferBuilder b;
  // 4 input channels, but 3 per group x 1 group expected.
  EXPECT_INFER_ERROR(b, OpKind::Conv, {b.input(f32({1, 4, 8, 8})), b.input(f32({8, 3, 3, 3}))});
  // 8 output channels not divisible by 3 groups.
  EXPECT_INFER_ERROR(b, OpKind::Conv, {b.input(f32({1, 6, 8, 8})), b.input(f32({8, 2, 3, 3}))},
                     {{"group", intAttr(3)}});
  EXPECT_INFER_ERROR(b, OpKind::Conv, {b.input(f32({1, 3, 8, 8})), b.input(f32({8, 3, 3, 3})),
                                       b.input(f32({4}))});
  EXPECT_INFER_ERROR(b, OpKind::Conv, {b.input(f32({3, 8, 8})), b.input(f32({8, 3, 3, 3}))});
  EXPECT_INFER_ERROR(b, OpKind::Conv, {b.input(f32({1, 3, 2, 2})), b.input(f32({8, 3, 3, 3}))});
  EXPECT_INFER_ERROR(b, OpKind::Conv, {b.input(f32({1, 3, 8, 8})), b.input(f32({8, 3, 3, 3}))},
                     {{"strides", intsAttr({0, 1})}});
  EXPECT_INFER_ERROR(b, OpKind::Conv, {b.input(f32({1, 3, 8, 8})), b.input(f32({8, 3, 3, 3}))},
                     {{"pads", intsAttr({1, 1})}});
  EXPECT_INFER_ERROR(b, OpKind::Conv, {b.input(f32({1, 3, 8, 8})), b.input(f32({8, 3, 3, 3}))},
                     {{"kernel_shape", intsAttr({5, 5})}});
  EXPECT_INFER_ERROR(b, OpKind::Conv, {b.input(i64({1, 3, 8, 8})), b.input(i64({8, 3, 3, 3}))});
}

TEST(InferConv, ConvTranspose) {
  InferBuilder b;
  Value *x = b.input(f32({1, 8, 5, 5}));
  Value *w = b.input(f32({8, 4, 3, 3}));
  // 2 * (5 - 1) + 1 + 3 - 1 - 1 = 10.
  EXPECT_EQ(b.infer(OpKind::ConvTranspose, {x, w},
                    {{"strides", intsAttr({2, 2})},
                     {"pads", intsAttr({1, 1, 1, 1})},
                     {"output_padding", intsAttr({1, 1})}}),
            f32({1, 4, 10, 10}));
  EXPECT_EQ(b.infer(OpKind::ConvTranspose, {x, w},
                    {{"strides", intsAttr({2, 2})}, {"auto_pad", strAttr("SAME_UPPER")}}),
            f32({1, 4, 10, 10}));
  EXPECT_EQ(b.infer(OpKind::ConvTranspose, {x, w},
                    {{"strides", intsAttr({2, 2})}, {"output_shape", intsAttr({11, 12})}}),
            f32({1, 4, 11, 12}));
  // SAME aims at in * stride = 10 and ignores output_padding; a 1-wide kernel with stride 3 cannot
  // reach 15 without negative pads, so it stays at 3 * 4 + 1 = 13 (as onnxruntime computes).
  EXPECT_EQ(b.infer(OpKind::ConvTranspose, {x, w},
                    {{"strides", intsAttr({2, 2})}, {"auto_pad", strAttr("SAME_LOWER")},
                     {"output_padding", intsAttr({1, 1})}}),
            f32({1, 4, 10, 10}));
  EXPECT_EQ(b.infer(OpKind::ConvTranspose, {x, b.input(f32({8, 4, 1, 1}))},
                    {{"strides", intsAttr({3, 3})}, {"auto_pad", strAttr("SAME_UPPER")}}),
            f32({1, 4, 13, 13}));
  EXPECT_INFER_ERROR(b, OpKind::ConvTranspose, {x, w}, {{"output_shape", intsAttr({1, 4, 10, 10})}});
  // Output channels: W's dim 1 x group = 2 x 2.
  EXPECT_EQ(b.infer(OpKind::ConvTranspose, {x, b.input(f32({8, 2, 3, 3}))}, {{"group", intAttr(2)}}),
            f32({1, 4, 7, 7}));
  EXPECT_INFER_ERROR(b, OpKind::ConvTranspose, {x, b.input(f32({6, 4, 3, 3}))});
}

TEST(InferPool, MaxPoolCeilModeAndIndices) {
  InferBuilder b;
  Value *x = b.input(f32({1, 1, 5, 5}));
  Attrs base = {{"kernel_shape", intsAttr({2, 2})}, {"strides", intsAttr({2, 2})}};
  // floor((5 - 2) / 2) + 1 = 2; ceil gives 3.
  EXPECT_EQ(b.infer(OpKind::MaxPool, {x}, base), f32({1, 1, 2, 2}));
  Attrs ceil = base;
  ceil.push_back({"ceil_mode", intAttr(1)});
  EXPECT_EQ(b.infer(OpKind::MaxPool, {x}, ceil), f32({1, 1, 3, 3}));
  // With pads 1: ceil((5 + 2 - 2) / 2) + 1 = 4, but the 4th window would start at 6 >= 5 + 1,
  // inside the right padding, so it is dropped.
  ceil.push_back({"pads", intsAttr({1, 1, 1, 1})});
  EXPECT_EQ(b.infer(OpKind::MaxPool, {x}, ceil), f32({1, 1, 3, 3}));
  std::vector<TensorType> both = b.inferAll(
      OpKind::MaxPool, {b.input(f32({sym("n"), 3, 9, 8, 7}))},
      {{"kernel_shape", intsAttr({2, 3, 2})}, {"dilations", intsAttr({2, 1, 3})},
       {"strides", intsAttr({1, 2, 2})}},
      2);
  EXPECT_EQ(both[0], f32({sym("n"), 3, 7, 3, 2}));
  EXPECT_EQ(both[1], i64({sym("n"), 3, 7, 3, 2}));
  EXPECT_INFER_ERROR(b, OpKind::MaxPool, {x}, {{"kernel_shape", intsAttr({6, 6})}});
  EXPECT_INFER_ERROR(b, OpKind::MaxPool, {x}, {{"kernel_shape", intsAttr({2})}});
  EXPECT_INFER_ERROR(b, OpKind::MaxPool, {x});
}

TEST(InferPool, AverageLpAndGlobalPools) {
  InferBuilder b;
  // ceil((6 - 3) / 2) + 1 = 3.
  EXPECT_EQ(b.infer(OpKind::AveragePool, {b.input(f32({1, 1, 6}))},
                    {{"kernel_shape", intsAttr({3})}, {"strides", intsAttr({2})},
                     {"ceil_mode", intAttr(1)}}),
            f32({1, 1, 3}));
  EXPECT_EQ(b.infer(OpKind::LpPool, {b.input(f32({1, 1, 9}))},
                    {{"kernel_shape", intsAttr({3})}, {"dilations", intsAttr({2})}}),
            f32({1, 1, 5}));
  EXPECT_EQ(b.infer(OpKind::GlobalAveragePool, {b.input(f32({sym("n"), 3, 7, 5}))}),
            f32({sym("n"), 3, 1, 1}));
  EXPECT_EQ(b.infer(OpKind::GlobalMaxPool, {b.input(f32({2, 3, 7}))}), f32({2, 3, 1}));
}

TEST(InferNormalization, BatchNormalization) {
  InferBuilder b;
  Value *x = b.input(f32({sym("n"), 3, 4, 4}));
  Value *c = b.input(f32({3}));
  EXPECT_EQ(b.infer(OpKind::BatchNormalization, {x, c, c, c, c}), f32({sym("n"), 3, 4, 4}));
  std::vector<TensorType> training = b.inferAll(OpKind::BatchNormalization, {x, c, c, c, c},
                                                {{"training_mode", intAttr(1)}}, 3);
  EXPECT_EQ(training[1], f32({3}));
  EXPECT_EQ(training[2], f32({3}));
  EXPECT_INFER_ERROR(b, OpKind::BatchNormalization, {x, c, c, b.input(f32({4})), c});
}

TEST(InferNormalization, LayerGroupInstanceAndOthers) {
  InferBuilder b;
  Value *x = b.input(f32({2, 5, 8}));
  std::vector<TensorType> layer = b.inferAll(OpKind::LayerNormalization,
                                             {x, b.input(f32({5, 8}))}, {{"axis", intAttr(1)}}, 3);
  EXPECT_EQ(layer[0], f32({2, 5, 8}));
  EXPECT_EQ(layer[1], f32({2, 1, 1}));
  EXPECT_EQ(layer[2], f32({2, 1, 1}));
  Value *half = b.input(ofType(DType::Float16, {2, 8}));
  layer = b.inferAll(OpKind::LayerNormalization, {half, b.input(ofType(DType::Float16, {8}))}, {}, 2);
  EXPECT_EQ(layer[0], ofType(DType::Float16, {2, 8}));
  EXPECT_EQ(layer[1], f32({2, 1})); // stash_type defaults to f32
  EXPECT_INFER_ERROR(b, OpKind::LayerNormalization, {x, b.input(f32({7}))});
  EXPECT_INFER_ERROR(b, OpKind::LayerNormalization, {x, b.input(f32({8}))}, {{"axis", intAttr(3)}});

  Value *image = b.input(f32({2, 6, 4, 4}));
  Value *six = b.input(f32({6}));
  EXPECT_EQ(b.infer(OpKind::GroupNormalization, {image, six, six}, {{"num_groups", intAttr(3)}}),
            f32({2, 6, 4, 4}));
  EXPECT_INFER_ERROR(b, OpKind::GroupNormalization, {image, six, six}, {{"num_groups", intAttr(4)}});
  EXPECT_EQ(b.infer(OpKind::InstanceNormalization, {image, six, six}), f32({2, 6, 4, 4}));
  EXPECT_INFER_ERROR(b, OpKind::InstanceNormalization, {image, b.input(f32({5})), six});
  EXPECT_EQ(b.infer(OpKind::RMSNormalization, {x, b.input(f32({8}))}), f32({2, 5, 8}));
  EXPECT_EQ(b.infer(OpKind::LRN, {image}, {{"size", intAttr(3)}}), f32({2, 6, 4, 4}));
  EXPECT_EQ(b.infer(OpKind::MeanVarianceNormalization, {image}), f32({2, 6, 4, 4}));
  EXPECT_INFER_ERROR(b, OpKind::MeanVarianceNormalization, {x}); // default axes [0, 2, 3]
  EXPECT_EQ(b.infer(OpKind::LpNormalization, {x}, {{"p", intAttr(1)}}), f32({2, 5, 8}));
}
