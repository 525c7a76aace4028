// Shape inference for data movement, indexing, tensor creation and quantisation. Expected types
// are worked out by hand from the ONNX spec (Reshape's 0 and -1, Slice's clamping with negative
// steps, Split's uneven last chunk, Resize's floor(in * scale), Range's
// max(ceil((limit - start) / delta), 0), ...); the tricky ones were confirmed against
// onnxruntime when the test was written.
#include "infer_test_helpers.h"

#include <limits>

using namespace sinter;
using namespace sinter::testing;

namespace {
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
} // namespace

TEST(InferDataMovement, ReshapeZeroMinusOneAndSymbols) {
  InferBuilder b;
  EXPECT_EQ(b.infer(OpKind::Reshape, {b.input(f32({2, 3, 4})), b.ints({0, -1})}), f32({2, 12}));
  EXPECT_EQ(b.infer(OpKind::Reshape, {b.input(f32({sym("batch"), 3, 4})), b.ints({0, -1})}),
            f32({sym("batch"), 12}));
  // The symbol cancels out of -1's quotient: batch * 12 / (3 * 4) = batch.
  EXPECT_EQ(b.infer(OpKind::Reshape, {b.input(f32({sym("batch"), 12})), b.ints({-1, 3, 4})}),
            f32({sym("batch"), 3, 4}));
  EXPECT_EQ(b.infer(OpKind::Reshape, {b.input(f32({sym("batch"), 12})), b.ints({2, -1})}),
            f32({2, unk()}));
  EXPECT_EQ(b.infer(OpKind::Reshape, {b.input(f32({0, 4})), b.ints({0, 4})},
                    {{"allowzero", intAttr(1)}}),
            f32({0, 4}));
  EXPECT_EQ(b.infer(OpKind::Reshape, {b.input(f32({2, 3})), b.input(i64({3}))}),
            f32({unk(), unk(), unk()}));
  EXPECT_INFER_ERROR(b, OpKind::Reshape, {b.input(f32({2, 3, 4})), b.ints({5, -1})});
  EXPECT_INFER_ERROR(b, OpKind::Reshape, {b.input(f32({2, 3, 4})), b.ints({4, 7})});
  EXPECT_INFER_ERROR(b, OpKind::Reshape, {b.input(f32({2, 3, 4})), b.ints({-1, -1})});
  EXPECT_INFER_ERROR(b, OpKind::Reshape, {b.input(f32({2, 3, 4})), b.ints({0, -1})},
                     {{"allowzero", intAttr(1)}});
  EXPECT_INFER_ERROR(b, OpKind::Reshape, {b.input(f32({2})), b.ints({1, 0})});
  EXPECT_INFER_ERROR(b, OpKind::Reshape, {b.input(f32({2})), b.input(i64({unk()}))});
}

TEST(InferDataMovement, ReshapeTracesComputedShapes) {
  // Reshape(x, Concat(Gather(Shape(x), [0]), [-1])), as exporters write flatten-from-batch.
  InferBuilder b;
  Value *x = b.input(f32({sym("batch"), 3, 4}));
  Node *shape = b.node(OpKind::Shape, {x});
  Node *batch = b.node(OpKind::Gather, {shape->output(), b.ints({0})});
  Node *target = b.node(OpKind::Concat, {batch->output(), b.ints({-1})}, {{"axis", intAttr(0)}});
  for (Node *node : {shape, batch, target})
    inferNode(*node);
  EXPECT_EQ(target->output()->type(), i64({2}));
  EXPECT_EQ(b.infer(OpKind::Reshape, {x, target->output()}), f32({sym("batch"), 12}));
  // Shape's start/end and Slice narrow the traced values.
  Node *tail = b.node(OpKind::Shape, {x}, {{"start", intAttr(-2)}});
  inferNode(*tail);
  EXPECT_EQ(b.infer(OpKind::Expand, {b.input(f32({1, 1})), tail->output()}), f32({3, 4}));
}

TEST(InferDataMovement, FlattenSqueezeUnsqueezeTranspose) {
  InferBuilder b;
  Value *x = b.input(f32({2, 3, 4, 5}));
  EXPECT_EQ(b.infer(OpKind::Flatten, {x}, {{"axis", intAttr(2)}}), f32({6, 20}));
  EXPECT_EQ(b.infer(OpKind::Flatten, {x}, {{"axis", intAttr(0)}}), f32({1, 120}));
  EXPECT_EQ(b.infer(OpKind::Flatten, {x}, {{"axis", intAttr(-1)}}), f32({24, 5}));
  EXPECT_EQ(b.infer(OpKind::Flatten, {b.input(f32({sym("n"), 512, 1, 1}))}), f32({sym("n"), 512}));
  EXPECT_INFER_ERROR(b, OpKind::Flatten, {x}, {{"axis", intAttr(5)}});

  Value *ones = b.input(f32({1, 3, 1, 5}));
  EXPECT_EQ(b.infer(OpKind::Squeeze, {ones, b.ints({0, -2})}), f32({3, 5}));
  EXPECT_EQ(b.infer(OpKind::Squeeze, {ones}), f32({3, 5}));
  EXPECT_EQ(b.infer(OpKind::Squeeze, {b.input(f32({sym("a"), 2})), b.ints({0})}), f32({2}));
  EXPECT_INFER_ERROR(b, OpKind::Squeeze, {ones, b.ints({1})});
  EXPECT_INFER_ERROR(b, OpKind::Squeeze, {b.input(f32({sym("a"), 2}))});

  Value *matrix = b.input(f32({3, 4}));
  EXPECT_EQ(b.infer(OpKind::Unsqueeze, {matrix, b.ints({0, 3})}), f32({1, 3, 4, 1}));
  EXPECT_EQ(b.infer(OpKind::Unsqueeze, {matrix, b.ints({-1})}), f32({3, 4, 1}));
  EXPECT_EQ(b.infer(OpKind::Unsqueeze, {b.input(f32({3})), b.scalar(DType::Int64, 0)}), f32({1, 3}));
  // An empty axes input squeezes nothing (ONNX's reference: numpy.squeeze with axis=()).
  EXPECT_EQ(b.infer(OpKind::Squeeze, {ones, b.ints({})}), f32({1, 3, 1, 5}));
  EXPECT_INFER_ERROR(b, OpKind::Unsqueeze, {matrix, b.ints({1, 1})});
  EXPECT_INFER_ERROR(b, OpKind::Unsqueeze, {matrix, b.ints({3})});

  EXPECT_EQ(b.infer(OpKind::Transpose, {x}), f32({5, 4, 3, 2}));
  EXPECT_EQ(b.infer(OpKind::Transpose, {x}, {{"perm", intsAttr({0, 2, 3, 1})}}), f32({2, 4, 5, 3}));
  EXPECT_INFER_ERROR(b, OpKind::Transpose, {x}, {{"perm", intsAttr({0, 1, 1, 2})}});
}

TEST(InferDataMovement, ExpandTileConcat) {
  InferBuilder b;
  EXPECT_EQ(b.infer(OpKind::Expand, {b.input(f32({3, 1})), b.ints({2, 1, 6})}), f32({2, 3, 6}));
  EXPECT_EQ(b.infer(OpKind::Expand, {b.input(f32({2, 3})), b.ints({3})}), f32({2, 3}));
  EXPECT_EQ(b.infer(OpKind::Expand, {b.input(f32({sym("n"), 1})), b.ints({1, 5})}),
            f32({sym("n"), 5}));
  EXPECT_INFER_ERROR(b, OpKind::Expand, {b.input(f32({3})), b.ints({4})});

  EXPECT_EQ(b.infer(OpKind::Tile, {b.input(f32({2, sym("n")})), b.ints({2, 1})}),
            f32({4, sym("n")}));
  EXPECT_INFER_ERROR(b, OpKind::Tile, {b.input(f32({2, 3})), b.ints({2})});

  EXPECT_EQ(b.infer(OpKind::Concat, {b.input(f32({sym("b"), 3})), b.input(f32({sym("b"), 5})),
                                     b.input(f32({unk(), 1}))},
                    {{"axis", intAttr(-1)}}),
            f32({sym("b"), 9}));
  EXPECT_EQ(b.infer(OpKind::Concat, {b.input(f32({sym("s"), 2})), b.input(f32({0, 2}))},
                    {{"axis", intAttr(0)}}),
            f32({sym("s"), 2}));
  EXPECT_INFER_ERROR(b, OpKind::Concat, {b.input(f32({2, 3})), b.input(f32({4, 3}))},
                     {{"axis", intAttr(1)}});
  EXPECT_INFER_ERROR(b, OpKind::Concat, {b.input(f32({2, 3})), b.input(f32({2, 3, 1}))},
                     {{"axis", intAttr(1)}});
}

TEST(InferDataMovement, SplitDepthToSpaceSpaceToDepth) {
  InferBuilder b;
  Value *x = b.input(f32({10, 4}));
  // num_outputs 3: chunks of ceil(10 / 3) = 4, the last 10 - 8 = 2.
  std::vector<TensorType> parts = b.inferAll(OpKind::Split, {x}, {{"num_outputs", intAttr(3)}}, 3);
  EXPECT_EQ(parts, (std::vector<TensorType>{f32({4, 4}), f32({4, 4}), f32({2, 4})}));
  parts = b.inferAll(OpKind::Split, {x, b.ints({2, 8})}, {}, 2);
  EXPECT_EQ(parts, (std::vector<TensorType>{f32({2, 4}), f32({8, 4})}));
  parts = b.inferAll(OpKind::Split, {x}, {{"axis", intAttr(1)}}, 2);
  EXPECT_EQ(parts, (std::vector<TensorType>{f32({10, 2}), f32({10, 2})}));
  EXPECT_INFER_ERROR(b, OpKind::Split, {x, b.ints({2, 7})}, {}, 2);
  EXPECT_INFER_ERROR(b, OpKind::Split, {b.input(f32({5}))}, {{"num_outputs", intAttr(4)}}, 4);
  EXPECT_INFER_ERROR(b, OpKind::Split, {x}, {{"num_outputs", intAttr(3)}}, 2);

  EXPECT_EQ(b.infer(OpKind::DepthToSpace, {b.input(f32({1, 8, 2, 3}))}, {{"blocksize", intAttr(2)}}),
            f32({1, 2, 4, 6}));
  EXPECT_EQ(b.infer(OpKind::SpaceToDepth, {b.input(f32({1, 2, 4, 6}))}, {{"blocksize", intAttr(2)}}),
            f32({1, 8, 2, 3}));
  EXPECT_INFER_ERROR(b, OpKind::DepthToSpace, {b.input(f32({1, 6, 2, 3}))},
                     {{"blocksize", intAttr(2)}});
}

TEST(InferIndexing, SliceClampsAndStepsBackwards) {
  InferBuilder b;
  Value *x = b.input(f32({10}));
  auto slice = [&](int64_t start, int64_t end, int64_t step) {
    return b.infer(OpKind::Slice, {x, b.ints({start}), b.ints({end}), b.ints({0}), b.ints({step})});
  };
  EXPECT_EQ(slice(1, 8, 3), f32({3}));     // 1, 4, 7
  EXPECT_EQ(slice(8, 1, -2), f32({4}));    // 8, 6, 4, 2
  EXPECT_EQ(slice(-1, kMin, -1), f32({10})); // reversed
  EXPECT_EQ(slice(-1, -11, -1), f32({10})); // end -11 + 10 = -1: clamped to -1, so all of it
  EXPECT_EQ(slice(100, 0, -3), f32({3}));  // start clamps to 9: 9, 6, 3
  EXPECT_EQ(slice(-100, 3, 1), f32({3}));
  EXPECT_EQ(slice(5, 2, 1), f32({0}));
  Value *matrix = b.input(f32({sym("n"), 10}));
  EXPECT_EQ(b.infer(OpKind::Slice, {matrix, b.ints({-3}), b.ints({kMax}), b.ints({1})}),
            f32({sym("n"), 3}));
  EXPECT_EQ(b.infer(OpKind::Slice, {matrix, b.ints({0}), b.ints({kMax})}), f32({sym("n"), 10}));
  EXPECT_EQ(b.infer(OpKind::Slice, {matrix, b.ints({1}), b.ints({kMax})}), f32({unk(), 10}));
  EXPECT_EQ(b.infer(OpKind::Slice, {matrix, b.input(i64({1})), b.ints({4}), b.ints({1})}),
            f32({sym("n"), unk()}));
  EXPECT_INFER_ERROR(b, OpKind::Slice, {x, b.ints({1}), b.ints({4}), b.ints({0}), b.ints({0})});
  EXPECT_INFER_ERROR(b, OpKind::Slice, {matrix, b.ints({0, 0}), b.ints({1, 1}), b.ints({1, -1})});
  EXPECT_INFER_ERROR(b, OpKind::Slice, {matrix, b.ints({0}), b.ints({1}), b.ints({2})});
}

TEST(InferIndexing, PadWithAxesAndNegativePads) {
  InferBuilder b;
  Value *x = b.input(f32({2, 3}));
  EXPECT_EQ(b.infer(OpKind::Pad, {x, b.ints({1, 0, 1, 2})}), f32({4, 5}));
  EXPECT_EQ(b.infer(OpKind::Pad, {x, b.ints({1, 1}), nullptr, b.ints({-1})}), f32({2, 5}));
  EXPECT_EQ(b.infer(OpKind::Pad, {x, b.ints({0, -1, 0, -1})}), f32({2, 1}));
  EXPECT_EQ(b.infer(OpKind::Pad, {x, b.ints({1, 1, 1, 1})}, {{"mode", strAttr("wrap")}}),
            f32({4, 5}));
  EXPECT_EQ(b.infer(OpKind::Pad, {x, b.input(i64({4}))}), f32({unk(), unk()}));
  EXPECT_INFER_ERROR(b, OpKind::Pad, {x, b.ints({1, 1})});
  EXPECT_INFER_ERROR(b, OpKind::Pad, {x, b.ints({0, -2, 0, -2})});
  EXPECT_INFER_ERROR(b, OpKind::Pad, {x, b.ints({0, 0, 0, 0}), b.input(i64({}))});
}

TEST(InferIndexing, ResizeScalesSizesAxesAndAspectRatio) {
  InferBuilder b;
  Value *x = b.input(f32({1, 3, 4, 4}));
  EXPECT_EQ(b.infer(OpKind::Resize, {x, nullptr, b.floats({1, 1, 2, 2})}), f32({1, 3, 8, 8}));
  // floor(5 * 0.5) = 2, floor(5 * 0.6) = 3.
  EXPECT_EQ(b.infer(OpKind::Resize, {b.input(f32({1, 1, 5, 5})), nullptr, b.floats({1, 1, 0.5f, 0.6f})}),
            f32({1, 1, 2, 3}));
  EXPECT_EQ(b.infer(OpKind::Resize, {x, nullptr, nullptr, b.ints({1, 3, 7, 9})}), f32({1, 3, 7, 9}));
  EXPECT_EQ(b.infer(OpKind::Resize, {x, b.floats({}), b.floats({}), b.ints({7, 9})},
                    {{"axes", intsAttr({2, 3})}}),
            f32({1, 3, 7, 9}));
  Value *wide = b.input(f32({1, 1, 3, 7}));
  // One scale for both axes: max(5/3, 5/7) = 5/3, so round(3 * 5/3) = 5 and round(7 * 5/3) = 12.
  EXPECT_EQ(b.infer(OpKind::Resize, {wide, nullptr, nullptr, b.ints({5, 5})},
                    {{"axes", intsAttr({2, 3})}, {"keep_aspect_ratio_policy", strAttr("not_smaller")}}),
            f32({1, 1, 5, 12}));
  EXPECT_EQ(b.infer(OpKind::Resize, {wide, nullptr, nullptr, b.ints({5, 5})},
                    {{"axes", intsAttr({2, 3})}, {"keep_aspect_ratio_policy", strAttr("not_larger")}}),
            f32({1, 1, 2, 5})); // min(5/3, 5/7) = 5/7: round(15/7) = 2, 5
  EXPECT_EQ(b.infer(OpKind::Resize, {b.input(f32({sym("n"), 3, 4, 4})), nullptr,
                                     b.floats({1, 1, 2, 2})}),
            f32({sym("n"), 3, 8, 8}));
  EXPECT_INFER_ERROR(b, OpKind::Resize, {x, nullptr, b.floats({1, 1, 2, 2}), b.ints({1, 3, 8, 8})});
  EXPECT_INFER_ERROR(b, OpKind::Resize, {x, nullptr, b.floats({2, 2})});
  EXPECT_INFER_ERROR(b, OpKind::Resize, {x});
}

TEST(InferIndexing, GatherFamilyAndScatter) {
  InferBuilder b;
  Value *data = b.input(f32({5, 4}));
  EXPECT_EQ(b.infer(OpKind::Gather, {data, b.input(i64({2, 3}))}), f32({2, 3, 4}));
  EXPECT_EQ(b.infer(OpKind::Gather, {data, b.scalar(DType::Int32, 2)}, {{"axis", intAttr(1)}}),
            f32({5}));
  EXPECT_EQ(b.infer(OpKind::Gather, {data, b.ints({-5, 4})}), f32({2, 4}));
  EXPECT_INFER_ERROR(b, OpKind::Gather, {data, b.ints({5})});
  EXPECT_INFER_ERROR(b, OpKind::Gather, {data, b.input(f32({1}))});
  EXPECT_EQ(b.infer(OpKind::GatherElements, {data, b.input(i64({2, 4}))}), f32({2, 4}));

  Value *cube = b.input(f32({2, 3, 4}));
  EXPECT_EQ(b.infer(OpKind::GatherND, {cube, b.input(i64({5, 2}))}), f32({5, 4}));
  EXPECT_EQ(b.infer(OpKind::GatherND, {cube, b.input(i64({2, 1}))}, {{"batch_dims", intAttr(1)}}),
            f32({2, 4}));
  EXPECT_INFER_ERROR(b, OpKind::GatherND, {cube, b.input(i64({5, 4}))});

  EXPECT_EQ(b.infer(OpKind::ScatterND, {cube, b.input(i64({5, 2})), b.input(f32({5, 4}))}),
            f32({2, 3, 4}));
  EXPECT_INFER_ERROR(b, OpKind::ScatterND, {cube, b.input(i64({5, 2})), b.input(f32({5, 3}))});
  EXPECT_EQ(b.infer(OpKind::ScatterElements,
                    {data, b.input(i64({1, 4})), b.input(f32({1, 4}))}, {{"axis", intAttr(0)}}),
            f32({5, 4}));
  EXPECT_EQ(b.infer(OpKind::Trilu, {data, b.scalar(DType::Int64, 1)}), f32({5, 4}));
  EXPECT_INFER_ERROR(b, OpKind::Trilu, {b.input(f32({5}))});
}

TEST(InferCreation, ShapeSizeConstantOfShapeRange) {
  InferBuilder b;
  Value *x = b.input(f32({2, 3, 4, 5}));
  EXPECT_EQ(b.infer(OpKind::Shape, {x}, {{"start", intAttr(1)}, {"end", intAttr(-1)}}), i64({2}));
  EXPECT_EQ(b.infer(OpKind::Shape, {x}, {{"start", intAttr(-10)}, {"end", intAttr(10)}}), i64({4}));
  EXPECT_EQ(b.infer(OpKind::Shape, {x}, {{"start", intAttr(3)}, {"end", intAttr(1)}}), i64({0}));
  EXPECT_EQ(b.infer(OpKind::Size, {x}), i64({}));
  EXPECT_EQ(b.infer(OpKind::ConstantOfShape, {b.ints({2, 3})}), f32({2, 3}));
  Node *constant = b.node(OpKind::ConstantOfShape, {b.ints({4})});
  constant->setAttr("value", std::make_shared<const Tensor>(Tensor::fromInts({7}, DType::Int32)));
  EXPECT_EQ(inferOutputTypes(*constant)[0], ofType(DType::Int32, {4}));
  EXPECT_INFER_ERROR(b, OpKind::ConstantOfShape, {b.ints({2, -3})});

  auto range = [&](DType dtype, double start, double limit, double delta) {
    return b.infer(OpKind::Range, {b.scalar(dtype, start), b.scalar(dtype, limit), b.scalar(dtype, delta)});
  };
  EXPECT_EQ(range(DType::Int64, 0, 10, 3), i64({4}));                      // 0 3 6 9
  EXPECT_EQ(range(DType::Int32, 10, 4, -2), ofType(DType::Int32, {3}));    // 10 8 6
  EXPECT_EQ(range(DType::Int64, 10, 4, 2), i64({0}));
  EXPECT_EQ(range(DType::Float32, 1, 2, 0.3), f32({4}));                   // ceil(3.33)
  EXPECT_EQ(range(DType::Float32, 0, 1, 0.1), f32({10}));
  EXPECT_INFER_ERROR(b, OpKind::Range, {b.scalar(DType::Int64, 0), b.scalar(DType::Int64, 3),
                                        b.scalar(DType::Int64, 0)});
  EXPECT_INFER_ERROR(b, OpKind::Range, {b.scalar(DType::Int64, 0), b.scalar(DType::Int32, 3),
                                        b.scalar(DType::Int64, 1)});
  EXPECT_EQ(b.infer(OpKind::Range, {b.scalar(DType::Int64, 0), b.input(i64({})),
                                    b.scalar(DType::Int64, 1)}),
            i64({unk()}));
}

TEST(InferCreation, RangeOverASymbolicDimKeepsTheSymbol) {
  InferBuilder b;
  Value *x = b.input(f32({sym("batch"), sym("seq")}));
  Node *shape = b.node(OpKind::Shape, {x});
  inferNode(*shape);
  Node *seq = b.node(OpKind::Gather, {shape->output(), b.scalar(DType::Int64, 1)});
  inferNode(*seq);
  EXPECT_EQ(seq->output()->type(), i64({}));
  EXPECT_EQ(b.infer(OpKind::Range, {b.scalar(DType::Int64, 0), seq->output(),
                                    b.scalar(DType::Int64, 1)}),
            i64({sym("seq")}));
}

TEST(InferCreation, OneHotNonZeroEyeLikeDropout) {
  InferBuilder b;
  Value *indices = b.input(i64({2, 3}));
  Value *values = b.floats({0, 1});
  EXPECT_EQ(b.infer(OpKind::OneHot, {indices, b.scalar(DType::Int64, 10), values}), f32({2, 3, 10}));
  EXPECT_EQ(b.infer(OpKind::OneHot, {indices, b.ints({10}), values}, {{"axis", intAttr(0)}}),
            f32({10, 2, 3}));
  EXPECT_EQ(b.infer(OpKind::OneHot, {indices, b.scalar(DType::Float32, 4.7), values}),
            f32({2, 3, 4}));
  EXPECT_EQ(b.infer(OpKind::OneHot, {indices, b.input(i64({})), values}), f32({2, 3, unk()}));
  EXPECT_INFER_ERROR(b, OpKind::OneHot, {indices, b.ints({10}), values}, {{"axis", intAttr(3)}});
  EXPECT_INFER_ERROR(b, OpKind::OneHot, {indices, b.ints({10}), b.floats({0, 1, 2})});

  EXPECT_EQ(b.infer(OpKind::NonZero, {b.input(f32({2, 3}))}), i64({2, unk()}));
  EXPECT_EQ(b.infer(OpKind::NonZero, {b.ints({0, 3, 0, 5})}), i64({1, 2}));
  EXPECT_EQ(b.infer(OpKind::EyeLike, {b.input(f32({3, 4}))}, {{"dtype", intAttr(7)}}), i64({3, 4}));
  EXPECT_INFER_ERROR(b, OpKind::EyeLike, {b.input(f32({3}))});
  std::vector<TensorType> dropout = b.inferAll(OpKind::Dropout, {b.input(f32({sym("n"), 4}))}, {}, 2);
  EXPECT_EQ(dropout[0], f32({sym("n"), 4}));
  EXPECT_EQ(dropout[1], ofType(DType::Bool, {sym("n"), 4}));
}

TEST(InferQuantization, OutputDtypeFollowsZeroPointOrAttribute) {
  InferBuilder b;
  Value *x = b.input(f32({2, 6}));
  Value *scale = b.scalar(DType::Float32, 0.1);
  EXPECT_EQ(b.infer(OpKind::QuantizeLinear, {x, scale}), ofType(DType::Uint8, {2, 6}));
  EXPECT_EQ(b.infer(OpKind::QuantizeLinear, {x, scale, b.scalar(DType::Int8, 0)}),
            ofType(DType::Int8, {2, 6}));
  EXPECT_EQ(b.infer(OpKind::QuantizeLinear, {x, scale}, {{"output_dtype", intAttr(5)}}),
            ofType(DType::Int16, {2, 6}));
  EXPECT_INFER_ERROR(b, OpKind::QuantizeLinear, {x, scale, b.scalar(DType::Uint8, 0)},
                     {{"output_dtype", intAttr(3)}});
  // Per-axis along axis 1 (6 channels), and blocked: ceil(6 / 4) = 2 blocks.
  EXPECT_EQ(b.infer(OpKind::QuantizeLinear, {x, b.input(f32({6}))}), ofType(DType::Uint8, {2, 6}));
  EXPECT_INFER_ERROR(b, OpKind::QuantizeLinear, {x, b.input(f32({5}))});
  EXPECT_EQ(b.infer(OpKind::QuantizeLinear, {x, b.input(f32({2, 2}))}, {{"block_size", intAttr(4)}}),
            ofType(DType::Uint8, {2, 6}));
  EXPECT_INFER_ERROR(b, OpKind::QuantizeLinear, {x, b.input(f32({2, 3}))},
                     {{"block_size", intAttr(4)}});

  Value *q = b.input(ofType(DType::Uint8, {sym("n"), 3}));
  EXPECT_EQ(b.infer(OpKind::DequantizeLinear, {q, scale}), f32({sym("n"), 3}));
  EXPECT_EQ(b.infer(OpKind::DequantizeLinear, {q, b.scalar(DType::Float16, 0.1)}),
            ofType(DType::Float16, {sym("n"), 3}));
  EXPECT_INFER_ERROR(b, OpKind::DequantizeLinear, {q, scale, b.scalar(DType::Int8, 0)});
  EXPECT_INFER_ERROR(b, OpKind::DequantizeLinear, {b.input(f32({3})), scale});
}
