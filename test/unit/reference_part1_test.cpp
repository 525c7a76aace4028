// Reference evaluator, part 1: the graph driver and the elementwise rules. Expected values are
// worked out by hand from the ONNX spec, or computed here with independent formulas (std::exp).
#include "reference_test_util.h"

#include <cstdint>
#include <limits>
#include <numbers>

using namespace sinter;
using namespace sinter::testing;

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();
} // namespace

// ---- The graph driver -----------------------------------------------------------------------

TEST(ReferenceEvaluator, RunsNodesInOrderWithConstantsAndCallsTheObserver) {
  Graph graph;
  Value *x = graph.addInput("x", {DType::Float32, {Dim::symbol("n")}});
  Value *two = graph.addConstant("two", f32({}, {2}));
  Node *mul = graph.addNode(OpKind::Mul, {x, two}, 1, "mul");
  mul->output()->setType({DType::Float32, {Dim::symbol("n")}});
  Node *neg = graph.addNode(OpKind::Neg, {mul->output()}, 1, "neg");
  neg->output()->setType({DType::Float32, {Dim::symbol("n")}});
  graph.addOutput(neg->output());
  graph.addOutput(x); // an input may also be an output

  std::vector<std::string> seen;
  auto results = reference::evaluate(graph, {f32({3}, {1, -2, 0.5})},
                                     [&](const Node &node, const std::vector<Tensor> &outputs) {
                                       seen.push_back(node.name());
                                       EXPECT_EQ(outputs.size(), 1u);
                                     });
  ASSERT_EQ(results.size(), 2u);
  expectTensor(results[0], DType::Float32, {3}, {-2, 4, -1});
  expectTensor(results[1], DType::Float32, {3}, {1, -2, 0.5});
  EXPECT_EQ(seen, (std::vector<std::string>{"mul", "neg"}));
}

TEST(ReferenceEvaluator, KeepsAValueUntilItsLastUse) {
  // a feeds b and, later, c: it must survive b's evaluation. b is also a graph output.
  Graph graph;
  Value *x = graph.addInput("x", {DType::Int64, {2}});
  Node *a = graph.addNode(OpKind::Relu, {x}, 1, "a");
  Node *b = graph.addNode(OpKind::Neg, {a->output()}, 1, "b");
  Node *c = graph.addNode(OpKind::Sub, {a->output(), b->output()}, 1, "c");
  for (Node *node : {a, b, c})
    node->output()->setType({DType::Int64, {2}});
  graph.addOutput(c->output());
  graph.addOutput(b->output());
  auto results = reference::evaluate(graph, {i64({2}, {-3, 4})});
  expectInts(results[0], DType::Int64, {2}, {0, 8});
  expectInts(results[1], DType::Int64, {2}, {0, -4});
}

TEST(ReferenceEvaluator, ChecksInputsAgainstTheGraph) {
  Graph graph;
  Value *a = graph.addInput("a", {DType::Float32, {Dim::symbol("batch"), 2}});
  Value *b = graph.addInput("b", {DType::Float32, {Dim::symbol("batch"), 2}});
  Node *add = graph.addNode(OpKind::Add, {a, b}, 1);
  add->output()->setType({DType::Float32, {Dim::symbol("batch"), 2}});
  graph.addOutput(add->output());

  Tensor ok = f32({1, 2}, {1, 2});
  EXPECT_USER_ERROR(reference::evaluate(graph, {ok}), "takes 2 inputs");
  EXPECT_USER_ERROR(reference::evaluate(graph, {ok, i64({1, 2}, {1, 2})}), "'b'");
  EXPECT_USER_ERROR(reference::evaluate(graph, {ok, f32({2}, {1, 2})}), "rank");
  EXPECT_USER_ERROR(reference::evaluate(graph, {ok, f32({1, 3}, {1, 2, 3})}), "dim 1");
  EXPECT_USER_ERROR(reference::evaluate(graph, {ok, f32({2, 2}, {1, 2, 3, 4})}), "'batch'");
  auto results = reference::evaluate(graph, {f32({2, 2}, {1, 2, 3, 4}), f32({2, 2}, {1, 1, 1, 1})});
  expectTensor(results[0], DType::Float32, {2, 2}, {2, 3, 4, 5});
}

TEST(ReferenceEvaluator, ChecksTheRuleResultAgainstTheRecordedType) {
  // The graph says Add gives f32[3], but the inputs broadcast to f32[2,3].
  EXPECT_USER_ERROR(runOne(OpKind::Add, {f32({2, 1}, {1, 2}), f32({3}, {1, 2, 3})},
                           typeOf(DType::Float32, {3})),
                    "records f32[3]");
  EXPECT_USER_ERROR(runOne(OpKind::Add, {f32({1}, {1}), f32({1}, {1})}, typeOf(DType::Int64, {1})),
                    "records i64[1]");
  // Unknown and symbolic recorded dims accept any size.
  Graph graph;
  Value *x = graph.addInput("x", {DType::Float32, {3}});
  Node *relu = graph.addNode(OpKind::Relu, {x}, 1);
  relu->output()->setType({DType::Float32, {Dim::unknown()}});
  graph.addOutput(relu->output());
  expectTensor(reference::evaluate(graph, {f32({3}, {-1, 0, 2})})[0], DType::Float32, {3},
               {0, 0, 2});
}

TEST(ReferenceEvaluator, EvaluateNodeChecksArity) {
  Graph graph;
  Value *x = graph.addInput("x", {DType::Float32, {2}});
  Node *clip = graph.addNode(OpKind::Clip, {x, nullptr, nullptr}, 1, "clip");
  clip->output()->setType({DType::Float32, {2}});
  Tensor input = f32({2}, {-5, 5});
  auto outputs = reference::evaluateNode(*clip, {&input, nullptr, nullptr});
  expectTensor(outputs[0], DType::Float32, {2}, {-5, 5});
  Node *add = graph.addNode(OpKind::Add, {x, nullptr}, 1, "add");
  EXPECT_USER_ERROR(reference::evaluateNode(*add, {&input, nullptr}), "required input 1");
  EXPECT_TRUE(reference::canEvaluate(OpKind::Add));
}

TEST(ReferenceEvaluator, ImplementsEveryPartOneOp) {
  const char *names[] = {
      "Abs", "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "BitwiseNot", "Ceil", "Cos", "Cosh",
      "Erf", "Exp", "Floor", "IsInf", "IsNaN", "Log", "Mish", "Neg", "Not", "Reciprocal", "Relu",
      "Round", "Sigmoid", "Sign", "Sin", "Sinh", "Softplus", "Softsign", "Sqrt", "Tan", "Tanh",
      "Celu", "Clip", "Elu", "Gelu", "HardSigmoid", "HardSwish", "LeakyRelu", "Selu", "Shrink",
      "ThresholdedRelu", "Add", "And", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "Div",
      "Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual", "Max", "Mean", "Min", "Mod",
      "Mul", "Or", "Pow", "PRelu", "Sub", "Sum", "Where", "Xor", "Cast", "CastLike", "Trilu",
      "BatchNormalization", "GroupNormalization", "InstanceNormalization", "LayerNormalization",
      "LpNormalization", "LRN", "MeanVarianceNormalization", "RMSNormalization", "ArgMax", "ArgMin",
      "CumSum", "Hardmax", "LogSoftmax", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
      "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare",
      "Softmax", "TopK", "QuantizeLinear", "DequantizeLinear"};
  for (const char *name : names) {
    std::optional<OpKind> kind = opFromName(name);
    ASSERT_TRUE(kind) << name;
    EXPECT_TRUE(reference::canEvaluate(*kind)) << name;
  }
}

// ---- Unary math -----------------------------------------------------------------------------

TEST(ReferenceElementwise, UnaryMathMatchesTheStandardLibrary) {
  struct Case {
    OpKind op;
    double (*fn)(double);
    std::vector<double> inputs;
  };
  std::vector<Case> cases = {
      {OpKind::Exp, [](double x) { return std::exp(x); }, {-2, 0, 0.5, 3}},
      {OpKind::Log, [](double x) { return std::log(x); }, {0.25, 1, 10, 0}},
      {OpKind::Sqrt, [](double x) { return std::sqrt(x); }, {0, 2, 9, -1}},
      {OpKind::Sin, [](double x) { return std::sin(x); }, {-1, 0, 2}},
      {OpKind::Cos, [](double x) { return std::cos(x); }, {-1, 0, 2}},
      {OpKind::Tan, [](double x) { return std::tan(x); }, {-1, 0, 1.2}},
      {OpKind::Asin, [](double x) { return std::asin(x); }, {-1, 0.3, 2}},
      {OpKind::Acos, [](double x) { return std::acos(x); }, {-1, 0.3, 1}},
      {OpKind::Atan, [](double x) { return std::atan(x); }, {-5, 0.3}},
      {OpKind::Sinh, [](double x) { return std::sinh(x); }, {-2, 0.5}},
      {OpKind::Cosh, [](double x) { return std::cosh(x); }, {-2, 0.5}},
      {OpKind::Tanh, [](double x) { return std::tanh(x); }, {-30, 0.5}},
      {OpKind::Asinh, [](double x) { return std::asinh(x); }, {-2, 0.5}},
      {OpKind::Acosh, [](double x) { return std::acosh(x); }, {1, 3.5}},
      {OpKind::Atanh, [](double x) { return std::atanh(x); }, {-0.5, 0.9}},
      {OpKind::Erf, [](double x) { return std::erf(x); }, {-1, 0.2, 3}},
      {OpKind::Reciprocal, [](double x) { return 1 / x; }, {4, -0.5, 0}},
      {OpKind::Ceil, [](double x) { return std::ceil(x); }, {-1.5, 1.2, 3}},
      {OpKind::Floor, [](double x) { return std::floor(x); }, {-1.5, 1.2, 3}},
      {OpKind::Sigmoid, [](double x) { return 1 / (1 + std::exp(-x)); }, {-3, 0, 2, -800}},
      {OpKind::Softsign, [](double x) { return x / (1 + std::fabs(x)); }, {-3, 0, 2}},
      {OpKind::Softplus, [](double x) { return std::log(1 + std::exp(x)); }, {-3, 0, 2}},
      {OpKind::Mish, [](double x) { return x * std::tanh(std::log(1 + std::exp(x))); }, {-3, 0, 2}},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(std::string(opName(c.op)));
    int64_t n = int64_t(c.inputs.size());
    std::vector<double> expected;
    for (double x : c.inputs)
      expected.push_back(float(c.fn(float(x))));
    Tensor out = runOne(c.op, {f32({n}, c.inputs)}, typeOf(DType::Float32, {n}));
    expectTensor(out, DType::Float32, {n}, expected, 1e-6);
    // f64 computes in full double precision.
    Tensor out64 = runOne(c.op, {makeTensor(DType::Float64, {n}, c.inputs)},
                          typeOf(DType::Float64, {n}));
    std::vector<double> expected64;
    for (double x : c.inputs)
      expected64.push_back(c.fn(x));
    expectTensor(out64, DType::Float64, {n}, expected64, 1e-14);
  }
}

TEST(ReferenceElementwise, SoftplusAndSigmoidAreStableForLargeInputs) {
  expectTensor(runOne(OpKind::Softplus, {f32({2}, {100, -100})}, typeOf(DType::Float32, {2})),
               DType::Float32, {2}, {100, float(std::exp(-100.0))}, 1e-6);
  expectTensor(runOne(OpKind::Sigmoid, {f32({2}, {1000, -1000})}, typeOf(DType::Float32, {2})),
               DType::Float32, {2}, {1, 0});
}

TEST(ReferenceElementwise, RoundIsHalfToEven) {
  expectTensor(runOne(OpKind::Round, {f32({8}, {0.5, 1.5, 2.5, -0.5, -1.5, 2.4, -2.6, kNaN})},
                      typeOf(DType::Float32, {8})),
               DType::Float32, {8}, {0, 2, 2, -0.0, -2, 2, -3, kNaN});
}

TEST(ReferenceElementwise, SignAbsNegReluOnIntegersAndFloats) {
  expectTensor(runOne(OpKind::Sign, {f32({4}, {-3, 0, 0.1, kNaN})}, typeOf(DType::Float32, {4})),
               DType::Float32, {4}, {-1, 0, 1, kNaN});
  expectInts(runOne(OpKind::Sign, {makeInts(DType::Int8, {3}, {-7, 0, 9})},
                    typeOf(DType::Int8, {3})),
             DType::Int8, {3}, {-1, 0, 1});
  expectInts(runOne(OpKind::Sign, {makeInts(DType::Uint8, {2}, {0, 200})}, typeOf(DType::Uint8, {2})),
             DType::Uint8, {2}, {0, 1});
  // abs and neg of the most negative integer wrap.
  expectInts(runOne(OpKind::Abs, {makeInts(DType::Int8, {3}, {-128, -5, 7})},
                    typeOf(DType::Int8, {3})),
             DType::Int8, {3}, {-128, 5, 7});
  int64_t minimum = std::numeric_limits<int64_t>::min();
  expectInts(runOne(OpKind::Neg, {i64({3}, {minimum, -5, 9007199254740993})},
                    typeOf(DType::Int64, {3})),
             DType::Int64, {3}, {minimum, 5, -9007199254740993});
  expectInts(runOne(OpKind::Relu, {makeInts(DType::Int32, {3}, {-4, 0, 4})}, typeOf(DType::Int32, {3})),
             DType::Int32, {3}, {0, 0, 4});
  expectTensor(runOne(OpKind::Relu, {f32({3}, {-4, kNaN, 4})}, typeOf(DType::Float32, {3})),
               DType::Float32, {3}, {0, kNaN, 4});
  EXPECT_USER_ERROR(runOne(OpKind::Exp, {i64({1}, {1})}, typeOf(DType::Int64, {1})),
                    "element type i64 is not supported");
}

TEST(ReferenceElementwise, IsNaNIsInfAndLogicalNot) {
  Tensor x = f32({4}, {kNaN, kInf, -kInf, 1});
  expectInts(runOne(OpKind::IsNaN, {x}, typeOf(DType::Bool, {4})), DType::Bool, {4}, {1, 0, 0, 0});
  expectInts(runOne(OpKind::IsInf, {x}, typeOf(DType::Bool, {4})), DType::Bool, {4}, {0, 1, 1, 0});
  expectInts(runOne(OpKind::IsInf, {x}, typeOf(DType::Bool, {4}), {{"detect_negative", int64_t(0)}}),
             DType::Bool, {4}, {0, 1, 0, 0});
  expectInts(runOne(OpKind::IsInf, {x}, typeOf(DType::Bool, {4}), {{"detect_positive", int64_t(0)}}),
             DType::Bool, {4}, {0, 0, 1, 0});
  expectInts(runOne(OpKind::Not, {makeInts(DType::Bool, {2}, {0, 1})}, typeOf(DType::Bool, {2})),
             DType::Bool, {2}, {1, 0});
  expectInts(runOne(OpKind::BitwiseNot, {makeInts(DType::Uint8, {2}, {0, 0x0f})},
                    typeOf(DType::Uint8, {2})),
             DType::Uint8, {2}, {255, 0xf0});
  expectInts(runOne(OpKind::BitwiseNot, {makeInts(DType::Int32, {2}, {0, 5})},
                    typeOf(DType::Int32, {2})),
             DType::Int32, {2}, {-1, -6});
}

TEST(ReferenceElementwise, Float16ComputesInFloatAndRoundsOnStore) {
  // 1 + 2^-11 is halfway between two halves: it rounds to the even one, 1.
  Tensor a = makeTensor(DType::Float16, {2}, {1, 1});
  Tensor b = makeTensor(DType::Float16, {2}, {std::ldexp(1.0, -11), 3 * std::ldexp(1.0, -11)});
  expectTensor(runOne(OpKind::Add, {a, b}, typeOf(DType::Float16, {2})), DType::Float16, {2},
               {1, 1 + std::ldexp(1.0, -9)});
  Tensor bf = makeTensor(DType::BFloat16, {1}, {2});
  expectTensor(runOne(OpKind::Sqrt, {bf}, typeOf(DType::BFloat16, {1})), DType::BFloat16, {1},
               {1.4140625}); // sqrt(2) = 1.41421..., nearest bf16 is 181/128
}

// ---- Activations ----------------------------------------------------------------------------

TEST(ReferenceElementwise, ParameterisedActivations) {
  Tensor x = f32({4}, {-2, -0.5, 0.5, 3});
  auto run = [&](OpKind op, const Attributes &attributes = {}) {
    return runOne(op, {x}, typeOf(DType::Float32, {4}), attributes);
  };
  auto f = [](double v) { return double(float(v)); };
  expectTensor(run(OpKind::LeakyRelu, {{"alpha", 0.1f}}), DType::Float32, {4},
               {-0.2, -0.05, 0.5, 3}, 1e-7);
  expectTensor(run(OpKind::LeakyRelu), DType::Float32, {4}, {-0.02, -0.005, 0.5, 3}, 1e-7);
  expectTensor(run(OpKind::Elu, {{"alpha", 2.0f}}), DType::Float32, {4},
               {2 * (std::exp(-2) - 1), 2 * (std::exp(-0.5) - 1), 0.5, 3}, 1e-7);
  expectTensor(run(OpKind::Celu, {{"alpha", 2.0f}}), DType::Float32, {4},
               {2 * (std::exp(-1) - 1), 2 * (std::exp(-0.25) - 1), 0.5, 3}, 1e-7);
  double alpha = 1.67326319217681884765625, gamma = 1.05070102214813232421875;
  expectTensor(run(OpKind::Selu), DType::Float32, {4},
               {gamma * alpha * (std::exp(-2) - 1), gamma * alpha * (std::exp(-0.5) - 1),
                gamma * 0.5, gamma * 3},
               1e-6);
  expectTensor(run(OpKind::HardSigmoid), DType::Float32, {4}, {0.1, 0.4, 0.6, 1}, 1e-7);
  expectTensor(run(OpKind::HardSigmoid, {{"alpha", 0.5f}, {"beta", 0.25f}}), DType::Float32, {4},
               {0, 0, 0.5, 1});
  expectTensor(run(OpKind::HardSwish), DType::Float32, {4},
               {-2 * (1 / 6.0), -0.5 * (5 / 12.0), 0.5 * (7 / 12.0), 3}, 1e-7);
  expectTensor(run(OpKind::ThresholdedRelu, {{"alpha", 0.5f}}), DType::Float32, {4}, {0, 0, 0, 3});
  expectTensor(run(OpKind::ThresholdedRelu), DType::Float32, {4}, {0, 0, 0, 3});
  expectTensor(run(OpKind::Shrink, {{"lambd", 1.0f}, {"bias", 0.5f}}), DType::Float32, {4},
               {-1.5, 0, 0, 2.5});
  // Gelu: exact, and the tanh approximation.
  std::vector<double> exact, approximate;
  for (double v : {-2.0, -0.5, 0.5, 3.0}) {
    exact.push_back(f(0.5 * v * (1 + std::erf(v / std::sqrt(2.0)))));
    approximate.push_back(
        f(0.5 * v * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (v + 0.044715 * v * v * v)))));
  }
  expectTensor(run(OpKind::Gelu), DType::Float32, {4}, exact, 1e-6);
  expectTensor(run(OpKind::Gelu, {{"approximate", std::string("tanh")}}), DType::Float32, {4},
               approximate, 1e-6);
  EXPECT_USER_ERROR(run(OpKind::Gelu, {{"approximate", std::string("fast")}}), "approximate");
}

TEST(ReferenceElementwise, ShrinkOnIntegers) {
  expectInts(runOne(OpKind::Shrink, {makeInts(DType::Int8, {5}, {-10, -2, 0, 2, 10})},
                    typeOf(DType::Int8, {5}), {{"lambd", 2.0f}, {"bias", 3.0f}}),
             DType::Int8, {5}, {-7, 0, 0, 0, 7});
}

TEST(ReferenceElementwise, ClipWithOptionalBounds) {
  Tensor x = f32({5}, {-3, -1, 0, 2, kNaN});
  Tensor low = f32({}, {-1.5});
  Tensor high = f32({}, {1});
  auto type = typeOf(DType::Float32, {5});
  expectTensor(runOne(OpKind::Clip, {x, low, high}, type), DType::Float32, {5},
               {-1.5, -1, 0, 1, kNaN});
  expectTensor(runOne(OpKind::Clip, {x, low}, type), DType::Float32, {5}, {-1.5, -1, 0, 2, kNaN});
  expectTensor(runOne(OpKind::Clip, {x, std::nullopt, high}, type), DType::Float32, {5},
               {-3, -1, 0, 1, kNaN});
  expectTensor(runOne(OpKind::Clip, {x}, type), DType::Float32, {5}, {-3, -1, 0, 2, kNaN});
  // min > max: everything becomes max.
  expectTensor(runOne(OpKind::Clip, {f32({3}, {-5, 0, 5}), f32({}, {2}), f32({}, {1})},
                      typeOf(DType::Float32, {3})),
               DType::Float32, {3}, {1, 1, 1});
  expectInts(runOne(OpKind::Clip,
                    {i64({3}, {-9000000000, 5, 9000000000}), i64({}, {0}), i64({}, {8000000000})},
                    typeOf(DType::Int64, {3})),
             DType::Int64, {3}, {0, 5, 8000000000});
  EXPECT_USER_ERROR(runOne(OpKind::Clip, {x, f32({2}, {0, 1})}, type), "scalar");
}

// ---- Binary ops -----------------------------------------------------------------------------

TEST(ReferenceElementwise, BinaryOpsBroadcastLikeNumpy) {
  Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expectTensor(runOne(OpKind::Add, {a, f32({3}, {10, 20, 30})}, typeOf(DType::Float32, {2, 3})),
               DType::Float32, {2, 3}, {11, 22, 33, 14, 25, 36});
  expectTensor(runOne(OpKind::Sub, {f32({2, 1}, {1, 2}), f32({1, 3}, {1, 2, 3})},
                      typeOf(DType::Float32, {2, 3})),
               DType::Float32, {2, 3}, {0, -1, -2, 1, 0, -1});
  expectTensor(runOne(OpKind::Mul, {a, f32({}, {2})}, typeOf(DType::Float32, {2, 3})),
               DType::Float32, {2, 3}, {2, 4, 6, 8, 10, 12});
  expectTensor(runOne(OpKind::Div, {f32({3}, {1, -1, 0}), f32({}, {0})}, typeOf(DType::Float32, {3})),
               DType::Float32, {3}, {kInf, -kInf, kNaN});
  // Rank 0 and empty tensors.
  expectTensor(runOne(OpKind::Add, {f32({}, {1.5}), f32({}, {2})}, typeOf(DType::Float32, {})),
               DType::Float32, {}, {3.5});
  expectTensor(runOne(OpKind::Add, {f32({0, 3}, {}), f32({3}, {1, 2, 3})},
                      typeOf(DType::Float32, {0, 3})),
               DType::Float32, {0, 3}, {});
  EXPECT_USER_ERROR(runOne(OpKind::Add, {f32({2}, {1, 2}), f32({3}, {1, 2, 3})},
                           typeOf(DType::Float32, {3})),
                    "do not broadcast");
  EXPECT_USER_ERROR(runOne(OpKind::Add, {f32({1}, {1}), i64({1}, {1})}, typeOf(DType::Float32, {1})),
                    "same element type");
}

TEST(ReferenceElementwise, IntegerArithmeticIsExactAndWraps) {
  // 2^53 + 1 is not a double: an int64 Add through double would lose the 1.
  int64_t big = (int64_t(1) << 53) + 1;
  expectInts(runOne(OpKind::Add, {i64({2}, {big, INT64_MAX}), i64({2}, {2, 1})},
                    typeOf(DType::Int64, {2})),
             DType::Int64, {2}, {big + 2, INT64_MIN});
  expectInts(runOne(OpKind::Mul, {i64({1}, {big}), i64({1}, {3})}, typeOf(DType::Int64, {1})),
             DType::Int64, {1}, {3 * big});
  expectInts(runOne(OpKind::Sub, {makeInts(DType::Uint8, {1}, {3}), makeInts(DType::Uint8, {1}, {5})},
                    typeOf(DType::Uint8, {1})),
             DType::Uint8, {1}, {254});
  expectInts(runOne(OpKind::Mul, {makeInts(DType::Int32, {1}, {65536}), makeInts(DType::Int32, {1}, {65536})},
                    typeOf(DType::Int32, {1})),
             DType::Int32, {1}, {0});
  // Uint64 beyond int64's range.
  Tensor u = Tensor(DType::Uint64, {1});
  u.data<uint64_t>()[0] = 18000000000000000000ull;
  Tensor one = Tensor(DType::Uint64, {1});
  one.data<uint64_t>()[0] = 1;
  Tensor sum = runOne(OpKind::Add, {u, one}, typeOf(DType::Uint64, {1}));
  EXPECT_EQ(sum.data<uint64_t>()[0], 18000000000000000001ull);
}

TEST(ReferenceElementwise, IntegerDivisionTruncatesTowardZero) {
  Tensor a = i64({5}, {7, -7, 7, -7, INT64_MIN});
  Tensor b = i64({5}, {2, 2, -2, -2, -1});
  expectInts(runOne(OpKind::Div, {a, b}, typeOf(DType::Int64, {5})), DType::Int64, {5},
             {3, -3, -3, 3, INT64_MIN});
  expectInts(runOne(OpKind::Div, {makeInts(DType::Uint32, {1}, {4000000000}), makeInts(DType::Uint32, {1}, {3})},
                    typeOf(DType::Uint32, {1})),
             DType::Uint32, {1}, {1333333333});
  EXPECT_USER_ERROR(runOne(OpKind::Div, {i64({2}, {1, 2}), i64({2}, {1, 0})},
                           typeOf(DType::Int64, {2})),
                    "division by zero");
}

TEST(ReferenceElementwise, ModFollowsTheDivisorOrTheDividend) {
  Tensor a = makeInts(DType::Int32, {4}, {5, -5, 5, -5});
  Tensor b = makeInts(DType::Int32, {4}, {3, 3, -3, -3});
  auto type = typeOf(DType::Int32, {4});
  expectInts(runOne(OpKind::Mod, {a, b}, type), DType::Int32, {4}, {2, 1, -1, -2});
  expectInts(runOne(OpKind::Mod, {a, b}, type, {{"fmod", int64_t(1)}}), DType::Int32, {4},
             {2, -2, 2, -2});
  Tensor x = f32({4}, {5.5, -5.5, 5.5, -5.5});
  Tensor y = f32({4}, {2, 2, -2, -2});
  auto ftype = typeOf(DType::Float32, {4});
  expectTensor(runOne(OpKind::Mod, {x, y}, ftype, {{"fmod", int64_t(1)}}), DType::Float32, {4},
               {1.5, -1.5, 1.5, -1.5});
  expectTensor(runOne(OpKind::Mod, {x, y}, ftype), DType::Float32, {4}, {1.5, 0.5, -0.5, -1.5});
  EXPECT_USER_ERROR(runOne(OpKind::Mod, {a, makeInts(DType::Int32, {}, {0})}, type),
                    "division by zero");
}

TEST(ReferenceElementwise, PowWithMixedTypes) {
  expectInts(runOne(OpKind::Pow, {i64({4}, {3, 2, -2, 1}), i64({4}, {4, 62, 3, -5})},
                    typeOf(DType::Int64, {4})),
             DType::Int64, {4}, {81, int64_t(1) << 62, -8, 1});
  expectTensor(runOne(OpKind::Pow, {f32({3}, {2, 4, -8}), f32({3}, {0.5, -1, 3})},
                      typeOf(DType::Float32, {3})),
               DType::Float32, {3}, {float(std::sqrt(2.0)), 0.25, -512}, 1e-7);
  // The result takes the base's type.
  expectTensor(runOne(OpKind::Pow, {f32({2}, {3, 2}), i64({1}, {2})}, typeOf(DType::Float32, {2})),
               DType::Float32, {2}, {9, 4});
  expectInts(runOne(OpKind::Pow, {makeInts(DType::Int32, {1}, {9}), f32({1}, {0.5})},
                    typeOf(DType::Int32, {1})),
             DType::Int32, {1}, {3});
}

TEST(ReferenceElementwise, BitShiftAndBitwiseOps) {
  Tensor a = makeInts(DType::Uint8, {4}, {1, 255, 16, 3});
  Tensor b = makeInts(DType::Uint8, {4}, {7, 4, 1, 8});
  auto type = typeOf(DType::Uint8, {4});
  expectInts(runOne(OpKind::BitShift, {a, b}, type, {{"direction", std::string("LEFT")}}),
             DType::Uint8, {4}, {128, 240, 32, 0});
  expectInts(runOne(OpKind::BitShift, {a, b}, type, {{"direction", std::string("RIGHT")}}),
             DType::Uint8, {4}, {0, 15, 8, 0});
  EXPECT_USER_ERROR(runOne(OpKind::BitShift, {a, b}, type, {{"direction", std::string("UP")}}),
                    "direction");
  // Signed shifts (as opset 28 defines them): arithmetic right shift; out-of-range amounts leave
  // only the sign fill.
  Tensor s = makeInts(DType::Int8, {4}, {-8, 64, -1, 5});
  Tensor amount = makeInts(DType::Int8, {4}, {1, 1, 9, -1});
  expectInts(runOne(OpKind::BitShift, {s, amount}, typeOf(DType::Int8, {4}),
                    {{"direction", std::string("RIGHT")}}),
             DType::Int8, {4}, {-4, 32, -1, 0});
  expectInts(runOne(OpKind::BitShift, {s, amount}, typeOf(DType::Int8, {4}),
                    {{"direction", std::string("LEFT")}}),
             DType::Int8, {4}, {-16, -128, 0, 0});
  Tensor x = makeInts(DType::Int16, {2}, {0b1100, -1});
  Tensor y = makeInts(DType::Int16, {2}, {0b1010, 0x00ff});
  auto type16 = typeOf(DType::Int16, {2});
  expectInts(runOne(OpKind::BitwiseAnd, {x, y}, type16), DType::Int16, {2}, {0b1000, 0x00ff});
  expectInts(runOne(OpKind::BitwiseOr, {x, y}, type16), DType::Int16, {2}, {0b1110, -1});
  expectInts(runOne(OpKind::BitwiseXor, {x, y}, type16), DType::Int16, {2}, {0b0110, -256});
}

TEST(ReferenceElementwise, LogicAndComparisons) {
  Tensor p = makeInts(DType::Bool, {4}, {0, 0, 1, 1});
  Tensor q = makeInts(DType::Bool, {4}, {0, 1, 0, 1});
  auto type = typeOf(DType::Bool, {4});
  expectInts(runOne(OpKind::And, {p, q}, type), DType::Bool, {4}, {0, 0, 0, 1});
  expectInts(runOne(OpKind::Or, {p, q}, type), DType::Bool, {4}, {0, 1, 1, 1});
  expectInts(runOne(OpKind::Xor, {p, q}, type), DType::Bool, {4}, {0, 1, 1, 0});
  expectInts(runOne(OpKind::Equal, {p, q}, type), DType::Bool, {4}, {1, 0, 0, 1});
  EXPECT_USER_ERROR(runOne(OpKind::And, {f32({1}, {1}), f32({1}, {1})}, typeOf(DType::Bool, {1})),
                    "not supported");

  Tensor x = f32({4}, {1, 2, kNaN, 3});
  Tensor y = f32({4}, {2, 2, kNaN, 1});
  expectInts(runOne(OpKind::Equal, {x, y}, type), DType::Bool, {4}, {0, 1, 0, 0});
  expectInts(runOne(OpKind::Greater, {x, y}, type), DType::Bool, {4}, {0, 0, 0, 1});
  expectInts(runOne(OpKind::GreaterOrEqual, {x, y}, type), DType::Bool, {4}, {0, 1, 0, 1});
  expectInts(runOne(OpKind::Less, {x, y}, type), DType::Bool, {4}, {1, 0, 0, 0});
  expectInts(runOne(OpKind::LessOrEqual, {x, y}, type), DType::Bool, {4}, {1, 1, 0, 0});
  // Integers compare exactly, even past 2^53.
  int64_t big = (int64_t(1) << 53) + 1;
  expectInts(runOne(OpKind::Greater, {i64({1}, {big}), i64({}, {big - 1})}, typeOf(DType::Bool, {1})),
             DType::Bool, {1}, {1});
}

TEST(ReferenceElementwise, PReluBroadcastsTheSlopeToTheInput) {
  Tensor x = f32({2, 3}, {-1, 2, -3, 4, -5, 6});
  expectTensor(runOne(OpKind::PRelu, {x, f32({3}, {0.5, 1, 2})}, typeOf(DType::Float32, {2, 3})),
               DType::Float32, {2, 3}, {-0.5, 2, -6, 4, -5, 6});
  expectTensor(runOne(OpKind::PRelu, {x, f32({}, {0.25})}, typeOf(DType::Float32, {2, 3})),
               DType::Float32, {2, 3}, {-0.25, 2, -0.75, 4, -1.25, 6});
  // The slope may not widen the input.
  EXPECT_USER_ERROR(runOne(OpKind::PRelu, {f32({3}, {1, 2, 3}), f32({2, 3}, {1, 1, 1, 1, 1, 1})},
                           typeOf(DType::Float32, {2, 3})),
                    "does not broadcast");
}

TEST(ReferenceElementwise, VariadicMaxMinSumMean) {
  Tensor a = f32({2, 2}, {1, 5, kNaN, 0});
  Tensor b = f32({2}, {3, 2});
  Tensor c = f32({}, {4});
  auto type = typeOf(DType::Float32, {2, 2});
  expectTensor(runOne(OpKind::Max, {a, b, c}, type), DType::Float32, {2, 2}, {4, 5, kNaN, 4});
  expectTensor(runOne(OpKind::Min, {a, b, c}, type), DType::Float32, {2, 2}, {1, 2, kNaN, 0});
  expectTensor(runOne(OpKind::Sum, {a, b, c}, type), DType::Float32, {2, 2}, {8, 11, kNaN, 6});
  expectTensor(runOne(OpKind::Mean, {a, b, c}, type), DType::Float32, {2, 2},
               {8 / 3.0, 11 / 3.0, kNaN, 2}, 1e-7);
  expectTensor(runOne(OpKind::Max, {b}, typeOf(DType::Float32, {2})), DType::Float32, {2}, {3, 2});
  expectInts(runOne(OpKind::Max, {i64({2}, {INT64_MAX, -1}), i64({2}, {INT64_MAX - 1, -2})},
                    typeOf(DType::Int64, {2})),
             DType::Int64, {2}, {INT64_MAX, -1});
}

TEST(ReferenceElementwise, WhereBroadcastsAllThree) {
  Tensor condition = makeInts(DType::Bool, {2, 1}, {1, 0});
  Tensor x = i64({3}, {1, 2, 3});
  Tensor y = i64({}, {-1});
  expectInts(runOne(OpKind::Where, {condition, x, y}, typeOf(DType::Int64, {2, 3})), DType::Int64,
             {2, 3}, {1, 2, 3, -1, -1, -1});
  EXPECT_USER_ERROR(runOne(OpKind::Where, {x, x, y}, typeOf(DType::Int64, {3})), "must be bool");
}

TEST(ReferenceElementwise, TriluKeepsATriangle) {
  Tensor x = f32({3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  auto type = typeOf(DType::Float32, {3, 4});
  expectTensor(runOne(OpKind::Trilu, {x}, type), DType::Float32, {3, 4},
               {1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12});
  expectTensor(runOne(OpKind::Trilu, {x, i64({}, {1})}, type), DType::Float32, {3, 4},
               {0, 2, 3, 4, 0, 0, 7, 8, 0, 0, 0, 12});
  expectTensor(runOne(OpKind::Trilu, {x, i64({}, {-1})}, type, {{"upper", int64_t(0)}}),
               DType::Float32, {3, 4}, {0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0});
  // Batched, applied to each matrix in the last two dims.
  Tensor batch = makeInts(DType::Int32, {2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  expectInts(runOne(OpKind::Trilu, {batch}, typeOf(DType::Int32, {2, 2, 2}), {{"upper", int64_t(0)}}),
             DType::Int32, {2, 2, 2}, {1, 0, 3, 4, 5, 0, 7, 8});
  EXPECT_USER_ERROR(runOne(OpKind::Trilu, {f32({2}, {1, 2})}, typeOf(DType::Float32, {2})),
                    "rank 2");
}

// ---- Cast -----------------------------------------------------------------------------------

namespace {
Tensor castTo(const Tensor &x, DType to) {
  return runOne(OpKind::Cast, {x}, typeOf(to, x.dims()), {{"to", int64_t(dtypeToOnnx(to))}});
}
} // namespace

TEST(ReferenceCast, FloatToIntegerTruncatesAndSaturates) {
  Tensor x = f32({6}, {1.9, -1.9, 3e10, -3e10, kNaN, kInf});
  expectInts(castTo(x, DType::Int32), DType::Int32, {6},
             {1, -1, INT32_MAX, INT32_MIN, 0, INT32_MAX});
  expectInts(castTo(f32({4}, {-1, 300, 254.9, -0.5}), DType::Uint8), DType::Uint8, {4},
             {0, 255, 254, 0});
  expectInts(castTo(makeTensor(DType::Float64, {2}, {1e300, -1e300}), DType::Int64), DType::Int64,
             {2}, {INT64_MAX, INT64_MIN});
}

TEST(ReferenceCast, BoolConversions) {
  expectInts(castTo(f32({4}, {0, -0.0, 0.5, kNaN}), DType::Bool), DType::Bool, {4}, {0, 0, 1, 1});
  expectInts(castTo(i64({3}, {0, -7, 256}), DType::Bool), DType::Bool, {3}, {0, 1, 1});
  expectTensor(castTo(makeInts(DType::Bool, {2}, {1, 0}), DType::Float16), DType::Float16, {2},
               {1, 0});
  expectInts(castTo(makeInts(DType::Bool, {2}, {1, 0}), DType::Int64), DType::Int64, {2}, {1, 0});
}

TEST(ReferenceCast, IntegerToIntegerWraps) {
  expectInts(castTo(i64({3}, {300, -1, 127}), DType::Int8), DType::Int8, {3}, {44, -1, 127});
  expectInts(castTo(makeInts(DType::Int8, {1}, {-1}), DType::Uint16), DType::Uint16, {1}, {65535});
}

TEST(ReferenceCast, FloatsRoundToNearestEvenOnce) {
  double ulp = std::ldexp(1.0, -10); // of a half at 1
  // f32 -> f16: ties go to even.
  expectTensor(castTo(f32({3}, {1 + ulp / 2, 1 + 3 * ulp / 2, 70000}), DType::Float16),
               DType::Float16, {3}, {1, 1 + 2 * ulp, kInf});
  // f64 -> f16 just above a tie: rounds up. (Going through float would lose the excess and
  // round the tie down to even.)
  expectTensor(castTo(makeTensor(DType::Float64, {1}, {1 + ulp / 2 + std::ldexp(1.0, -40)}),
                      DType::Float16),
               DType::Float16, {1}, {1 + ulp});
  // bf16 has 7 mantissa bits.
  expectTensor(castTo(f32({2}, {1 + std::ldexp(1.0, -8), 1 + 3 * std::ldexp(1.0, -8)}),
                      DType::BFloat16),
               DType::BFloat16, {2}, {1, 1 + std::ldexp(1.0, -6)});
  // int64 -> f32 rounds once: 2^60 + 2^36 + 1 is just above the tie between 2^60 and 2^60 + 2^37.
  int64_t value = (int64_t(1) << 60) + (int64_t(1) << 36) + 1;
  expectTensor(castTo(i64({1}, {value}), DType::Float32), DType::Float32, {1},
               {std::ldexp(1.0, 60) + std::ldexp(1.0, 37)});
  // f16 -> f32 is exact.
  expectTensor(castTo(makeTensor(DType::Float16, {2}, {65504, -std::ldexp(1.0, -24)}), DType::Float32),
               DType::Float32, {2}, {65504, -std::ldexp(1.0, -24)});
}

TEST(ReferenceCast, CastLikeTakesTheTargetsType) {
  expectInts(runOne(OpKind::CastLike, {f32({2}, {2.7, -2.7}), makeInts(DType::Int16, {0}, {})},
                    typeOf(DType::Int16, {2})),
             DType::Int16, {2}, {2, -2});
  EXPECT_USER_ERROR(runOne(OpKind::Cast, {f32({1}, {1})}, typeOf(DType::Float32, {1}),
                           {{"to", int64_t(8)}}),
                    "cannot cast");
}
