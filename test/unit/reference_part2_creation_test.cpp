// Reference evaluator, part 2: tensor creation and description (Identity, Shape, Size,
// ConstantOfShape, Range, EyeLike, OneHot, NonZero, Dropout). Expected values are from the ONNX
// spec and worked out by hand.
#include "reference_test_util.h"

#include <cmath>
#include <cstdint>
#include <limits>

using namespace sinter;
using namespace sinter::testing;

TEST(ReferenceIdentity, CopiesEveryDTypeExactly) {
  int64_t big = (int64_t(1) << 62) + 3;
  expectInts(runOne(OpKind::Identity, {i64({2}, {big, -big})}, typeOf(DType::Int64, {2})),
             DType::Int64, {2}, {big, -big});
  // A NaN payload survives (bytes are copied, not converted).
  Tensor nan(DType::Float32, {});
  nan.data<uint32_t>()[0] = 0x7fc01234u;
  Tensor copy = runOne(OpKind::Identity, {nan}, typeOf(DType::Float32, {}));
  EXPECT_EQ(copy.data<uint32_t>()[0], 0x7fc01234u);
}

TEST(ReferenceShape, StartAndEndClamp) {
  Tensor x = f32({2, 3, 4, 5}, std::vector<double>(120, 0));
  expectInts(runOne(OpKind::Shape, {x}, typeOf(DType::Int64, {4})), DType::Int64, {4},
             {2, 3, 4, 5});
  expectInts(runOne(OpKind::Shape, {x}, typeOf(DType::Int64, {2}),
                    {{"start", int64_t(1)}, {"end", int64_t(-1)}}),
             DType::Int64, {2}, {3, 4});
  expectInts(runOne(OpKind::Shape, {x}, typeOf(DType::Int64, {1}),
                    {{"start", int64_t(-1)}, {"end", int64_t(100)}}),
             DType::Int64, {1}, {5});
  expectInts(runOne(OpKind::Shape, {x}, typeOf(DType::Int64, {0}),
                    {{"start", int64_t(3)}, {"end", int64_t(1)}}),
             DType::Int64, {0}, {});
  expectInts(runOne(OpKind::Shape, {f32({}, {1})}, typeOf(DType::Int64, {0})), DType::Int64, {0},
             {});
}

TEST(ReferenceSize, CountsElements) {
  expectInts(
      runOne(OpKind::Size, {f32({2, 3}, std::vector<double>(6, 0))}, typeOf(DType::Int64, {})),
      DType::Int64, {}, {6});
  expectInts(runOne(OpKind::Size, {f32({}, {1})}, typeOf(DType::Int64, {})), DType::Int64, {}, {1});
  expectInts(runOne(OpKind::Size, {f32({4, 0}, {})}, typeOf(DType::Int64, {})), DType::Int64, {},
             {0});
}

TEST(ReferenceConstantOfShape, DefaultAndGivenValues) {
  expectTensor(runOne(OpKind::ConstantOfShape, {i64({2}, {2, 3})}, typeOf(DType::Float32, {2, 3})),
               DType::Float32, {2, 3}, {0, 0, 0, 0, 0, 0});
  int64_t big = (int64_t(1) << 60) + 1;
  auto value = std::make_shared<const Tensor>(i64({1}, {big}));
  expectInts(runOne(OpKind::ConstantOfShape, {i64({1}, {3})}, typeOf(DType::Int64, {3}),
                    {{"value", value}}),
             DType::Int64, {3}, {big, big, big});
  // An empty shape gives a scalar; a zero dim an empty tensor.
  expectInts(
      runOne(OpKind::ConstantOfShape, {i64({0}, {})}, typeOf(DType::Int64, {}), {{"value", value}}),
      DType::Int64, {}, {big});
  expectTensor(runOne(OpKind::ConstantOfShape, {i64({2}, {0, 4})}, typeOf(DType::Float32, {0, 4})),
               DType::Float32, {0, 4}, {});
  EXPECT_USER_ERROR(runOne(OpKind::ConstantOfShape, {i64({1}, {-1})}, typeOf(DType::Float32, {0})),
                    "negative");
}

TEST(ReferenceRange, IntegersFloatsAndEmptyRanges) {
  // Spec examples: Range(3, 9, 3) = [3, 6]; Range(10, 4, -2) = [10, 8, 6].
  expectInts(
      runOne(OpKind::Range, {i64({}, {3}), i64({}, {9}), i64({}, {3})}, typeOf(DType::Int64, {2})),
      DType::Int64, {2}, {3, 6});
  expectInts(runOne(OpKind::Range,
                    {makeInts(DType::Int32, {}, {10}), makeInts(DType::Int32, {}, {4}),
                     makeInts(DType::Int32, {}, {-2})},
                    typeOf(DType::Int32, {3})),
             DType::Int32, {3}, {10, 8, 6});
  expectTensor(runOne(OpKind::Range, {f32({}, {1}), f32({}, {2}), f32({}, {0.25})},
                      typeOf(DType::Float32, {4})),
               DType::Float32, {4}, {1, 1.25, 1.5, 1.75});
  // ceil((2 - 0) / 0.75) = 3
  expectTensor(runOne(OpKind::Range, {f32({}, {0}), f32({}, {2}), f32({}, {0.75})},
                      typeOf(DType::Float32, {3})),
               DType::Float32, {3}, {0, 0.75, 1.5});
  expectInts(
      runOne(OpKind::Range, {i64({}, {5}), i64({}, {1}), i64({}, {1})}, typeOf(DType::Int64, {0})),
      DType::Int64, {0}, {});
  // A span wider than int64 does not overflow the count.
  int64_t max = std::numeric_limits<int64_t>::max(), min = std::numeric_limits<int64_t>::min();
  expectInts(runOne(OpKind::Range, {i64({}, {min}), i64({}, {max}), i64({}, {max})},
                    typeOf(DType::Int64, {3})),
             DType::Int64, {3}, {min, -1, max - 1});
  EXPECT_USER_ERROR(
      runOne(OpKind::Range, {i64({}, {0}), i64({}, {4}), i64({}, {0})}, typeOf(DType::Int64, {0})),
      "delta is 0");
}

TEST(ReferenceEyeLike, DiagonalOffsetAndDType) {
  Tensor x = f32({3, 4}, std::vector<double>(12, 5));
  expectTensor(runOne(OpKind::EyeLike, {x}, typeOf(DType::Float32, {3, 4})), DType::Float32, {3, 4},
               {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0});
  // k = 1 above the diagonal, k = -2 below; dtype 7 is int64.
  expectInts(runOne(OpKind::EyeLike, {x}, typeOf(DType::Int64, {3, 4}),
                    {{"k", int64_t(1)}, {"dtype", int64_t(7)}}),
             DType::Int64, {3, 4}, {0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1});
  expectInts(runOne(OpKind::EyeLike, {x}, typeOf(DType::Bool, {3, 4}),
                    {{"k", int64_t(-2)}, {"dtype", int64_t(9)}}),
             DType::Bool, {3, 4}, {0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0});
}

TEST(ReferenceOneHot, AxisNegativeIndicesAndOutOfRange) {
  // indices [0, -1, 3, 7] with depth 4: -1 means 3; 7 is out of range (all off).
  Tensor indices = i64({4}, {0, -1, 3, 7});
  Tensor values = f32({2}, {-1, 5});
  expectTensor(
      runOne(OpKind::OneHot, {indices, f32({}, {4}), values}, typeOf(DType::Float32, {4, 4})),
      DType::Float32, {4, 4}, {5, -1, -1, -1, -1, -1, -1, 5, -1, -1, -1, 5, -1, -1, -1, -1});
  // axis 0 puts the one-hot dim first: out[j, i] = (indices[i] == j)
  Tensor byColumn = runOne(OpKind::OneHot, {i64({3}, {2, 0, 1}), i64({}, {3}), i64({2}, {0, 1})},
                           typeOf(DType::Int64, {3, 3}), {{"axis", int64_t(0)}});
  expectInts(byColumn, DType::Int64, {3, 3}, {0, 1, 0, 0, 0, 1, 1, 0, 0});
  // A 2-D indices tensor with the default axis -1, float depth and float indices.
  Tensor grid = runOne(OpKind::OneHot, {f32({2, 1}, {1, 0}), f32({}, {2.0}), i64({2}, {0, 9})},
                       typeOf(DType::Int64, {2, 1, 2}));
  expectInts(grid, DType::Int64, {2, 1, 2}, {0, 9, 9, 0});
}

TEST(ReferenceNonZero, CoordinatesInRowMajorOrder) {
  // [[1, 0], [1, 1]] -> [[0, 1, 1], [0, 0, 1]] (the spec's example)
  expectInts(runOne(OpKind::NonZero, {f32({2, 2}, {1, 0, 1, 1})}, typeOf(DType::Int64, {2, 3})),
             DType::Int64, {2, 3}, {0, 1, 1, 0, 0, 1});
  // NaN is non-zero, -0.0 is zero.
  expectInts(
      runOne(OpKind::NonZero, {f32({3}, {-0.0, std::nan(""), 2})}, typeOf(DType::Int64, {1, 2})),
      DType::Int64, {1, 2}, {1, 2});
  expectInts(runOne(OpKind::NonZero, {makeInts(DType::Bool, {2, 2}, {0, 0, 0, 0})},
                    typeOf(DType::Int64, {2, 0})),
             DType::Int64, {2, 0}, {});
}

TEST(ReferenceDropout, InferenceIsIdentityWithATrueMask) {
  Tensor x = f32({3}, {1, -2, 3});
  auto outputs = runNode(OpKind::Dropout, {x, f32({}, {0.7}), makeInts(DType::Bool, {}, {0})},
                         {typeOf(DType::Float32, {3}), typeOf(DType::Bool, {3})});
  expectTensor(outputs[0], DType::Float32, {3}, {1, -2, 3});
  expectInts(outputs[1], DType::Bool, {3}, {1, 1, 1});
  expectTensor(runOne(OpKind::Dropout, {x}, typeOf(DType::Float32, {3})), DType::Float32, {3},
               {1, -2, 3});
  // Training mode with ratio 0 is still the identity; with a positive ratio it is refused.
  expectTensor(runOne(OpKind::Dropout, {x, f32({}, {0}), makeInts(DType::Bool, {}, {1})},
                      typeOf(DType::Float32, {3})),
               DType::Float32, {3}, {1, -2, 3});
  EXPECT_USER_ERROR(runOne(OpKind::Dropout, {x, std::nullopt, makeInts(DType::Bool, {}, {1})},
                           typeOf(DType::Float32, {3})),
                    "training-mode Dropout is not supported");
}
