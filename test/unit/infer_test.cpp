// Shape and type inference: the framework (arity, errors, idempotence), elementwise ops with
// symbolic broadcasting, contractions and reductions. Expected types are worked out by hand from
// the ONNX operator spec (numpy broadcasting and matmul rules, Reduce* keepdims semantics).
#include "infer_test_helpers.h"

#include <limits>

using namespace sinter;
using namespace sinter::testing;

// ---- Framework ----

TEST(Infer, MissingRequiredInputAndTooManyInputsAreUserErrors) {
  InferBuilder b;
  Value *x = b.input(f32({2}));
  EXPECT_INFER_ERROR(b, OpKind::Add, {x, nullptr});
  EXPECT_INFER_ERROR(b, OpKind::Relu, {x, x});
  EXPECT_INFER_ERROR(b, OpKind::TopK, {x, b.ints({1})}, {}, 1); // TopK has two outputs
}

TEST(Infer, ErrorsNameTheNodeTheOpAndTheInput) {
  InferBuilder b;
  Value *x = b.input(f32({1, 4, 8, 8}));
  Value *w = b.input(f32({8, 3, 3, 3}));
  std::string message = b.error(OpKind::Conv, {x, w});
  EXPECT_NE(message.find("Conv 'bad'"), std::string::npos) << message;
  EXPECT_NE(message.find("input 0"), std::string::npos) << message;
  EXPECT_NE(message.find("channels"), std::string::npos) << message;
}

TEST(Infer, GraphInferenceIsDeterministicAndIdempotent) {
  Graph graph;
  Value *x = graph.addInput("x", f32({sym("batch"), 3, 4}));
  Node *shape = graph.addNode(OpKind::Shape, {x}, 1);
  Node *first = graph.addNode(OpKind::Gather, {shape->output(), graph.addConstant("zero", Tensor::fromInts({0}))}, 1);
  Node *target = graph.addNode(OpKind::Concat, {first->output(), graph.addConstant("m1", Tensor::fromInts({-1}))}, 1);
  target->setAttr("axis", int64_t(0));
  Node *reshape = graph.addNode(OpKind::Reshape, {x, target->output()}, 1);
  Node *relu = graph.addNode(OpKind::Relu, {reshape->output()}, 1);
  graph.addOutput(relu->output());
  inferGraph(graph);
  EXPECT_EQ(relu->output()->type(), f32({sym("batch"), 12}));
  std::vector<TensorType> before;
  for (const auto &node : graph.nodes())
    before.push_back(node->output()->type());
  inferGraph(graph);
  for (size_t k = 0; k < before.size(); ++k) {
    EXPECT_EQ(graph.nodes()[k]->output()->type(), before[k]);
    EXPECT_EQ(inferOutputTypes(*graph.nodes()[k])[0], before[k]);
  }
}

TEST(Infer, HugeOutputsAreUserErrors) {
  InferBuilder b;
  int64_t big = int64_t(1) << 40;
  EXPECT_INFER_ERROR(b, OpKind::ConstantOfShape, {b.ints({big, big})});
  EXPECT_INFER_ERROR(b, OpKind::Tile, {b.input(f32({int64_t(1) << 62})), b.ints({4})});
  EXPECT_INFER_ERROR(b, OpKind::Range,
                     {b.scalar(DType::Int64, 0), b.scalar(DType::Int64, 9.0e18),
                      b.scalar(DType::Int64, 1)});
}

// ---- Elementwise ----

TEST(InferElementwise, BroadcastPropagatesSymbols) {
  InferBuilder b;
  EXPECT_EQ(b.infer(OpKind::Add, {b.input(f32({sym("batch"), 3})), b.input(f32({1, 3}))}),
            f32({sym("batch"), 3}));
  EXPECT_EQ(b.infer(OpKind::Mul, {b.input(f32({2, 1, 4})), b.input(f32({3, 1}))}),
            f32({2, 3, 4}));
  // A static n > 1 wins over a symbol (which must be 1 or n); two symbols give an unknown dim.
  EXPECT_EQ(b.infer(OpKind::Sub, {b.input(f32({5})), b.input(f32({sym("n")}))}), f32({5}));
  EXPECT_EQ(b.infer(OpKind::Div, {b.input(f32({sym("a"), 2})), b.input(f32({sym("b"), 2}))}),
            f32({unk(), 2}));
  EXPECT_EQ(b.infer(OpKind::Add, {b.input(f32({sym("a")})), b.input(f32({sym("a")}))}),
            f32({sym("a")}));
  EXPECT_EQ(b.infer(OpKind::Add, {b.input(f32({})), b.input(f32({0, 3}))}), f32({0, 3}));
}

TEST(InferElementwise, IncompatibleBroadcastAndMixedDtypesAreErrors) {
  InferBuilder b;
  EXPECT_INFER_ERROR(b, OpKind::Add, {b.input(f32({2, 3})), b.input(f32({4, 3}))});
  EXPECT_INFER_ERROR(b, OpKind::Add, {b.input(f32({3})), b.input(i64({3}))});
  EXPECT_INFER_ERROR(b, OpKind::Not, {b.input(f32({3}))});
  EXPECT_INFER_ERROR(b, OpKind::Exp, {b.input(i64({3}))});
  EXPECT_INFER_ERROR(b, OpKind::And, {b.input(f32({3})), b.input(f32({3}))});
  EXPECT_INFER_ERROR(b, OpKind::BitShift, {b.input(ofType(DType::Uint8, {3})),
                                           b.input(ofType(DType::Uint8, {3}))});
}

TEST(InferElementwise, ComparisonsAndPredicatesGiveBool) {
  InferBuilder b;
  EXPECT_EQ(b.infer(OpKind::Less, {b.input(i64({4, 1})), b.input(i64({5}))}),
            ofType(DType::Bool, {4, 5}));
  EXPECT_EQ(b.infer(OpKind::Equal, {b.input(ofType(DType::Bool, {2})),
                                    b.input(ofType(DType::Bool, {2}))}),
            ofType(DType::Bool, {2}));
  EXPECT_EQ(b.infer(OpKind::IsNaN, {b.input(f32({sym("n")}))}), ofType(DType::Bool, {sym("n")}));
  EXPECT_EQ(b.infer(OpKind::Not, {b.input(ofType(DType::Bool, {3}))}), ofType(DType::Bool, {3}));
}

TEST(InferElementwise, WhereVariadicPowPReluClip) {
  InferBuilder b;
  EXPECT_EQ(b.infer(OpKind::Where, {b.input(ofType(DType::Bool, {2, 1})), b.input(f32({1, 3})),
                                    b.input(f32({3}))}),
            f32({2, 3}));
  EXPECT_INFER_ERROR(b, OpKind::Where, {b.input(f32({2})), b.input(f32({2})), b.input(f32({2}))});
  EXPECT_EQ(b.infer(OpKind::Sum, {b.input(f32({3, 1})), b.input(f32({4})), b.input(f32({1, 1, 1}))}),
            f32({1, 3, 4}));
  EXPECT_EQ(b.infer(OpKind::Max, {b.input(i64({2}))}), i64({2}));
  // Pow's exponent may have another type; the result has the base's.
  EXPECT_EQ(b.infer(OpKind::Pow, {b.input(f32({2, 3})), b.input(i64({}))}), f32({2, 3}));
  EXPECT_EQ(b.infer(OpKind::PRelu, {b.input(f32({1, 3, 4, 4})), b.input(f32({3, 1, 1}))}),
            f32({1, 3, 4, 4}));
  EXPECT_INFER_ERROR(b, OpKind::PRelu, {b.input(f32({1, 3, 4, 4})), b.input(f32({5}))});
  EXPECT_EQ(b.infer(OpKind::Clip, {b.input(f32({2})), b.scalar(DType::Float32, 0),
                                   b.scalar(DType::Float32, 6)}),
            f32({2}));
  EXPECT_INFER_ERROR(b, OpKind::Clip, {b.input(f32({2})), b.input(f32({2}))});
}

TEST(InferElementwise, CastTakesTheDtypeFromItsAttributeOrTarget) {
  InferBuilder b;
  EXPECT_EQ(b.infer(OpKind::Cast, {b.input(f32({sym("n"), 2}))}, {{"to", intAttr(7)}}),
            i64({sym("n"), 2}));
  EXPECT_EQ(b.infer(OpKind::Cast, {b.input(f32({2}))}, {{"to", intAttr(10)}}),
            ofType(DType::Float16, {2}));
  EXPECT_INFER_ERROR(b, OpKind::Cast, {b.input(f32({2}))}, {{"to", intAttr(8)}}); // string
  EXPECT_EQ(b.infer(OpKind::CastLike, {b.input(f32({2, 2})), b.input(ofType(DType::Int8, {}))}),
            ofType(DType::Int8, {2, 2}));
}

// ---- Contractions ----

TEST(InferContraction, MatMulFollowsNumpy) {
  InferBuilder b;
  EXPECT_EQ(b.infer(OpKind::MatMul, {b.input(f32({2, 3, 4})), b.input(f32({4, 5}))}),
            f32({2, 3, 5}));
  EXPECT_EQ(b.infer(OpKind::MatMul, {b.input(f32({4})), b.input(f32({4, 5}))}), f32({5}));
  EXPECT_EQ(b.infer(OpKind::MatMul, {b.input(f32({2, 3, 4})), b.input(f32({4}))}), f32({2, 3}));
  EXPECT_EQ(b.infer(OpKind::MatMul, {b.input(f32({4})), b.input(f32({4}))}), f32({}));
  EXPECT_EQ(b.infer(OpKind::MatMul, {b.input(f32({sym("batch"), 1, 3, 4})),
                                     b.input(f32({7, 4, sym("n")}))}),
            f32({sym("batch"), 7, 3, sym("n")}));
  EXPECT_INFER_ERROR(b, OpKind::MatMul, {b.input(f32({3, 4})), b.input(f32({5, 6}))});
  EXPECT_INFER_ERROR(b, OpKind::MatMul, {b.input(f32({})), b.input(f32({5, 6}))});
  EXPECT_INFER_ERROR(b, OpKind::MatMul, {b.input(ofType(DType::Int8, {2, 2})),
                                         b.input(ofType(DType::Int8, {2, 2}))});
}

TEST(InferContraction, GemmTransposesAndBroadcastsC) {
  InferBuilder b;
  // transA: A is K x M = 4 x 3; B is K x N = 4 x 5.
  EXPECT_EQ(b.infer(OpKind::Gemm, {b.input(f32({4, 3})), b.input(f32({4, 5})), b.input(f32({5}))},
                    {{"transA", intAttr(1)}}),
            f32({3, 5}));
  EXPECT_EQ(b.infer(OpKind::Gemm, {b.input(f32({sym("m"), 4})), b.input(f32({6, 4}))},
                    {{"transB", intAttr(1)}}),
            f32({sym("m"), 6}));
  EXPECT_INFER_ERROR(b, OpKind::Gemm,
                     {b.input(f32({4, 3})), b.input(f32({4, 5})), b.input(f32({3}))},
                     {{"transA", intAttr(1)}});
  EXPECT_INFER_ERROR(b, OpKind::Gemm, {b.input(f32({4, 3})), b.input(f32({4, 5}))});
}

TEST(InferContraction, EinsumParsesExplicitImplicitAndEllipsis) {
  InferBuilder b;
  EXPECT_EQ(b.infer(OpKind::Einsum, {b.input(f32({2, 3, 4})), b.input(f32({2, 4, 5}))},
                    {{"equation", strAttr("bij,bjk->bik")}}),
            f32({2, 3, 5}));
  // Implicit output: labels used once, alphabetically: "ij,jk" -> "ik"; "ba" -> "ab".
  EXPECT_EQ(b.infer(OpKind::Einsum, {b.input(f32({3, 4})), b.input(f32({4, 5}))},
                    {{"equation", strAttr("ij,jk")}}),
            f32({3, 5}));
  EXPECT_EQ(b.infer(OpKind::Einsum, {b.input(f32({2, 3}))}, {{"equation", strAttr("ba")}}),
            f32({3, 2}));
  EXPECT_EQ(b.infer(OpKind::Einsum, {b.input(f32({3, 3}))}, {{"equation", strAttr("ii")}}),
            f32({}));
  EXPECT_EQ(b.infer(OpKind::Einsum, {b.input(f32({sym("b"), 3, 4, 5}))},
                    {{"equation", strAttr("...ij->...ji")}}),
            f32({sym("b"), 3, 5, 4}));
  EXPECT_EQ(b.infer(OpKind::Einsum, {b.input(f32({2, 3, 4})), b.input(f32({4, 5}))},
                    {{"equation", strAttr("...ij, jk")}}),
            f32({2, 3, 5}));
  EXPECT_INFER_ERROR(b, OpKind::Einsum, {b.input(f32({3, 4})), b.input(f32({5, 6}))},
                     {{"equation", strAttr("ij,jk->ik")}});
  EXPECT_INFER_ERROR(b, OpKind::Einsum, {b.input(f32({3, 4}))}, {{"equation", strAttr("ijk")}});
  EXPECT_INFER_ERROR(b, OpKind::Einsum, {b.input(f32({3, 4}))}, {{"equation", strAttr("ij->iz")}});
}

// ---- Reductions ----

TEST(InferReduction, AxesInputKeepdimsAndNoop) {
  InferBuilder b;
  Value *x = b.input(f32({2, 3, 4}));
  EXPECT_EQ(b.infer(OpKind::ReduceSum, {x, b.ints({1})}), f32({2, 1, 4}));
  EXPECT_EQ(b.infer(OpKind::ReduceMean, {x, b.ints({1})}, {{"keepdims", intAttr(0)}}), f32({2, 4}));
  EXPECT_EQ(b.infer(OpKind::ReduceMax, {x, b.ints({-1, 0})}, {{"keepdims", intAttr(0)}}), f32({3}));
  EXPECT_EQ(b.infer(OpKind::ReduceSum, {x}), f32({1, 1, 1}));
  EXPECT_EQ(b.infer(OpKind::ReduceSum, {x}, {{"keepdims", intAttr(0)}}), f32({}));
  EXPECT_EQ(b.infer(OpKind::ReduceSum, {x, b.ints({})}, {{"noop_with_empty_axes", intAttr(1)}}),
            f32({2, 3, 4}));
  EXPECT_INFER_ERROR(b, OpKind::ReduceSum, {x, b.ints({3})});
  EXPECT_INFER_ERROR(b, OpKind::ReduceProd, {b.input(ofType(DType::Bool, {2}))});
  EXPECT_EQ(b.infer(OpKind::ReduceMin, {b.input(ofType(DType::Bool, {2}))}),
            ofType(DType::Bool, {1}));
}

TEST(InferReduction, NonConstantAxesKeepTheRank) {
  InferBuilder b;
  Value *x = b.input(f32({2, 1, 4}));
  Value *axes = b.input(i64({2}));
  EXPECT_EQ(b.infer(OpKind::ReduceSum, {x, axes}), f32({unk(), 1, unk()}));
  EXPECT_EQ(b.infer(OpKind::ReduceSum, {x, axes}, {{"keepdims", intAttr(0)}}), f32({unk()}));
  EXPECT_INFER_ERROR(b, OpKind::ReduceSum, {x, b.input(i64({unk()}))}, {{"keepdims", intAttr(0)}});
  EXPECT_EQ(b.infer(OpKind::ReduceSum, {x, b.input(i64({unk()}))}), f32({unk(), 1, unk()}));
}

TEST(InferReduction, AxesTracedThroughRangeOverTheRank) {
  // ONNX's expanded normalisations reduce over Range(axis, Size(Shape(x)), 1).
  InferBuilder b;
  Value *x = b.input(f32({2, 3, 4, 5}));
  Node *shape = b.node(OpKind::Shape, {x});
  Node *rank = b.node(OpKind::Size, {shape->output()});
  Node *axes = b.node(OpKind::Range, {b.scalar(DType::Int64, 2), rank->output(),
                                      b.scalar(DType::Int64, 1)});
  for (Node *node : {shape, rank, axes})
    inferNode(*node);
  EXPECT_EQ(axes->output()->type(), i64({2}));
  EXPECT_EQ(b.infer(OpKind::ReduceMean, {x, axes->output()}), f32({2, 3, 1, 1}));
  // ConstantOfShape(Sub(rank, 2)) of ones, concatenated after Shape(x)[0:2]: [2, 3, 1, 1].
  Node *count = b.node(OpKind::Sub, {rank->output(), b.scalar(DType::Int64, 2)});
  Node *countVector = b.node(OpKind::Unsqueeze, {count->output(), b.ints({0})});
  Node *ones = b.node(OpKind::ConstantOfShape, {countVector->output()});
  ones->setAttr("value", std::make_shared<const Tensor>(Tensor::fromInts({1})));
  Node *prefix = b.node(OpKind::Slice, {shape->output(), b.ints({0}), b.ints({2})});
  Node *target = b.node(OpKind::Concat, {prefix->output(), ones->output()}, {{"axis", intAttr(0)}});
  for (Node *node : {count, countVector, ones, prefix, target})
    inferNode(*node);
  EXPECT_EQ(target->output()->type(), i64({4}));
  EXPECT_EQ(b.infer(OpKind::Reshape, {b.input(f32({6, 1})), target->output()}), f32({2, 3, 1, 1}));
}

TEST(InferReduction, ArgMaxSoftmaxCumSumTopK) {
  InferBuilder b;
  Value *x = b.input(f32({2, 3, 4}));
  EXPECT_EQ(b.infer(OpKind::ArgMax, {x}, {{"axis", intAttr(1)}, {"keepdims", intAttr(0)}}),
            i64({2, 4}));
  EXPECT_EQ(b.infer(OpKind::ArgMin, {x}), i64({1, 3, 4}));
  EXPECT_EQ(b.infer(OpKind::Softmax, {x}), f32({2, 3, 4}));
  EXPECT_INFER_ERROR(b, OpKind::Softmax, {x}, {{"axis", intAttr(3)}});
  EXPECT_EQ(b.infer(OpKind::CumSum, {x, b.scalar(DType::Int32, -1)}), f32({2, 3, 4}));
  EXPECT_INFER_ERROR(b, OpKind::CumSum, {x, b.scalar(DType::Int64, 3)});

  Value *scores = b.input(f32({sym("n"), 10}));
  std::vector<TensorType> topK = b.inferAll(OpKind::TopK, {scores, b.ints({4})}, {}, 2);
  EXPECT_EQ(topK[0], f32({sym("n"), 4}));
  EXPECT_EQ(topK[1], i64({sym("n"), 4}));
  topK = b.inferAll(OpKind::TopK, {scores, b.input(i64({1}))}, {{"axis", intAttr(0)}}, 2);
  EXPECT_EQ(topK[0], f32({unk(), 10}));
  EXPECT_INFER_ERROR(b, OpKind::TopK, {scores, b.ints({11})}, {}, 2);
}
