// Reference evaluator, part 2: data movement (reshapes, transposes, joins, slices, pads, gathers,
// scatters, Resize). Expected values come from the ONNX spec's worked examples, from hand
// computation, or from index formulas written in the test independently of the rules.
#include "reference_test_util.h"

#include <cmath>
#include <cstdint>
#include <limits>

using namespace sinter;
using namespace sinter::testing;

namespace {

std::vector<double> iota(int64_t count, double first = 0, double step = 1) {
  std::vector<double> values;
  for (int64_t i = 0; i < count; ++i)
    values.push_back(first + double(i) * step);
  return values;
}

std::vector<int64_t> iotaInts(int64_t count, int64_t first = 0) {
  std::vector<int64_t> values;
  for (int64_t i = 0; i < count; ++i)
    values.push_back(first + i);
  return values;
}

/// int64 values beyond 2^53, which a detour through double would corrupt.
std::vector<int64_t> bigInts(int64_t count) {
  std::vector<int64_t> values;
  for (int64_t i = 0; i < count; ++i)
    values.push_back((int64_t(1) << 62) + 1 + 2 * i);
  return values;
}

Attribute ints(std::vector<int64_t> values) { return values; }

const int64_t kMax = std::numeric_limits<int64_t>::max();
const int64_t kMin = std::numeric_limits<int64_t>::min();

} // namespace

// ---- Reshape, Flatten, Squeeze, Unsqueeze ---------------------------------------------------

TEST(ReferenceReshape, ZeroCopiesAndMinusOneInfers) {
  Tensor x = i64({2, 3, 4}, bigInts(24));
  expectInts(runOne(OpKind::Reshape, {x, i64({3}, {0, -1, 2})}, typeOf(DType::Int64, {2, 6, 2})),
             DType::Int64, {2, 6, 2}, bigInts(24));
  expectInts(runOne(OpKind::Reshape, {x, i64({1}, {-1})}, typeOf(DType::Int64, {24})), DType::Int64,
             {24}, bigInts(24));
  // A scalar and back.
  Tensor scalar = f32({}, {7});
  expectTensor(runOne(OpKind::Reshape, {scalar, i64({2}, {1, 1})}, typeOf(DType::Float32, {1, 1})),
               DType::Float32, {1, 1}, {7});
  expectTensor(
      runOne(OpKind::Reshape, {f32({1, 1}, {7}), i64({0}, {})}, typeOf(DType::Float32, {})),
      DType::Float32, {}, {7});
  // allowzero: 0 is a real zero extent.
  expectTensor(runOne(OpKind::Reshape, {f32({0, 3}, {}), i64({2}, {3, 0})},
                      typeOf(DType::Float32, {3, 0}), {{"allowzero", int64_t(1)}}),
               DType::Float32, {3, 0}, {});
  EXPECT_USER_ERROR(runOne(OpKind::Reshape, {x, i64({2}, {5, -1})}, typeOf(DType::Int64, {5, 5})),
                    "cannot infer");
  EXPECT_USER_ERROR(runOne(OpKind::Reshape, {x, i64({2}, {-1, -1})}, typeOf(DType::Int64, {4, 6})),
                    "more than one -1");
  EXPECT_USER_ERROR(runOne(OpKind::Reshape, {x, i64({2}, {5, 5})}, typeOf(DType::Int64, {5, 5})),
                    "cannot reshape");
}

TEST(ReferenceFlatten, AxisSplitsTheDims) {
  Tensor x = f32({2, 3, 4}, iota(24));
  expectTensor(runOne(OpKind::Flatten, {x}, typeOf(DType::Float32, {2, 12})), DType::Float32,
               {2, 12}, iota(24));
  expectTensor(
      runOne(OpKind::Flatten, {x}, typeOf(DType::Float32, {1, 24}), {{"axis", int64_t(0)}}),
      DType::Float32, {1, 24}, iota(24));
  expectTensor(
      runOne(OpKind::Flatten, {x}, typeOf(DType::Float32, {24, 1}), {{"axis", int64_t(3)}}),
      DType::Float32, {24, 1}, iota(24));
  expectTensor(
      runOne(OpKind::Flatten, {x}, typeOf(DType::Float32, {6, 4}), {{"axis", int64_t(-1)}}),
      DType::Float32, {6, 4}, iota(24));
  EXPECT_USER_ERROR(
      runOne(OpKind::Flatten, {x}, typeOf(DType::Float32, {1, 24}), {{"axis", int64_t(4)}}),
      "out of range");
}

TEST(ReferenceSqueeze, WithAndWithoutAxes) {
  Tensor x = f32({1, 3, 1, 2}, iota(6));
  expectTensor(runOne(OpKind::Squeeze, {x}, typeOf(DType::Float32, {3, 2})), DType::Float32, {3, 2},
               iota(6));
  expectTensor(runOne(OpKind::Squeeze, {x, i64({1}, {-2})}, typeOf(DType::Float32, {1, 3, 2})),
               DType::Float32, {1, 3, 2}, iota(6));
  EXPECT_USER_ERROR(runOne(OpKind::Squeeze, {x, i64({1}, {1})}, typeOf(DType::Float32, {1, 1, 2})),
                    "cannot squeeze");
  expectTensor(runOne(OpKind::Squeeze, {f32({1}, {5})}, typeOf(DType::Float32, {})), DType::Float32,
               {}, {5});
}

TEST(ReferenceUnsqueeze, AxesIndexTheOutput) {
  expectTensor(runOne(OpKind::Unsqueeze, {f32({3}, iota(3)), i64({2}, {0, -1})},
                      typeOf(DType::Float32, {1, 3, 1})),
               DType::Float32, {1, 3, 1}, iota(3));
  expectTensor(runOne(OpKind::Unsqueeze, {f32({2, 2}, iota(4)), i64({2}, {3, 1})},
                      typeOf(DType::Float32, {2, 1, 2, 1})),
               DType::Float32, {2, 1, 2, 1}, iota(4));
  expectTensor(
      runOne(OpKind::Unsqueeze, {f32({}, {4}), i64({1}, {0})}, typeOf(DType::Float32, {1})),
      DType::Float32, {1}, {4});
  EXPECT_USER_ERROR(runOne(OpKind::Unsqueeze, {f32({3}, iota(3)), i64({2}, {0, 0})},
                           typeOf(DType::Float32, {1, 1, 3})),
                    "repeated");
}

// ---- Transpose, DepthToSpace, SpaceToDepth --------------------------------------------------

TEST(ReferenceTranspose, DefaultReversesAndPermIsExact) {
  Tensor x = i64({2, 3}, bigInts(6));
  std::vector<int64_t> big = bigInts(6);
  expectInts(runOne(OpKind::Transpose, {x}, typeOf(DType::Int64, {3, 2})), DType::Int64, {3, 2},
             {big[0], big[3], big[1], big[4], big[2], big[5]});
  // [2,3,4] with perm [1,2,0]: out[j,k,i] = x[i,j,k]
  Tensor y = f32({2, 3, 4}, iota(24));
  Tensor t = runOne(OpKind::Transpose, {y}, typeOf(DType::Float32, {3, 4, 2}),
                    {{"perm", ints({1, 2, 0})}});
  std::vector<double> expected;
  for (int j = 0; j < 3; ++j)
    for (int k = 0; k < 4; ++k)
      for (int i = 0; i < 2; ++i)
        expected.push_back(i * 12 + j * 4 + k);
  expectTensor(t, DType::Float32, {3, 4, 2}, expected);
  expectTensor(runOne(OpKind::Transpose, {f32({}, {3})}, typeOf(DType::Float32, {})),
               DType::Float32, {}, {3});
  EXPECT_USER_ERROR(runOne(OpKind::Transpose, {y}, typeOf(DType::Float32, {3, 4, 2}),
                           {{"perm", ints({1, 1, 0})}}),
                    "not a permutation");
}

TEST(ReferenceDepthToSpace, DcrAndCrdMatchTheSpecFormulas) {
  // N=1, C=8, H=2, W=3, blocksize 2 -> [1, 2, 4, 6].
  Tensor x = f32({1, 8, 2, 3}, iota(48));
  for (std::string mode : {"DCR", "CRD"}) {
    Tensor y = runOne(OpKind::DepthToSpace, {x}, typeOf(DType::Float32, {1, 2, 4, 6}),
                      {{"blocksize", int64_t(2)}, {"mode", mode}});
    std::vector<double> expected;
    for (int c = 0; c < 2; ++c)
      for (int h = 0; h < 4; ++h)
        for (int w = 0; w < 6; ++w) {
          int i = h % 2, j = w % 2;
          int channel = mode == "DCR" ? (i * 2 + j) * 2 + c : c * 4 + i * 2 + j;
          expected.push_back((channel * 2 + h / 2) * 3 + w / 2);
        }
    expectTensor(y, DType::Float32, {1, 2, 4, 6}, expected);
  }
  // The first row of ONNX's DCR example: x = arange(48).reshape(1, 8, 2, 3).
  Tensor dcr = runOne(OpKind::DepthToSpace, {x}, typeOf(DType::Float32, {1, 2, 4, 6}),
                      {{"blocksize", int64_t(2)}});
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(dcr.getDouble(i), (std::vector<double>{0, 12, 1, 13, 2, 14})[i]);
}

TEST(ReferenceSpaceToDepth, InvertsDcr) {
  Tensor x = i64({1, 2, 4, 6}, iotaInts(48));
  Tensor y = runOne(OpKind::SpaceToDepth, {x}, typeOf(DType::Int64, {1, 8, 2, 3}),
                    {{"blocksize", int64_t(2)}});
  std::vector<int64_t> expected;
  for (int channel = 0; channel < 8; ++channel)
    for (int h = 0; h < 2; ++h)
      for (int w = 0; w < 3; ++w) {
        int block = channel / 2, c = channel % 2, i = block / 2, j = block % 2;
        expected.push_back((c * 4 + h * 2 + i) * 6 + w * 2 + j);
      }
  expectInts(y, DType::Int64, {1, 8, 2, 3}, expected);
  Tensor back = runOne(OpKind::DepthToSpace, {y}, typeOf(DType::Int64, {1, 2, 4, 6}),
                       {{"blocksize", int64_t(2)}});
  expectInts(back, DType::Int64, {1, 2, 4, 6}, iotaInts(48));
  EXPECT_USER_ERROR(runOne(OpKind::SpaceToDepth, {f32({1, 1, 3, 2}, iota(6))},
                           typeOf(DType::Float32, {1, 4, 1, 1}), {{"blocksize", int64_t(2)}}),
                    "multiples of blocksize");
}

// ---- Concat, Split, Slice -------------------------------------------------------------------

TEST(ReferenceConcat, AlongAnAxisWithEmptyInputs) {
  Tensor a = f32({2, 1}, {1, 2});
  Tensor b = f32({2, 2}, {3, 4, 5, 6});
  Tensor empty = f32({2, 0}, {});
  expectTensor(runOne(OpKind::Concat, {a, empty, b}, typeOf(DType::Float32, {2, 3}),
                      {{"axis", int64_t(-1)}}),
               DType::Float32, {2, 3}, {1, 3, 4, 2, 5, 6});
  expectTensor(
      runOne(OpKind::Concat, {b, b}, typeOf(DType::Float32, {4, 2}), {{"axis", int64_t(0)}}),
      DType::Float32, {4, 2}, {3, 4, 5, 6, 3, 4, 5, 6});
  EXPECT_USER_ERROR(
      runOne(OpKind::Concat, {a, b}, typeOf(DType::Float32, {4, 1}), {{"axis", int64_t(0)}}),
      "does not match");
  EXPECT_USER_ERROR(runOne(OpKind::Concat, {a, i64({2, 1}, {1, 2})}, typeOf(DType::Float32, {2, 2}),
                           {{"axis", int64_t(1)}}),
                    "element type");
}

TEST(ReferenceSplit, BySizesByCountAndEvenly) {
  Tensor x = i64({2, 5}, bigInts(10));
  std::vector<int64_t> v = bigInts(10);
  auto parts =
      runNode(OpKind::Split, {x, i64({2}, {2, 3})},
              {typeOf(DType::Int64, {2, 2}), typeOf(DType::Int64, {2, 3})}, {{"axis", int64_t(1)}});
  expectInts(parts[0], DType::Int64, {2, 2}, {v[0], v[1], v[5], v[6]});
  expectInts(parts[1], DType::Int64, {2, 3}, {v[2], v[3], v[4], v[7], v[8], v[9]});
  // num_outputs 3 over 5: chunks of ceil(5/3) = 2, the last smaller.
  auto chunks = runNode(
      OpKind::Split, {x},
      {typeOf(DType::Int64, {2, 2}), typeOf(DType::Int64, {2, 2}), typeOf(DType::Int64, {2, 1})},
      {{"axis", int64_t(-1)}, {"num_outputs", int64_t(3)}});
  expectInts(chunks[2], DType::Int64, {2, 1}, {v[4], v[9]});
  auto halves =
      runNode(OpKind::Split, {x}, {typeOf(DType::Int64, {1, 5}), typeOf(DType::Int64, {1, 5})});
  expectInts(halves[1], DType::Int64, {1, 5}, {v[5], v[6], v[7], v[8], v[9]});
  EXPECT_USER_ERROR(runNode(OpKind::Split, {x, i64({2}, {2, 2})},
                            {typeOf(DType::Int64, {2, 2}), typeOf(DType::Int64, {2, 2})},
                            {{"axis", int64_t(1)}}),
                    "does not cut");
}

TEST(ReferenceSlice, StepsClampingAndNegativeIndices) {
  Tensor x = f32({10}, iota(10));
  auto slice = [&](std::vector<int64_t> starts, std::vector<int64_t> ends,
                   std::vector<int64_t> steps, int64_t count) {
    return runOne(OpKind::Slice,
                  {x, i64({int64_t(starts.size())}, starts), i64({int64_t(ends.size())}, ends),
                   i64({1}, {0}), i64({int64_t(steps.size())}, steps)},
                  typeOf(DType::Float32, {count}));
  };
  expectTensor(slice({1}, {8}, {3}, 3), DType::Float32, {3}, {1, 4, 7});
  expectTensor(slice({-3}, {kMax}, {1}, 3), DType::Float32, {3}, {7, 8, 9});
  expectTensor(slice({kMax}, {kMin}, {-1}, 10), DType::Float32, {10},
               {9, 8, 7, 6, 5, 4, 3, 2, 1, 0});
  expectTensor(slice({-1}, {-11}, {-4}, 3), DType::Float32, {3}, {9, 5, 1});
  expectTensor(slice({8}, {2}, {-2}, 3), DType::Float32, {3}, {8, 6, 4});
  expectTensor(slice({5}, {3}, {1}, 0), DType::Float32, {0}, {});
  expectTensor(slice({-100}, {2}, {1}, 2), DType::Float32, {2}, {0, 1});
  EXPECT_USER_ERROR(slice({0}, {5}, {0}, 5), "step 0");
}

TEST(ReferenceSlice, SeveralAxesWithDefaults) {
  // x[2,3,4]; slice axis -1 [1:3] and axis 0 [1:] with default steps.
  Tensor x = i64({2, 3, 4}, iotaInts(24));
  Tensor y = runOne(OpKind::Slice, {x, i64({2}, {1, 1}), i64({2}, {3, kMax}), i64({2}, {-1, 0})},
                    typeOf(DType::Int64, {1, 3, 2}));
  expectInts(y, DType::Int64, {1, 3, 2}, {13, 14, 17, 18, 21, 22});
  // Without axes: starts/ends apply to the first dims.
  Tensor z = runOne(OpKind::Slice, {x, i64({2}, {0, 2}), i64({2}, {1, 3})},
                    typeOf(DType::Int64, {1, 1, 4}));
  expectInts(z, DType::Int64, {1, 1, 4}, {8, 9, 10, 11});
  EXPECT_USER_ERROR(runOne(OpKind::Slice,
                           {x, i64({2}, {0, 0}), i64({2}, {1, 1}), i64({2}, {1, -2})},
                           typeOf(DType::Int64, {2, 1, 4})),
                    "repeated");
}

// ---- Expand, Tile ---------------------------------------------------------------------------

TEST(ReferenceExpand, BroadcastsBothWays) {
  Tensor x = f32({3, 1}, {1, 2, 3});
  Tensor y = runOne(OpKind::Expand, {x, i64({3}, {2, 1, 4})}, typeOf(DType::Float32, {2, 3, 4}));
  std::vector<double> expected;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k)
        expected.push_back(j + 1);
  expectTensor(y, DType::Float32, {2, 3, 4}, expected);
  // A shape smaller than the input keeps the input's dims.
  expectTensor(runOne(OpKind::Expand, {x, i64({1}, {1})}, typeOf(DType::Float32, {3, 1})),
               DType::Float32, {3, 1}, {1, 2, 3});
  expectTensor(
      runOne(OpKind::Expand, {f32({}, {5}), i64({2}, {2, 2})}, typeOf(DType::Float32, {2, 2})),
      DType::Float32, {2, 2}, {5, 5, 5, 5});
  EXPECT_USER_ERROR(runOne(OpKind::Expand, {x, i64({2}, {2, 1})}, typeOf(DType::Float32, {3, 1})),
                    "broadcast");
}

TEST(ReferenceTile, RepeatsEachAxis) {
  Tensor x = f32({2, 2}, {1, 2, 3, 4});
  expectTensor(runOne(OpKind::Tile, {x, i64({2}, {2, 3})}, typeOf(DType::Float32, {4, 6})),
               DType::Float32, {4, 6},
               {1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4, 1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4});
  expectTensor(runOne(OpKind::Tile, {x, i64({2}, {0, 1})}, typeOf(DType::Float32, {0, 2})),
               DType::Float32, {0, 2}, {});
  expectTensor(runOne(OpKind::Tile, {f32({}, {9}), i64({0}, {})}, typeOf(DType::Float32, {})),
               DType::Float32, {}, {9});
}

// ---- Pad ------------------------------------------------------------------------------------

TEST(ReferencePad, ModesAgainstNumpyPad) {
  Tensor x = f32({3}, {1, 2, 3});
  auto pad = [&](std::string mode, int64_t begin, int64_t end, int64_t count) {
    return runOne(OpKind::Pad, {x, i64({2}, {begin, end})}, typeOf(DType::Float32, {count}),
                  {{"mode", mode}});
  };
  // Values as numpy.pad gives them.
  expectTensor(pad("constant", 2, 1, 6), DType::Float32, {6}, {0, 0, 1, 2, 3, 0});
  expectTensor(pad("edge", 2, 2, 7), DType::Float32, {7}, {1, 1, 1, 2, 3, 3, 3});
  expectTensor(pad("reflect", 5, 5, 13), DType::Float32, {13},
               {2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3, 2});
  expectTensor(pad("wrap", 5, 4, 12), DType::Float32, {12}, {2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1});
  // Negative pads crop.
  expectTensor(pad("constant", -1, 2, 4), DType::Float32, {4}, {2, 3, 0, 0});
  expectTensor(pad("edge", 1, -2, 2), DType::Float32, {2}, {1, 1});
}

TEST(ReferencePad, TwoDimensionalConstantValueAndAxes) {
  Tensor x = f32({2, 2}, {1, 2, 3, 4});
  // pads [begin0, begin1, end0, end1] = [1, 0, 0, 2], value 9
  Tensor y = runOne(OpKind::Pad, {x, i64({4}, {1, 0, 0, 2}), f32({}, {9})},
                    typeOf(DType::Float32, {3, 4}));
  expectTensor(y, DType::Float32, {3, 4}, {9, 9, 9, 9, 1, 2, 9, 9, 3, 4, 9, 9});
  // axes [-1] only: pads [1, 1] on the last axis, reflect.
  Tensor z = runOne(OpKind::Pad, {x, i64({2}, {1, 1}), std::nullopt, i64({1}, {-1})},
                    typeOf(DType::Float32, {2, 4}), {{"mode", std::string("reflect")}});
  expectTensor(z, DType::Float32, {2, 4}, {2, 1, 2, 1, 4, 3, 4, 3});
  // int64 data with an int64 constant is exact.
  std::vector<int64_t> big = bigInts(3);
  expectInts(runOne(OpKind::Pad, {i64({2}, {big[0], big[1]}), i64({2}, {0, 1}), i64({}, {big[2]})},
                    typeOf(DType::Int64, {3})),
             DType::Int64, {3}, big);
  EXPECT_USER_ERROR(runOne(OpKind::Pad, {x, i64({2}, {1, 1})}, typeOf(DType::Float32, {3, 3})),
                    "pads has");
  EXPECT_USER_ERROR(runOne(OpKind::Pad, {f32({0}, {}), i64({2}, {1, 1})},
                           typeOf(DType::Float32, {2}), {{"mode", std::string("edge")}}),
                    "no elements");
}

// ---- Gather ---------------------------------------------------------------------------------

TEST(ReferenceGather, AxesNegativeIndicesAndScalars) {
  // ONNX's example: data [[1,1.2],[2.3,3.4],[4.5,5.7]], indices [[0,1],[1,2]], axis 0.
  Tensor data = f32({3, 2}, {1, 1.2, 2.3, 3.4, 4.5, 5.7});
  expectTensor(
      runOne(OpKind::Gather, {data, i64({2, 2}, {0, 1, 1, 2})}, typeOf(DType::Float32, {2, 2, 2})),
      DType::Float32, {2, 2, 2}, {1, 1.2, 2.3, 3.4, 2.3, 3.4, 4.5, 5.7}, 1e-7);
  // axis 1 with a negative index, and int32 indices.
  Tensor indices = makeInts(DType::Int32, {1, 2}, {-1, 0});
  expectTensor(runOne(OpKind::Gather, {data, indices}, typeOf(DType::Float32, {3, 1, 2}),
                      {{"axis", int64_t(1)}}),
               DType::Float32, {3, 1, 2}, {1.2, 1, 3.4, 2.3, 5.7, 4.5}, 1e-7);
  // A scalar index drops the axis.
  expectTensor(runOne(OpKind::Gather, {data, i64({}, {-3})}, typeOf(DType::Float32, {2})),
               DType::Float32, {2}, {1, 1.2}, 1e-7);
  // Empty indices.
  expectTensor(runOne(OpKind::Gather, {data, i64({0}, {})}, typeOf(DType::Float32, {0, 2})),
               DType::Float32, {0, 2}, {});
  EXPECT_USER_ERROR(runOne(OpKind::Gather, {data, i64({1}, {3})}, typeOf(DType::Float32, {1, 2})),
                    "out of range");
  EXPECT_USER_ERROR(runOne(OpKind::Gather, {data, i64({1}, {-4})}, typeOf(DType::Float32, {1, 2})),
                    "out of range");
}

TEST(ReferenceGatherElements, SpecExamples) {
  expectTensor(runOne(OpKind::GatherElements,
                      {f32({2, 2}, {1, 2, 3, 4}), i64({2, 2}, {0, 0, 1, 0})},
                      typeOf(DType::Float32, {2, 2}), {{"axis", int64_t(1)}}),
               DType::Float32, {2, 2}, {1, 1, 4, 3});
  expectTensor(runOne(OpKind::GatherElements,
                      {f32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}), i64({2, 3}, {1, 2, 0, 2, 0, 0})},
                      typeOf(DType::Float32, {2, 3})),
               DType::Float32, {2, 3}, {4, 8, 3, 7, 2, 3});
  // Negative indices count from the end.
  expectTensor(runOne(OpKind::GatherElements,
                      {f32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}), i64({1, 2}, {-1, -2})},
                      typeOf(DType::Float32, {1, 2})),
               DType::Float32, {1, 2}, {7, 5});
  EXPECT_USER_ERROR(runOne(OpKind::GatherElements, {f32({2, 2}, {1, 2, 3, 4}), i64({1, 1}, {2})},
                           typeOf(DType::Float32, {1, 1})),
                    "out of range");
}

TEST(ReferenceGatherND, SpecExamplesIncludingBatchDims) {
  Tensor square = i64({2, 2}, {0, 1, 2, 3});
  expectInts(
      runOne(OpKind::GatherND, {square, i64({2, 2}, {0, 0, 1, 1})}, typeOf(DType::Int64, {2})),
      DType::Int64, {2}, {0, 3});
  expectInts(runOne(OpKind::GatherND, {square, i64({2, 1}, {1, 0})}, typeOf(DType::Int64, {2, 2})),
             DType::Int64, {2, 2}, {2, 3, 0, 1});
  Tensor cube = i64({2, 2, 2}, iotaInts(8));
  expectInts(
      runOne(OpKind::GatherND, {cube, i64({2, 2}, {0, 1, 1, 0})}, typeOf(DType::Int64, {2, 2})),
      DType::Int64, {2, 2}, {2, 3, 4, 5});
  expectInts(runOne(OpKind::GatherND, {cube, i64({2, 1, 2}, {0, 1, 1, 0})},
                    typeOf(DType::Int64, {2, 1, 2})),
             DType::Int64, {2, 1, 2}, {2, 3, 4, 5});
  // batch_dims 1: data [2,2,2], indices [[1],[0]] -> [[2,3],[4,5]]
  expectInts(runOne(OpKind::GatherND, {cube, i64({2, 1}, {1, 0})}, typeOf(DType::Int64, {2, 2}),
                    {{"batch_dims", int64_t(1)}}),
             DType::Int64, {2, 2}, {2, 3, 4, 5});
  // batch_dims 1 with several tuples per batch: data[b, idx] for idx in indices[b].
  expectInts(runOne(OpKind::GatherND, {cube, i64({2, 2, 2}, {0, 1, 1, -1, 1, 0, 0, 0})},
                    typeOf(DType::Int64, {2, 2}), {{"batch_dims", int64_t(1)}}),
             DType::Int64, {2, 2}, {1, 3, 6, 4});
  EXPECT_USER_ERROR(
      runOne(OpKind::GatherND, {square, i64({1, 3}, {0, 0, 0})}, typeOf(DType::Int64, {1})),
      "do not fit");
}

// ---- Scatter --------------------------------------------------------------------------------

TEST(ReferenceScatterElements, SpecExamplesAndReductions) {
  // ONNX's example 1: axis 0.
  Tensor data = f32({3, 3}, std::vector<double>(9, 0));
  Tensor y =
      runOne(OpKind::ScatterElements,
             {data, i64({2, 3}, {1, 0, 2, 0, 2, 1}), f32({2, 3}, {1, 1.1, 1.2, 2, 2.1, 2.2})},
             typeOf(DType::Float32, {3, 3}));
  expectTensor(y, DType::Float32, {3, 3}, {2, 1.1, 0, 1, 0, 2.2, 0, 2.1, 1.2}, 1e-7);
  // Example 2: axis 1, with a negative index.
  Tensor row = f32({1, 5}, {1, 2, 3, 4, 5});
  expectTensor(runOne(OpKind::ScatterElements, {row, i64({1, 2}, {1, -2}), f32({1, 2}, {1.1, 2.1})},
                      typeOf(DType::Float32, {1, 5}), {{"axis", int64_t(1)}}),
               DType::Float32, {1, 5}, {1, 1.1, 3, 2.1, 5}, 1e-7);
  // Reductions accumulate duplicates in order.
  auto reduce = [&](std::string reduction) {
    return runOne(OpKind::ScatterElements, {row, i64({1, 3}, {1, 1, 4}), f32({1, 3}, {10, 3, -7})},
                  typeOf(DType::Float32, {1, 5}), {{"axis", int64_t(1)}, {"reduction", reduction}});
  };
  expectTensor(reduce("add"), DType::Float32, {1, 5}, {1, 15, 3, 4, -2});
  expectTensor(reduce("mul"), DType::Float32, {1, 5}, {1, 60, 3, 4, -35});
  expectTensor(reduce("max"), DType::Float32, {1, 5}, {1, 10, 3, 4, 5});
  expectTensor(reduce("min"), DType::Float32, {1, 5}, {1, 2, 3, 4, -7});
  expectTensor(reduce("none"), DType::Float32, {1, 5}, {1, 3, 3, 4, -7});
  EXPECT_USER_ERROR(runOne(OpKind::ScatterElements, {row, i64({1, 1}, {5}), f32({1, 1}, {0})},
                           typeOf(DType::Float32, {1, 5}), {{"axis", int64_t(1)}}),
                    "out of range");
}

TEST(ReferenceScatterElements, IntegerReductionsWrap) {
  Tensor data = makeInts(DType::Int8, {2}, {100, -128});
  Tensor y = runOne(OpKind::ScatterElements,
                    {data, i64({2}, {0, 1}), makeInts(DType::Int8, {2}, {100, -1})},
                    typeOf(DType::Int8, {2}), {{"reduction", std::string("add")}});
  expectInts(y, DType::Int8, {2}, {-56, 127});
  std::vector<int64_t> big = bigInts(2);
  expectInts(runOne(OpKind::ScatterElements, {i64({2}, big), i64({1}, {1}), i64({1}, {big[0]})},
                    typeOf(DType::Int64, {2}), {{"reduction", std::string("max")}}),
             DType::Int64, {2}, big);
}

TEST(ReferenceScatterND, SpecExamplesAndReductions) {
  Tensor data = f32({8}, {1, 2, 3, 4, 5, 6, 7, 8});
  expectTensor(runOne(OpKind::ScatterND,
                      {data, i64({4, 1}, {4, 3, 1, 7}), f32({4}, {9, 10, 11, 12})},
                      typeOf(DType::Float32, {8})),
               DType::Float32, {8}, {1, 11, 3, 10, 9, 6, 7, 12});
  // Slices: data [4,4,4] ... use [3,2] with whole-row updates.
  Tensor rows = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  expectTensor(runOne(OpKind::ScatterND, {rows, i64({2, 1}, {2, 0}), f32({2, 2}, {50, 60, 10, 20})},
                      typeOf(DType::Float32, {3, 2})),
               DType::Float32, {3, 2}, {10, 20, 3, 4, 50, 60});
  expectTensor(runOne(OpKind::ScatterND, {data, i64({3, 1}, {0, 0, -1}), f32({3}, {5, 6, 7})},
                      typeOf(DType::Float32, {8}), {{"reduction", std::string("add")}}),
               DType::Float32, {8}, {12, 2, 3, 4, 5, 6, 7, 15});
  expectTensor(runOne(OpKind::ScatterND, {data, i64({2, 1}, {0, 0}), f32({2}, {5, 6})},
                      typeOf(DType::Float32, {8}), {{"reduction", std::string("mul")}}),
               DType::Float32, {8}, {30, 2, 3, 4, 5, 6, 7, 8});
  EXPECT_USER_ERROR(runOne(OpKind::ScatterND, {data, i64({1, 1}, {0}), f32({2}, {5, 6})},
                           typeOf(DType::Float32, {8})),
                    "updates are");
}

// ---- Resize ---------------------------------------------------------------------------------

namespace {
Tensor resize(const Tensor &x, std::optional<Tensor> roi, std::optional<Tensor> scales,
              std::optional<Tensor> sizes, std::vector<int64_t> outDims, Attributes attributes) {
  return runOne(OpKind::Resize, {x, roi, scales, sizes}, typeOf(x.dtype(), outDims), attributes);
}
Attributes modes(std::string mode, std::string coordinates, Attributes more = {}) {
  more["mode"] = mode;
  more["coordinate_transformation_mode"] = coordinates;
  return more;
}
} // namespace

TEST(ReferenceResize, LinearHalfPixelAndAlignCornersMatchTheSpecExamples) {
  Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  // test_resize_upsample_scales_linear
  Tensor y = resize(x, std::nullopt, f32({4}, {1, 1, 2, 2}), std::nullopt, {1, 1, 4, 4},
                    modes("linear", "half_pixel"));
  expectTensor(y, DType::Float32, {1, 1, 4, 4},
               {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4});
  // test_resize_upsample_scales_linear_align_corners
  Tensor z = resize(x, std::nullopt, f32({4}, {1, 1, 2, 2}), std::nullopt, {1, 1, 4, 4},
                    modes("linear", "align_corners"));
  double third = 1.0 / 3;
  expectTensor(z, DType::Float32, {1, 1, 4, 4},
               {1, 1 + third, 1 + 2 * third, 2, 1 + 2 * third, 2, 2 + third, 2 + 2 * third,
                2 + third, 2 + 2 * third, 3, 3 + third, 3, 3 + third, 3 + 2 * third, 4},
               1e-6);
}

TEST(ReferenceResize, NearestModesAndExactCopies) {
  // 1-D upsampling by 2 with asymmetric coordinates: x = y / 2.
  std::vector<int64_t> big = bigInts(3);
  Tensor x = i64({3}, big);
  Tensor floor = resize(x, std::nullopt, f32({1}, {2}), std::nullopt, {6},
                        modes("nearest", "asymmetric", {{"nearest_mode", std::string("floor")}}));
  expectInts(floor, DType::Int64, {6}, {big[0], big[0], big[1], big[1], big[2], big[2]});
  // ceil: x = 0, 0.5, 1, 1.5, 2, 2.5 -> 0, 1, 1, 2, 2, 3 (clamped to 2)
  Tensor ceil = resize(x, std::nullopt, f32({1}, {2}), std::nullopt, {6},
                       modes("nearest", "asymmetric", {{"nearest_mode", std::string("ceil")}}));
  expectInts(ceil, DType::Int64, {6}, {big[0], big[1], big[1], big[2], big[2], big[2]});
  // half_pixel, round_prefer_floor (the default) vs round_prefer_ceil on exact halves:
  // downsampling 4 -> 2 by sizes gives x = 0.5, 2.5.
  Tensor four = f32({4}, {10, 20, 30, 40});
  expectTensor(
      resize(four, std::nullopt, std::nullopt, i64({1}, {2}), {2}, modes("nearest", "half_pixel")),
      DType::Float32, {2}, {10, 30});
  expectTensor(
      resize(four, std::nullopt, std::nullopt, i64({1}, {2}), {2},
             modes("nearest", "half_pixel", {{"nearest_mode", std::string("round_prefer_ceil")}})),
      DType::Float32, {2}, {20, 40});
  // Scales of 0.6 give floor(4 * 0.6) = 2 outputs, at x = 0 and 1 / 0.6 = 1.67 (rounds up).
  expectTensor(resize(four, std::nullopt, f32({1}, {0.6f}), std::nullopt, {2},
                      modes("nearest", "asymmetric")),
               DType::Float32, {2}, {10, 30});
}

TEST(ReferenceResize, CubicAgainstTheKeysKernel) {
  // 1-D, 4 -> 8 with half_pixel; each output is sum_k W(x - k) * in[clamp(k)] over the four
  // neighbours, W the Keys kernel with a = -0.75 (ONNX's default).
  std::vector<double> in = {1, 4, 2, 8};
  Tensor y = resize(f32({4}, in), std::nullopt, f32({1}, {2}), std::nullopt, {8},
                    modes("cubic", "half_pixel"));
  double a = -0.75;
  auto keys = [a](double t) {
    t = std::fabs(t);
    if (t <= 1)
      return (a + 2) * t * t * t - (a + 3) * t * t + 1;
    if (t < 2)
      return a * t * t * t - 5 * a * t * t + 8 * a * t - 4 * a;
    return 0.0;
  };
  std::vector<double> expected;
  for (int o = 0; o < 8; ++o) {
    double x = (o + 0.5) / 2 - 0.5;
    int base = int(std::floor(x));
    double sum = 0;
    for (int k = base - 1; k <= base + 2; ++k)
      sum += keys(x - k) * in[std::clamp(k, 0, 3)];
    expected.push_back(sum);
  }
  expectTensor(y, DType::Float32, {8}, expected, 1e-6);
  // exclude_outside drops the taps past the edges and renormalises the rest.
  Tensor excluded = resize(f32({4}, in), std::nullopt, f32({1}, {2}), std::nullopt, {8},
                           modes("cubic", "half_pixel", {{"exclude_outside", int64_t(1)}}));
  std::vector<double> expectedExcluded;
  for (int o = 0; o < 8; ++o) {
    double x = (o + 0.5) / 2 - 0.5;
    int base = int(std::floor(x));
    double sum = 0, weights = 0;
    for (int k = base - 1; k <= base + 2; ++k)
      if (k >= 0 && k < 4) {
        sum += keys(x - k) * in[k];
        weights += keys(x - k);
      }
    expectedExcluded.push_back(sum / weights);
  }
  expectTensor(excluded, DType::Float32, {8}, expectedExcluded, 1e-6);
}

TEST(ReferenceResize, SizesAxesAndKeepAspectRatio) {
  Tensor x = f32({1, 2, 4}, iota(8, 1));
  // axes [2, 1]: sizes [2, 1] mean axis 2 -> 2, axis 1 -> 1 (asymmetric nearest: x = y * in / out).
  Tensor y = resize(x, std::nullopt, std::nullopt, i64({2}, {2, 1}), {1, 1, 2},
                    modes("nearest", "asymmetric", {{"axes", ints({2, 1})}}));
  expectTensor(y, DType::Float32, {1, 1, 2}, {1, 3});
  // not_larger: scale = min(4/2, 6/4) = 1.5, so 2x4 -> 3x6.
  Tensor square = f32({2, 4}, iota(8, 1));
  Tensor z = resize(
      square, std::nullopt, std::nullopt, i64({2}, {4, 6}), {3, 6},
      modes("nearest", "asymmetric", {{"keep_aspect_ratio_policy", std::string("not_larger")}}));
  // rows x = y / 1.5: 0, 0.67, 1.33 -> 0, 1, 1; columns 0, .67, 1.33, 2, 2.67, 3.33 -> 0,1,1,2,3,3
  expectTensor(z, DType::Float32, {3, 6}, {1, 2, 2, 3, 4, 4, 5, 6, 6, 7, 8, 8, 5, 6, 6, 7, 8, 8});
  // not_smaller: scale = max(2, 1.5) = 2 -> 4x8.
  Tensor w = resize(
      square, std::nullopt, std::nullopt, i64({2}, {4, 6}), {4, 8},
      modes("nearest", "asymmetric", {{"keep_aspect_ratio_policy", std::string("not_smaller")}}));
  EXPECT_EQ(w.dims(), (std::vector<int64_t>{4, 8}));
  EXPECT_USER_ERROR(resize(x, std::nullopt, f32({3}, {1, 1, 2}), i64({3}, {1, 2, 8}), {1, 2, 8},
                           modes("nearest", "asymmetric")),
                    "exactly one of scales and sizes");
}

TEST(ReferenceResize, TfCropAndResizeExtrapolates) {
  // roi [0.5, 1.5] over 3 elements (normalised to [1, 3]); 3 outputs: x = 1, 2, 3.
  // x = 3 is past the last element (2) and takes the extrapolation value.
  Tensor y = resize(f32({3}, {10, 20, 30}), f32({2}, {0.5, 1.5}), std::nullopt, i64({1}, {3}), {3},
                    modes("linear", "tf_crop_and_resize", {{"extrapolation_value", 7.0f}}));
  expectTensor(y, DType::Float32, {3}, {20, 30, 7});
}

TEST(ReferenceResize, IntegerLinearRoundsToNearestEven) {
  // [0, 2] upsampled by 4, asymmetric (x = y / 4): 0, 0.5, 1, 1.5, then 2 (past the end, clamped);
  // 0.5 rounds to 0 and 1.5 to 2.
  Tensor y = resize(makeInts(DType::Uint8, {2}, {0, 2}), std::nullopt, f32({1}, {4}), std::nullopt,
                    {8}, modes("linear", "asymmetric"));
  expectInts(y, DType::Uint8, {8}, {0, 0, 1, 2, 2, 2, 2, 2});
}

TEST(ReferenceResize, AntialiasLinearDownsampleWidensTheTriangle) {
  // 1-D, 8 -> 4 (scale 0.5), half_pixel: x = 2y + 0.5. The antialiased triangle has half-width
  // 1 / scale = 2, so output y averages in[k] with weights max(0, 1 - |k - x| / 2), normalised.
  std::vector<double> in = {3, 1, 4, 1, 5, 9, 2, 6};
  Tensor y = resize(f32({8}, in), std::nullopt, f32({1}, {0.5}), std::nullopt, {4},
                    modes("linear", "half_pixel", {{"antialias", int64_t(1)}}));
  std::vector<double> expected;
  for (int o = 0; o < 4; ++o) {
    double x = (o + 0.5) / 0.5 - 0.5, sum = 0, weights = 0;
    for (int k = int(std::floor(x)) - 1; k <= int(std::floor(x)) + 2; ++k) {
      double weight = std::max(0.0, 1 - std::fabs(k - x) / 2);
      sum += weight * in[std::clamp(k, 0, 7)];
      weights += weight;
    }
    expected.push_back(sum / weights);
  }
  expectTensor(y, DType::Float32, {4}, expected, 1e-6);
}
