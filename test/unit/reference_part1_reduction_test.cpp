// Reference evaluator, part 1: reductions, ArgMax/ArgMin, the Softmax family, CumSum and TopK,
// checked against values worked out by hand from the ONNX spec.
#include "reference_test_util.h"

#include <cmath>
#include <limits>

using namespace sinter;
using namespace sinter::testing;

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// [[1, 2, 3], [4, 5, 6]]
Tensor matrix() { return f32({2, 3}, {1, 2, 3, 4, 5, 6}); }

Tensor reduce(OpKind op, const Tensor &x, std::optional<Tensor> axes, TensorType type,
              const Attributes &attributes = {}) {
  return runOne(op, {x, axes}, std::move(type), attributes);
}
} // namespace

TEST(ReferenceReduce, AxesKeepDimsAndNoop) {
  expectTensor(reduce(OpKind::ReduceSum, matrix(), i64({1}, {1}), typeOf(DType::Float32, {2, 1})),
               DType::Float32, {2, 1}, {6, 15});
  expectTensor(reduce(OpKind::ReduceSum, matrix(), i64({1}, {-2}), typeOf(DType::Float32, {3}),
                      {{"keepdims", int64_t(0)}}),
               DType::Float32, {3}, {5, 7, 9});
  // No axes: reduce everything; with noop_with_empty_axes: the input unchanged.
  expectTensor(reduce(OpKind::ReduceSum, matrix(), std::nullopt, typeOf(DType::Float32, {1, 1})),
               DType::Float32, {1, 1}, {21});
  expectTensor(reduce(OpKind::ReduceSum, matrix(), i64({0}, {}), typeOf(DType::Float32, {}),
                      {{"keepdims", int64_t(0)}}),
               DType::Float32, {}, {21});
  expectTensor(reduce(OpKind::ReduceSum, matrix(), i64({0}, {}), typeOf(DType::Float32, {2, 3}),
                      {{"noop_with_empty_axes", int64_t(1)}}),
               DType::Float32, {2, 3}, {1, 2, 3, 4, 5, 6});
  expectTensor(reduce(OpKind::ReduceSum, matrix(), i64({2}, {1, 0}), typeOf(DType::Float32, {1, 1})),
               DType::Float32, {1, 1}, {21});
  EXPECT_USER_ERROR(reduce(OpKind::ReduceSum, matrix(), i64({2}, {1, -1}),
                           typeOf(DType::Float32, {2, 1})),
                    "listed twice");
  EXPECT_USER_ERROR(reduce(OpKind::ReduceSum, matrix(), i64({1}, {2}), typeOf(DType::Float32, {2, 1})),
                    "out of range");
  // A rank-0 input reduces to itself.
  expectTensor(reduce(OpKind::ReduceMax, f32({}, {4}), std::nullopt, typeOf(DType::Float32, {})),
               DType::Float32, {}, {4});
}

TEST(ReferenceReduce, EveryReductionOverOneAxis) {
  Tensor x = f32({2, 3}, {1, -2, 3, 0.5, 4, -1});
  auto axes = i64({1}, {1});
  auto type = typeOf(DType::Float32, {2});
  Attributes flat = {{"keepdims", int64_t(0)}};
  auto run = [&](OpKind op) { return reduce(op, x, axes, type, flat); };
  expectTensor(run(OpKind::ReduceSum), DType::Float32, {2}, {2, 3.5});
  expectTensor(run(OpKind::ReduceMean), DType::Float32, {2}, {2 / 3.0, 3.5 / 3}, 1e-7);
  expectTensor(run(OpKind::ReduceMax), DType::Float32, {2}, {3, 4});
  expectTensor(run(OpKind::ReduceMin), DType::Float32, {2}, {-2, -1});
  expectTensor(run(OpKind::ReduceProd), DType::Float32, {2}, {-6, -2});
  expectTensor(run(OpKind::ReduceL1), DType::Float32, {2}, {6, 5.5});
  expectTensor(run(OpKind::ReduceL2), DType::Float32, {2}, {std::sqrt(14.0), std::sqrt(17.25)}, 1e-7);
  expectTensor(run(OpKind::ReduceSumSquare), DType::Float32, {2}, {14, 17.25});
  expectTensor(run(OpKind::ReduceLogSum), DType::Float32, {2}, {std::log(2.0), std::log(3.5)}, 1e-7);
  expectTensor(run(OpKind::ReduceLogSumExp), DType::Float32, {2},
               {std::log(std::exp(1.0) + std::exp(-2.0) + std::exp(3.0)),
                std::log(std::exp(0.5) + std::exp(4.0) + std::exp(-1.0))},
               1e-7);
}

TEST(ReferenceReduce, LogSumExpIsStableAndMaxPropagatesNaN) {
  expectTensor(reduce(OpKind::ReduceLogSumExp, f32({2}, {1000, 1000}), std::nullopt,
                      typeOf(DType::Float32, {1})),
               DType::Float32, {1}, {1000 + std::log(2.0)}, 1e-7);
  expectTensor(reduce(OpKind::ReduceMax, f32({3}, {1, kNaN, 3}), std::nullopt,
                      typeOf(DType::Float32, {1})),
               DType::Float32, {1}, {kNaN});
}

TEST(ReferenceReduce, EmptyGroupsGiveTheIdentity) {
  Tensor x = f32({2, 0}, {});
  auto axes = i64({1}, {1});
  auto type = typeOf(DType::Float32, {2, 1});
  expectTensor(reduce(OpKind::ReduceSum, x, axes, type), DType::Float32, {2, 1}, {0, 0});
  expectTensor(reduce(OpKind::ReduceProd, x, axes, type), DType::Float32, {2, 1}, {1, 1});
  expectTensor(reduce(OpKind::ReduceMax, x, axes, type), DType::Float32, {2, 1}, {-kInf, -kInf});
  expectTensor(reduce(OpKind::ReduceMin, x, axes, type), DType::Float32, {2, 1}, {kInf, kInf});
  expectTensor(reduce(OpKind::ReduceLogSumExp, x, axes, type), DType::Float32, {2, 1},
               {-kInf, -kInf});
  expectTensor(reduce(OpKind::ReduceMean, x, axes, type), DType::Float32, {2, 1}, {kNaN, kNaN});
  expectInts(reduce(OpKind::ReduceMax, makeInts(DType::Int32, {0}, {}), std::nullopt,
                    typeOf(DType::Int32, {1})),
             DType::Int32, {1}, {std::numeric_limits<int32_t>::min()});
  // Reducing the non-empty axis of an empty tensor gives an empty tensor.
  expectTensor(reduce(OpKind::ReduceSum, f32({0, 3}, {}), axes, typeOf(DType::Float32, {0, 1})),
               DType::Float32, {0, 1}, {});
}

TEST(ReferenceReduce, IntegersReduceExactly) {
  int64_t big = (int64_t(1) << 53) + 1;
  expectInts(reduce(OpKind::ReduceSum, i64({3}, {big, 1, 1}), std::nullopt, typeOf(DType::Int64, {1})),
             DType::Int64, {1}, {big + 2});
  expectInts(reduce(OpKind::ReduceMean, i64({2, 2}, {-7, 0, 7, 2}), i64({1}, {1}),
                    typeOf(DType::Int64, {2, 1})),
             DType::Int64, {2, 1}, {-3, 4}); // -3.5 and 4.5 truncate toward zero
  expectInts(reduce(OpKind::ReduceProd, makeInts(DType::Int8, {3}, {16, 16, 3}), std::nullopt,
                    typeOf(DType::Int8, {1})),
             DType::Int8, {1}, {0}); // 768 wraps to 0 in int8
  expectInts(reduce(OpKind::ReduceL1, makeInts(DType::Int32, {3}, {-5, 2, -1}), std::nullopt,
                    typeOf(DType::Int32, {1})),
             DType::Int32, {1}, {8});
  expectInts(reduce(OpKind::ReduceL2, makeInts(DType::Int32, {2}, {3, 4}), std::nullopt,
                    typeOf(DType::Int32, {1})),
             DType::Int32, {1}, {5});
  expectInts(reduce(OpKind::ReduceMax, makeInts(DType::Bool, {2, 2}, {0, 1, 0, 0}), i64({1}, {1}),
                    typeOf(DType::Bool, {2, 1})),
             DType::Bool, {2, 1}, {1, 0});
  expectInts(reduce(OpKind::ReduceMin, makeInts(DType::Bool, {2, 2}, {1, 1, 0, 1}), i64({1}, {1}),
                    typeOf(DType::Bool, {2, 1})),
             DType::Bool, {2, 1}, {1, 0});
}

TEST(ReferenceArgMax, FirstOrLastExtremeAlongAnAxis) {
  Tensor x = f32({2, 3}, {1, 3, 3, 2, 2, 0});
  expectInts(runOne(OpKind::ArgMax, {x}, typeOf(DType::Int64, {2, 1}), {{"axis", int64_t(1)}}),
             DType::Int64, {2, 1}, {1, 0});
  expectInts(runOne(OpKind::ArgMax, {x}, typeOf(DType::Int64, {2}),
                    {{"axis", int64_t(-1)}, {"keepdims", int64_t(0)}, {"select_last_index", int64_t(1)}}),
             DType::Int64, {2}, {2, 1});
  expectInts(runOne(OpKind::ArgMin, {x}, typeOf(DType::Int64, {1, 3})), DType::Int64, {1, 3},
             {0, 1, 1});
  expectInts(runOne(OpKind::ArgMin, {x}, typeOf(DType::Int64, {2}),
                    {{"axis", int64_t(1)}, {"keepdims", int64_t(0)}}),
             DType::Int64, {2}, {0, 2});
  // NaN is picked as the extreme (numpy.argmax).
  expectInts(runOne(OpKind::ArgMax, {f32({3}, {1, kNaN, 3})}, typeOf(DType::Int64, {1})),
             DType::Int64, {1}, {1});
  expectInts(runOne(OpKind::ArgMax, {i64({3}, {INT64_MAX - 1, INT64_MAX, INT64_MAX})},
                    typeOf(DType::Int64, {1})),
             DType::Int64, {1}, {1});
  EXPECT_USER_ERROR(runOne(OpKind::ArgMax, {f32({0}, {})}, typeOf(DType::Int64, {1})), "size 0");
}

TEST(ReferenceSoftmax, SoftmaxLogSoftmaxHardmax) {
  Tensor x = f32({2, 3}, {1, 2, 3, 1000, 1001, 1002});
  double sum = std::exp(-2.0) + std::exp(-1.0) + 1;
  std::vector<double> row = {std::exp(-2.0) / sum, std::exp(-1.0) / sum, 1 / sum};
  auto type = typeOf(DType::Float32, {2, 3});
  expectTensor(runOne(OpKind::Softmax, {x}, type), DType::Float32, {2, 3},
               {row[0], row[1], row[2], row[0], row[1], row[2]}, 1e-7);
  expectTensor(runOne(OpKind::LogSoftmax, {x}, type), DType::Float32, {2, 3},
               {-2 - std::log(sum), -1 - std::log(sum), -std::log(sum), -2 - std::log(sum),
                -1 - std::log(sum), -std::log(sum)},
               1e-6);
  // Along axis 0: each column's two entries.
  double p = 1 / (1 + std::exp(999.0));
  expectTensor(runOne(OpKind::Softmax, {x}, type, {{"axis", int64_t(0)}}), DType::Float32, {2, 3},
               {p, p, p, 1 - p, 1 - p, 1 - p}, 1e-7);
  expectTensor(runOne(OpKind::Hardmax, {f32({2, 3}, {1, 3, 3, 5, 2, 0})}, type), DType::Float32,
               {2, 3}, {0, 1, 0, 1, 0, 0});
  expectTensor(runOne(OpKind::Softmax, {makeTensor(DType::Float16, {2}, {0, 0})},
                      typeOf(DType::Float16, {2})),
               DType::Float16, {2}, {0.5, 0.5});
}

TEST(ReferenceCumSum, ExclusiveAndReverse) {
  Tensor x = f32({4}, {1, 2, 3, 4});
  Tensor axis = i64({}, {0});
  auto type = typeOf(DType::Float32, {4});
  expectTensor(runOne(OpKind::CumSum, {x, axis}, type), DType::Float32, {4}, {1, 3, 6, 10});
  expectTensor(runOne(OpKind::CumSum, {x, axis}, type, {{"exclusive", int64_t(1)}}),
               DType::Float32, {4}, {0, 1, 3, 6});
  expectTensor(runOne(OpKind::CumSum, {x, axis}, type, {{"reverse", int64_t(1)}}), DType::Float32,
               {4}, {10, 9, 7, 4});
  expectTensor(runOne(OpKind::CumSum, {x, axis}, type,
                      {{"reverse", int64_t(1)}, {"exclusive", int64_t(1)}}),
               DType::Float32, {4}, {9, 7, 4, 0});
  expectTensor(runOne(OpKind::CumSum, {matrix(), makeInts(DType::Int32, {1}, {-2})},
                      typeOf(DType::Float32, {2, 3})),
               DType::Float32, {2, 3}, {1, 2, 3, 5, 7, 9});
  int64_t big = (int64_t(1) << 53) + 1;
  expectInts(runOne(OpKind::CumSum, {i64({2}, {big, 1}), axis}, typeOf(DType::Int64, {2})),
             DType::Int64, {2}, {big, big + 1});
}

TEST(ReferenceTopK, LargestSmallestAndTies) {
  Tensor x = f32({2, 5}, {3, 1, 4, 1, 5, 9, 2, 6, 5, 3});
  Tensor k = i64({1}, {3});
  std::vector<TensorType> types = {typeOf(DType::Float32, {2, 3}), typeOf(DType::Int64, {2, 3})};
  auto largest = runNode(OpKind::TopK, {x, k}, types);
  expectTensor(largest[0], DType::Float32, {2, 3}, {5, 4, 3, 9, 6, 5});
  expectInts(largest[1], DType::Int64, {2, 3}, {4, 2, 0, 0, 2, 3});
  auto smallest = runNode(OpKind::TopK, {x, k}, types, {{"largest", int64_t(0)}});
  expectTensor(smallest[0], DType::Float32, {2, 3}, {1, 1, 3, 2, 3, 5});
  expectInts(smallest[1], DType::Int64, {2, 3}, {1, 3, 0, 1, 4, 3}); // ties: lower index first
  // Along axis 0, and NaN ranks above every number.
  auto column = runNode(OpKind::TopK, {f32({3, 1}, {1, kNaN, 2}), i64({1}, {2})},
                        {typeOf(DType::Float32, {2, 1}), typeOf(DType::Int64, {2, 1})},
                        {{"axis", int64_t(0)}});
  expectTensor(column[0], DType::Float32, {2, 1}, {kNaN, 2});
  expectInts(column[1], DType::Int64, {2, 1}, {1, 2});
  EXPECT_USER_ERROR(runNode(OpKind::TopK, {x, i64({1}, {6})}, types), "K is 6");
}
