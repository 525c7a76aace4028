// Reference evaluator, part 2: contractions (MatMul, Gemm, Einsum), convolution and pooling.
// Expected values are worked out by hand from the ONNX spec, or computed in the test with a
// direct formula written independently of the rule (a plain sum for one output element).
#include "reference_test_util.h"

#include <cmath>
#include <cstdint>
#include <limits>

using namespace sinter;
using namespace sinter::testing;

namespace {

const double kInf = std::numeric_limits<double>::infinity();

/// `count` values 1, 2, 3, ... (or starting elsewhere), a convenient non-symmetric fill.
std::vector<double> iota(int64_t count, double first = 1, double step = 1) {
  std::vector<double> values;
  for (int64_t i = 0; i < count; ++i)
    values.push_back(first + double(i) * step);
  return values;
}

Attribute ints(std::vector<int64_t> values) { return values; }

} // namespace

// ---- MatMul ---------------------------------------------------------------------------------

TEST(ReferenceMatMul, TwoByThreeTimesThreeByTwo) {
  // [[1,2,3],[4,5,6]] x [[7,8],[9,10],[11,12]] = [[58,64],[139,154]]
  Tensor y = runOne(OpKind::MatMul, {f32({2, 3}, iota(6)), f32({3, 2}, iota(6, 7))},
                    typeOf(DType::Float32, {2, 2}));
  expectTensor(y, DType::Float32, {2, 2}, {58, 64, 139, 154});
}

TEST(ReferenceMatMul, OneDimensionalOperandsArePromotedAndDropped) {
  Tensor matrix = f32({2, 3}, iota(6)); // [[1,2,3],[4,5,6]]
  // vector x matrix: [1,1] x [2,3] -> [3]
  expectTensor(runOne(OpKind::MatMul, {f32({2}, {1, 1}), matrix}, typeOf(DType::Float32, {3})),
               DType::Float32, {3}, {5, 7, 9});
  // matrix x vector: [2,3] x [3] -> [2]
  expectTensor(runOne(OpKind::MatMul, {matrix, f32({3}, {1, 0, -1})}, typeOf(DType::Float32, {2})),
               DType::Float32, {2}, {-2, -2});
  // vector x vector: a scalar
  expectTensor(runOne(OpKind::MatMul, {f32({3}, {1, 2, 3}), f32({3}, {4, 5, 6})},
                      typeOf(DType::Float32, {})),
               DType::Float32, {}, {32});
  // a 1-D operand against a batch: [3] x [2,3,2] -> [2,2]
  Tensor batch = f32({2, 3, 2}, iota(12));
  Tensor y = runOne(OpKind::MatMul, {f32({3}, {1, 2, 3}), batch}, typeOf(DType::Float32, {2, 2}));
  expectTensor(y, DType::Float32, {2, 2}, {1 + 6 + 15, 2 + 8 + 18, 7 + 18 + 33, 8 + 20 + 36});
}

TEST(ReferenceMatMul, BatchDimsBroadcast) {
  // A [2,1,2,3] and B [3,3,2] broadcast to batch [2,3].
  Tensor a = f32({2, 1, 2, 3}, iota(12, -3));
  Tensor b = f32({3, 3, 2}, iota(18, 0.5, 0.25));
  Tensor y = runOne(OpKind::MatMul, {a, b}, typeOf(DType::Float32, {2, 3, 2, 2}));
  std::vector<double> expected;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int m = 0; m < 2; ++m)
        for (int n = 0; n < 2; ++n) {
          double sum = 0;
          for (int k = 0; k < 3; ++k)
            sum += a.getDouble(i * 6 + m * 3 + k) * b.getDouble(j * 6 + k * 2 + n);
          expected.push_back(sum);
        }
  expectTensor(y, DType::Float32, {2, 3, 2, 2}, expected, 1e-6);
}

TEST(ReferenceMatMul, IntegersAreExactAndWrap) {
  // int64 products beyond 2^53 stay exact.
  int64_t big = (int64_t(1) << 40) + 1;
  Tensor y = runOne(OpKind::MatMul, {i64({1, 2}, {big, 3}), i64({2, 1}, {int64_t(1) << 20, 5})},
                    typeOf(DType::Int64, {1, 1}));
  expectInts(y, DType::Int64, {1, 1}, {(big << 20) + 15});
  // uint8 wraps modulo 256: 200 * 2 + 100 * 1 = 500 = 244 (mod 256).
  Tensor u =
      runOne(OpKind::MatMul,
             {makeInts(DType::Uint8, {1, 2}, {200, 100}), makeInts(DType::Uint8, {2, 1}, {2, 1})},
             typeOf(DType::Uint8, {1, 1}));
  expectInts(u, DType::Uint8, {1, 1}, {244});
}

TEST(ReferenceMatMul, EmptyInnerDimGivesZeros) {
  Tensor y =
      runOne(OpKind::MatMul, {f32({2, 0}, {}), f32({0, 3}, {})}, typeOf(DType::Float32, {2, 3}));
  expectTensor(y, DType::Float32, {2, 3}, {0, 0, 0, 0, 0, 0});
}

TEST(ReferenceMatMul, MismatchedInnerDimsAreUserErrors) {
  EXPECT_USER_ERROR(runOne(OpKind::MatMul, {f32({2, 3}, iota(6)), f32({2, 2}, iota(4))},
                           typeOf(DType::Float32, {2, 2})),
                    "inner dimensions");
  EXPECT_USER_ERROR(runOne(OpKind::MatMul, {f32({2, 2, 2}, iota(8)), f32({3, 2, 2}, iota(12))},
                           typeOf(DType::Float32, {2, 2, 2})),
                    "broadcast");
}

// ---- Gemm -----------------------------------------------------------------------------------

TEST(ReferenceGemm, TransposesScalesAndBroadcastsC) {
  // A' = A^T where A = [[1,4],[2,5],[3,6]] (so A' = [[1,2,3],[4,5,6]]); B' = B^T where
  // B = [[1,0,1],[0,1,1]] (B' = [[1,0],[0,1],[1,1]]). A'B' = [[4,5],[10,11]].
  Tensor a = f32({3, 2}, {1, 4, 2, 5, 3, 6});
  Tensor b = f32({2, 3}, {1, 0, 1, 0, 1, 1});
  Attributes attributes = {
      {"transA", int64_t(1)}, {"transB", int64_t(1)}, {"alpha", 2.0f}, {"beta", 0.5f}};
  // C as a row [N]: 2 * A'B' + 0.5 * [10, 20]
  expectTensor(
      runOne(OpKind::Gemm, {a, b, f32({2}, {10, 20})}, typeOf(DType::Float32, {2, 2}), attributes),
      DType::Float32, {2, 2}, {13, 20, 25, 32});
  // C as a column [M, 1]
  expectTensor(runOne(OpKind::Gemm, {a, b, f32({2, 1}, {10, 20})}, typeOf(DType::Float32, {2, 2}),
                      attributes),
               DType::Float32, {2, 2}, {13, 15, 30, 32});
  // C as a scalar; and absent C
  expectTensor(
      runOne(OpKind::Gemm, {a, b, f32({}, {4})}, typeOf(DType::Float32, {2, 2}), attributes),
      DType::Float32, {2, 2}, {10, 12, 22, 24});
  expectTensor(
      runOne(OpKind::Gemm, {a, b, std::nullopt}, typeOf(DType::Float32, {2, 2}), attributes),
      DType::Float32, {2, 2}, {8, 10, 20, 22});
}

TEST(ReferenceGemm, DefaultsAndErrors) {
  Tensor a = f32({1, 2}, {1, 2});
  Tensor b = f32({2, 2}, {3, 4, 5, 6});
  expectTensor(runOne(OpKind::Gemm, {a, b, f32({1, 2}, {1, 1})}, typeOf(DType::Float32, {1, 2})),
               DType::Float32, {1, 2}, {14, 17});
  EXPECT_USER_ERROR(
      runOne(OpKind::Gemm, {a, b, f32({3}, {1, 1, 1})}, typeOf(DType::Float32, {1, 2})),
      "does not broadcast");
  EXPECT_USER_ERROR(runOne(OpKind::Gemm, {a, f32({3, 2}, iota(6))}, typeOf(DType::Float32, {1, 2})),
                    "inner dimensions");
  // Integer Gemm with whole alpha and beta stays exact.
  int64_t big = (int64_t(1) << 60) + 7;
  expectInts(runOne(OpKind::Gemm, {i64({1, 1}, {big}), i64({1, 1}, {1}), i64({1}, {1})},
                    typeOf(DType::Int64, {1, 1})),
             DType::Int64, {1, 1}, {big + 1});
}

// ---- Einsum ---------------------------------------------------------------------------------

namespace {
Tensor einsum(const std::string &equation, const std::vector<std::optional<Tensor>> &inputs,
              std::vector<int64_t> outDims, DType dtype = DType::Float32) {
  return runOne(OpKind::Einsum, inputs, typeOf(dtype, outDims), {{"equation", equation}});
}
} // namespace

TEST(ReferenceEinsum, MatrixProductTransposeAndOuterProduct) {
  Tensor a = f32({2, 3}, iota(6));
  Tensor b = f32({3, 2}, iota(6, 7));
  expectTensor(einsum("ij,jk->ik", {a, b}, {2, 2}), DType::Float32, {2, 2}, {58, 64, 139, 154});
  // Implicit output: the letters used once, in alphabetical order.
  expectTensor(einsum("ij,jk", {a, b}, {2, 2}), DType::Float32, {2, 2}, {58, 64, 139, 154});
  expectTensor(einsum("ij->ji", {a}, {3, 2}), DType::Float32, {3, 2}, {1, 4, 2, 5, 3, 6});
  expectTensor(einsum("ba", {a}, {3, 2}), DType::Float32, {3, 2}, {1, 4, 2, 5, 3, 6});
  expectTensor(einsum("i,j->ij", {f32({2}, {1, 2}), f32({3}, {1, 10, 100})}, {2, 3}),
               DType::Float32, {2, 3}, {1, 10, 100, 2, 20, 200});
  expectTensor(einsum("i, i", {f32({3}, {1, 2, 3}), f32({3}, {4, 5, 6})}, {}), DType::Float32, {},
               {32});
  expectTensor(einsum("ij->", {a}, {}), DType::Float32, {}, {21});
  expectTensor(einsum("ij->j", {a}, {3}), DType::Float32, {3}, {5, 7, 9});
}

TEST(ReferenceEinsum, RepeatedLabelsTakeDiagonals) {
  Tensor square = f32({3, 3}, iota(9)); // [[1,2,3],[4,5,6],[7,8,9]]
  expectTensor(einsum("ii->i", {square}, {3}), DType::Float32, {3}, {1, 5, 9});
  expectTensor(einsum("ii", {square}, {}), DType::Float32, {}, {15}); // trace
  // A label repeated across and within inputs: sum_i A[i,i] * v[i]
  expectTensor(einsum("ii,i->", {square, f32({3}, {1, 10, 100})}, {}), DType::Float32, {}, {951});
}

TEST(ReferenceEinsum, EllipsisBroadcastsBatchDims) {
  // [2,1,2,2] "...ij" with [3,2,2] "...jk": batch dims [2,1] and [3] broadcast to [2,3].
  Tensor a = f32({2, 1, 2, 2}, iota(8));
  Tensor b = f32({3, 2, 2}, iota(12, -5));
  Tensor y = einsum("...ij,...jk->...ik", {a, b}, {2, 3, 2, 2});
  std::vector<double> expected;
  for (int p = 0; p < 2; ++p)
    for (int q = 0; q < 3; ++q)
      for (int i = 0; i < 2; ++i)
        for (int k = 0; k < 2; ++k) {
          double sum = 0;
          for (int j = 0; j < 2; ++j)
            sum += a.getDouble(p * 4 + i * 2 + j) * b.getDouble(q * 4 + j * 2 + k);
          expected.push_back(sum);
        }
  expectTensor(y, DType::Float32, {2, 3, 2, 2}, expected);
  // Implicit output puts the ellipsis dims first.
  expectTensor(einsum("...ij,...jk", {a, b}, {2, 3, 2, 2}), DType::Float32, {2, 3, 2, 2}, expected);
  // An ellipsis may also stand for no dims at all.
  expectTensor(einsum("...i,...i->...", {f32({2}, {1, 2}), f32({2}, {3, 4})}, {}), DType::Float32,
               {}, {11});
}

TEST(ReferenceEinsum, IntegersAndErrors) {
  expectInts(einsum("ij,jk->ik", {i64({1, 2}, {int64_t(1) << 40, 1}), i64({2, 1}, {3, 5})}, {1, 1},
                    DType::Int64),
             DType::Int64, {1, 1}, {(int64_t(3) << 40) + 5});
  Tensor a = f32({2, 3}, iota(6));
  EXPECT_USER_ERROR(einsum("ij,jk->ik", {a}, {2, 2}), "input terms");
  EXPECT_USER_ERROR(einsum("ij,jk->ik", {a, f32({2, 2}, iota(4))}, {2, 2}), "extent");
  EXPECT_USER_ERROR(einsum("ijk->i", {a}, {2}), "rank");
  EXPECT_USER_ERROR(einsum("ij->iz", {a}, {2, 2}), "not in any input");
}

// ---- Conv -----------------------------------------------------------------------------------

namespace {
/// A direct 2-D convolution of one output element, written straight from the ONNX formula:
/// y[n,m,oh,ow] = b[m] + sum_{c,kh,kw} x[n, g*C/G + c, oh*sh - ph + kh*dh, ow*sw - pw + kw*dw] *
/// w[m,c,kh,kw]
double directConv2d(const Tensor &x, const Tensor &w, const Tensor *b, int64_t group, int64_t n,
                    int64_t m, int64_t oh, int64_t ow, std::vector<int64_t> strides,
                    std::vector<int64_t> pads, std::vector<int64_t> dilations) {
  int64_t C = x.dims()[1], H = x.dims()[2], W = x.dims()[3];
  int64_t M = w.dims()[0], Cg = w.dims()[1], KH = w.dims()[2], KW = w.dims()[3];
  int64_t g = m / (M / group);
  double sum = b ? b->getDouble(m) : 0.0;
  for (int64_t c = 0; c < Cg; ++c)
    for (int64_t kh = 0; kh < KH; ++kh)
      for (int64_t kw = 0; kw < KW; ++kw) {
        int64_t h = oh * strides[0] - pads[0] + kh * dilations[0];
        int64_t v = ow * strides[1] - pads[1] + kw * dilations[1];
        if (h < 0 || h >= H || v < 0 || v >= W)
          continue;
        sum += x.getDouble(((n * C + g * Cg + c) * H + h) * W + v) *
               w.getDouble(((m * Cg + c) * KH + kh) * KW + kw);
      }
  return sum;
}
} // namespace

TEST(ReferenceConv, SmallTwoDimensionalCaseByHand) {
  // x = [[1,2,3],[4,5,6],[7,8,9]], a 2x2 kernel of ones: each output is a 2x2 window sum.
  Tensor y = runOne(OpKind::Conv, {f32({1, 1, 3, 3}, iota(9)), f32({1, 1, 2, 2}, {1, 1, 1, 1})},
                    typeOf(DType::Float32, {1, 1, 2, 2}));
  expectTensor(y, DType::Float32, {1, 1, 2, 2}, {12, 16, 24, 28});
}

TEST(ReferenceConv, GroupsStridesDilationsAsymmetricPadsAndBias) {
  // N=2, C=4, 6x7 input, group 2, M=4 (2 per group), 3x2 kernel, strides [2,1],
  // dilations [1,2], pads [1,0,2,1] (top, left, bottom, right).
  Tensor x = f32({2, 4, 6, 7}, iota(2 * 4 * 6 * 7, -20, 0.125));
  Tensor w = f32({4, 2, 3, 2}, iota(4 * 2 * 3 * 2, 1.5, -0.25));
  Tensor b = f32({4}, {0.5, -1, 2, 3});
  std::vector<int64_t> strides = {2, 1}, dilations = {1, 2}, pads = {1, 0, 2, 1};
  // out H = floor((6 + 1 + 2 - 3) / 2) + 1 = 4; out W = floor((7 + 0 + 1 - 3) / 1) + 1 = 6
  Tensor y = runOne(OpKind::Conv, {x, w, b}, typeOf(DType::Float32, {2, 4, 4, 6}),
                    {{"group", int64_t(2)},
                     {"strides", ints(strides)},
                     {"dilations", ints(dilations)},
                     {"pads", ints(pads)}});
  std::vector<double> expected;
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t m = 0; m < 4; ++m)
      for (int64_t oh = 0; oh < 4; ++oh)
        for (int64_t ow = 0; ow < 6; ++ow)
          expected.push_back(
              directConv2d(x, w, &b, 2, n, m, oh, ow, strides, {pads[0], pads[1]}, dilations));
  expectTensor(y, DType::Float32, {2, 4, 4, 6}, expected, 1e-6);
}

TEST(ReferenceConv, DepthwiseConvolution) {
  // group = C = 2: each channel with its own kernel.
  Tensor x = f32({1, 2, 2, 2}, {1, 2, 3, 4, 10, 20, 30, 40});
  Tensor w = f32({2, 1, 1, 2}, {1, -1, 2, 1});
  Tensor y =
      runOne(OpKind::Conv, {x, w}, typeOf(DType::Float32, {1, 2, 2, 1}), {{"group", int64_t(2)}});
  expectTensor(y, DType::Float32, {1, 2, 2, 1}, {-1, -1, 40, 100});
}

TEST(ReferenceConv, OneAndThreeSpatialDims) {
  // 1-D: x = [1,2,3,4,5], w = [1,0,-1], pads [1,1]: y[i] = x[i-1] - x[i+1]
  Tensor y1 = runOne(OpKind::Conv, {f32({1, 1, 5}, iota(5)), f32({1, 1, 3}, {1, 0, -1})},
                     typeOf(DType::Float32, {1, 1, 5}), {{"pads", ints({1, 1})}});
  expectTensor(y1, DType::Float32, {1, 1, 5}, {-2, -2, -2, -2, 4});
  // 3-D: a 2x2x2 kernel of ones over a 2x2x3 volume sums each 2x2x2 block.
  Tensor x = f32({1, 1, 2, 2, 3}, iota(12));
  Tensor y3 = runOne(OpKind::Conv, {x, f32({1, 1, 2, 2, 2}, std::vector<double>(8, 1.0))},
                     typeOf(DType::Float32, {1, 1, 1, 1, 2}));
  expectTensor(y3, DType::Float32, {1, 1, 1, 1, 2},
               {1 + 2 + 4 + 5 + 7 + 8 + 10 + 11, 2 + 3 + 5 + 6 + 8 + 9 + 11 + 12});
}

TEST(ReferenceConv, AutoPadPutsTheOddPaddingAtTheRightEnd) {
  Tensor x = f32({1, 1, 5}, iota(5));
  Tensor w = f32({1, 1, 2}, {1, 10});
  // Output 5 needs one pad: SAME_UPPER at the end, SAME_LOWER at the beginning.
  expectTensor(runOne(OpKind::Conv, {x, w}, typeOf(DType::Float32, {1, 1, 5}),
                      {{"auto_pad", std::string("SAME_UPPER")}}),
               DType::Float32, {1, 1, 5}, {21, 32, 43, 54, 5});
  expectTensor(runOne(OpKind::Conv, {x, w}, typeOf(DType::Float32, {1, 1, 5}),
                      {{"auto_pad", std::string("SAME_LOWER")}}),
               DType::Float32, {1, 1, 5}, {10, 21, 32, 43, 54});
  // With stride 2 the output is ceil(5 / 2) = 3; its one pad again goes at the end.
  expectTensor(runOne(OpKind::Conv, {x, w}, typeOf(DType::Float32, {1, 1, 3}),
                      {{"auto_pad", std::string("SAME_UPPER")}, {"strides", ints({2})}}),
               DType::Float32, {1, 1, 3}, {21, 43, 5});
  // VALID ignores pads.
  expectTensor(runOne(OpKind::Conv, {x, w}, typeOf(DType::Float32, {1, 1, 4}),
                      {{"auto_pad", std::string("VALID")}}),
               DType::Float32, {1, 1, 4}, {21, 32, 43, 54});
}

TEST(ReferenceConv, Errors) {
  Tensor x = f32({1, 2, 3, 3}, iota(18));
  EXPECT_USER_ERROR(
      runOne(OpKind::Conv, {x, f32({1, 3, 1, 1}, {1, 1, 1})}, typeOf(DType::Float32, {1, 1, 3, 3})),
      "do not agree");
  EXPECT_USER_ERROR(runOne(OpKind::Conv, {x, f32({1, 2, 1, 1}, {1, 1})},
                           typeOf(DType::Float32, {1, 1, 3, 3}), {{"kernel_shape", ints({2, 2})}}),
                    "kernel_shape");
  EXPECT_USER_ERROR(runOne(OpKind::Conv, {x, f32({1, 2, 4, 4}, std::vector<double>(32, 1))},
                           typeOf(DType::Float32, {1, 1, 1, 1})),
                    "smaller than the 4-wide (dilated) kernel");
  EXPECT_USER_ERROR(runOne(OpKind::Conv, {x, f32({1, 2, 1, 1}, {1, 1}), f32({2}, {1, 1})},
                           typeOf(DType::Float32, {1, 1, 3, 3})),
                    "bias");
}

// ---- ConvTranspose --------------------------------------------------------------------------

TEST(ReferenceConvTranspose, OneDimensionalCasesByHand) {
  Tensor x = f32({1, 1, 3}, {1, 2, 3});
  Tensor w = f32({1, 1, 3}, {1, 1, 1});
  // Stride 1: each input spreads over three outputs.
  expectTensor(runOne(OpKind::ConvTranspose, {x, w}, typeOf(DType::Float32, {1, 1, 5})),
               DType::Float32, {1, 1, 5}, {1, 3, 6, 5, 3});
  // Stride 2: x0 -> 0..2, x1 -> 2..4, x2 -> 4..6.
  Attributes stride2 = {{"strides", ints({2})}};
  expectTensor(runOne(OpKind::ConvTranspose, {x, w}, typeOf(DType::Float32, {1, 1, 7}), stride2),
               DType::Float32, {1, 1, 7}, {1, 1, 3, 2, 5, 3, 3});
  // pads crop the ends; output_padding adds at the end.
  expectTensor(runOne(OpKind::ConvTranspose, {x, w}, typeOf(DType::Float32, {1, 1, 5}),
                      {{"strides", ints({2})}, {"pads", ints({1, 1})}}),
               DType::Float32, {1, 1, 5}, {1, 3, 2, 5, 3});
  expectTensor(runOne(OpKind::ConvTranspose, {x, w}, typeOf(DType::Float32, {1, 1, 8}),
                      {{"strides", ints({2})}, {"output_padding", ints({1})}}),
               DType::Float32, {1, 1, 8}, {1, 1, 3, 2, 5, 3, 3, 0});
  // output_shape 8: total padding 7 - 8 = -1, which (split with floor) grows the end.
  expectTensor(runOne(OpKind::ConvTranspose, {x, w}, typeOf(DType::Float32, {1, 1, 8}),
                      {{"strides", ints({2})}, {"output_shape", ints({8})}}),
               DType::Float32, {1, 1, 8}, {1, 1, 3, 2, 5, 3, 3, 0});
  expectTensor(runOne(OpKind::ConvTranspose, {x, w}, typeOf(DType::Float32, {1, 1, 9}),
                      {{"strides", ints({2})}, {"output_shape", ints({9})}}),
               DType::Float32, {1, 1, 9}, {1, 1, 3, 2, 5, 3, 3, 0, 0});
  // A smaller output_shape (5, total 2) crops one from each end, like pads [1, 1].
  expectTensor(runOne(OpKind::ConvTranspose, {x, w}, typeOf(DType::Float32, {1, 1, 5}),
                      {{"strides", ints({2})}, {"output_shape", ints({5})}}),
               DType::Float32, {1, 1, 5}, {1, 3, 2, 5, 3});
  // SAME_*: output = input * stride = 6, total padding 1, at the end (UPPER) or beginning (LOWER).
  expectTensor(runOne(OpKind::ConvTranspose, {x, w}, typeOf(DType::Float32, {1, 1, 6}),
                      {{"strides", ints({2})}, {"auto_pad", std::string("SAME_UPPER")}}),
               DType::Float32, {1, 1, 6}, {1, 1, 3, 2, 5, 3});
  expectTensor(runOne(OpKind::ConvTranspose, {x, w}, typeOf(DType::Float32, {1, 1, 6}),
                      {{"strides", ints({2})}, {"auto_pad", std::string("SAME_LOWER")}}),
               DType::Float32, {1, 1, 6}, {1, 3, 2, 5, 3, 3});
  // SAME_* never pads negatively: a 1-tap kernel with stride 3 keeps the natural extent 7
  // rather than input * stride = 9.
  expectTensor(runOne(OpKind::ConvTranspose, {x, f32({1, 1, 1}, {1})},
                      typeOf(DType::Float32, {1, 1, 7}),
                      {{"strides", ints({3})}, {"auto_pad", std::string("SAME_UPPER")}}),
               DType::Float32, {1, 1, 7}, {1, 0, 0, 2, 0, 0, 3});
  // Dilation 2 with a 2-tap kernel: x0 -> 0, 2; x1 -> 1, 3.
  expectTensor(runOne(OpKind::ConvTranspose, {f32({1, 1, 2}, {1, 2}), f32({1, 1, 2}, {1, 10})},
                      typeOf(DType::Float32, {1, 1, 4}), {{"dilations", ints({2})}}),
               DType::Float32, {1, 1, 4}, {1, 2, 10, 20});
}

TEST(ReferenceConvTranspose, GroupsAndBiasAgainstTheAdjointFormula) {
  // C=4 in 2 groups, M/group = 3 (M = 6), 2-D, strides [2,1], pads [1,0,0,1], bias.
  Tensor x = f32({1, 4, 2, 3}, iota(24, -1, 0.5));
  Tensor w = f32({4, 3, 2, 2}, iota(48, 0.25, 0.125));
  Tensor b = f32({6}, {1, 2, 3, 4, 5, 6});
  // out H = 2*(2-1) + 2 - 1 - 0 = 3; out W = 1*(3-1) + 2 - 0 - 1 = 3
  Tensor y =
      runOne(OpKind::ConvTranspose, {x, w, b}, typeOf(DType::Float32, {1, 6, 3, 3}),
             {{"group", int64_t(2)}, {"strides", ints({2, 1})}, {"pads", ints({1, 0, 0, 1})}});
  // y[m, oh, ow] = b[m] + sum over c in m's group, ih, iw, kh, kw with
  // oh = ih*2 - 1 + kh, ow = iw - 0 + kw of x[c, ih, iw] * w[c, m % 3, kh, kw]
  std::vector<double> expected(54, 0.0);
  for (int m = 0; m < 6; ++m)
    for (int oh = 0; oh < 3; ++oh)
      for (int ow = 0; ow < 3; ++ow) {
        double sum = b.getDouble(m);
        int group = m / 3;
        for (int c = group * 2; c < group * 2 + 2; ++c)
          for (int ih = 0; ih < 2; ++ih)
            for (int iw = 0; iw < 3; ++iw)
              for (int kh = 0; kh < 2; ++kh)
                for (int kw = 0; kw < 2; ++kw)
                  if (ih * 2 - 1 + kh == oh && iw + kw == ow)
                    sum += x.getDouble((c * 2 + ih) * 3 + iw) *
                           w.getDouble(((c * 3 + m % 3) * 2 + kh) * 2 + kw);
        expected[(m * 3 + oh) * 3 + ow] = sum;
      }
  expectTensor(y, DType::Float32, {1, 6, 3, 3}, expected, 1e-6);
}

// ---- Pools ----------------------------------------------------------------------------------

namespace {
Attributes pool(std::vector<int64_t> kernel, Attributes more = {}) {
  more["kernel_shape"] = kernel;
  return more;
}
} // namespace

TEST(ReferenceMaxPool, WindowsPaddingCeilModeAndDilation) {
  Tensor x = f32({1, 1, 4, 4}, iota(16));
  expectTensor(runOne(OpKind::MaxPool, {x}, typeOf(DType::Float32, {1, 1, 2, 2}),
                      pool({2, 2}, {{"strides", ints({2, 2})}})),
               DType::Float32, {1, 1, 2, 2}, {6, 8, 14, 16});
  // Padding never wins, even against negative values.
  Tensor negative = f32({1, 1, 3}, {-5, -1, -3});
  expectTensor(runOne(OpKind::MaxPool, {negative}, typeOf(DType::Float32, {1, 1, 4}),
                      pool({2}, {{"pads", ints({1, 1})}})),
               DType::Float32, {1, 1, 4}, {-5, -1, -1, -3});
  // ceil_mode keeps a last partial window that starts inside the input...
  Tensor five = f32({1, 1, 5}, iota(5));
  expectTensor(runOne(OpKind::MaxPool, {five}, typeOf(DType::Float32, {1, 1, 2}),
                      pool({2}, {{"strides", ints({2})}})),
               DType::Float32, {1, 1, 2}, {2, 4});
  expectTensor(runOne(OpKind::MaxPool, {five}, typeOf(DType::Float32, {1, 1, 3}),
                      pool({2}, {{"strides", ints({2})}, {"ceil_mode", int64_t(1)}})),
               DType::Float32, {1, 1, 3}, {2, 4, 5});
  // ...but drops one that would start in the end padding: input 4, pads [0, 1], kernel 2,
  // stride 2: ceil((4 + 1 - 2) / 2) + 1 = 3, and window 3 would start at 4 = input + pad_begin.
  expectTensor(
      runOne(
          OpKind::MaxPool, {f32({1, 1, 4}, iota(4))}, typeOf(DType::Float32, {1, 1, 2}),
          pool({2}, {{"strides", ints({2})}, {"pads", ints({0, 1})}, {"ceil_mode", int64_t(1)}})),
      DType::Float32, {1, 1, 2}, {2, 4});
  // Dilation 2: windows (0,2), (1,3), (2,4), (3,5).
  expectTensor(runOne(OpKind::MaxPool, {f32({1, 1, 6}, {1, 6, 2, 5, 3, 4})},
                      typeOf(DType::Float32, {1, 1, 4}), pool({2}, {{"dilations", ints({2})}})),
               DType::Float32, {1, 1, 4}, {2, 6, 3, 5});
  // SAME_UPPER pads the end, SAME_LOWER the beginning.
  expectTensor(runOne(OpKind::MaxPool, {five}, typeOf(DType::Float32, {1, 1, 5}),
                      pool({2}, {{"auto_pad", std::string("SAME_UPPER")}})),
               DType::Float32, {1, 1, 5}, {2, 3, 4, 5, 5});
  expectTensor(runOne(OpKind::MaxPool, {five}, typeOf(DType::Float32, {1, 1, 5}),
                      pool({2}, {{"auto_pad", std::string("SAME_LOWER")}})),
               DType::Float32, {1, 1, 5}, {1, 2, 3, 4, 5});
  // A window smaller than the stride needs no padding (never a negative one): windows at 0, 3.
  expectTensor(runOne(OpKind::MaxPool, {five}, typeOf(DType::Float32, {1, 1, 2}),
                      pool({1}, {{"auto_pad", std::string("SAME_UPPER")}, {"strides", ints({3})}})),
               DType::Float32, {1, 1, 2}, {1, 4});
}

TEST(ReferenceMaxPool, IndicesInBothStorageOrders) {
  // Two planes of 2x3; a 2x2 window with stride 1 gives 1x2 outputs per plane.
  Tensor x = f32({1, 2, 2, 3}, {1, 9, 2, 3, 4, 8, /**/ 7, 0, 1, 2, 3, 6});
  auto outputs = runNode(OpKind::MaxPool, {x},
                         {typeOf(DType::Float32, {1, 2, 1, 2}), typeOf(DType::Int64, {1, 2, 1, 2})},
                         pool({2, 2}));
  expectTensor(outputs[0], DType::Float32, {1, 2, 1, 2}, {9, 9, 7, 6});
  // Row-major: plane * 6 + h * 3 + w.
  expectInts(outputs[1], DType::Int64, {1, 2, 1, 2}, {1, 1, 6 + 0, 6 + 5});
  auto columns = runNode(OpKind::MaxPool, {x},
                         {typeOf(DType::Float32, {1, 2, 1, 2}), typeOf(DType::Int64, {1, 2, 1, 2})},
                         pool({2, 2}, {{"storage_order", int64_t(1)}}));
  // Column-major within a plane: plane * 6 + w * 2 + h.
  expectInts(columns[1], DType::Int64, {1, 2, 1, 2}, {2, 2, 6 + 0, 6 + 5});
}

TEST(ReferenceMaxPool, Int8IsExact) {
  Tensor x = makeInts(DType::Int8, {1, 1, 4}, {-128, 127, -1, -2});
  expectInts(runOne(OpKind::MaxPool, {x}, typeOf(DType::Int8, {1, 1, 2}),
                    pool({2}, {{"strides", ints({2})}})),
             DType::Int8, {1, 1, 2}, {127, -1});
}

TEST(ReferenceAveragePool, CountIncludePadAndCeilMode) {
  // x = [1,2,3,4], kernel 3, stride 2, pads [1,1], ceil_mode: windows start at -1, 1, 3.
  // The last covers 3, 4 (the end pad) and 5 (past the pad, never counted).
  Tensor x = f32({1, 1, 4}, iota(4));
  Attributes attributes =
      pool({3}, {{"strides", ints({2})}, {"pads", ints({1, 1})}, {"ceil_mode", int64_t(1)}});
  expectTensor(runOne(OpKind::AveragePool, {x}, typeOf(DType::Float32, {1, 1, 3}), attributes),
               DType::Float32, {1, 1, 3}, {1.5, 3, 4});
  attributes["count_include_pad"] = int64_t(1);
  expectTensor(runOne(OpKind::AveragePool, {x}, typeOf(DType::Float32, {1, 1, 3}), attributes),
               DType::Float32, {1, 1, 3}, {1, 3, 2});
  // 2-D, pads on one side only.
  Tensor square = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  expectTensor(runOne(OpKind::AveragePool, {square}, typeOf(DType::Float32, {1, 1, 2, 2}),
                      pool({2, 2}, {{"pads", ints({0, 0, 1, 1})}})),
               DType::Float32, {1, 1, 2, 2}, {2.5, 3, 3.5, 4});
  expectTensor(
      runOne(OpKind::AveragePool, {square}, typeOf(DType::Float32, {1, 1, 2, 2}),
             pool({2, 2}, {{"pads", ints({0, 0, 1, 1})}, {"count_include_pad", int64_t(1)}})),
      DType::Float32, {1, 1, 2, 2}, {2.5, 1.5, 1.75, 1});
  // SAME_LOWER pads the beginning; excluded from the count by default.
  expectTensor(runOne(OpKind::AveragePool, {f32({1, 1, 5}, iota(5))},
                      typeOf(DType::Float32, {1, 1, 5}),
                      pool({2}, {{"auto_pad", std::string("SAME_LOWER")}})),
               DType::Float32, {1, 1, 5}, {1, 1.5, 2.5, 3.5, 4.5});
}

TEST(ReferenceLpPool, PNorms) {
  Tensor x = f32({1, 1, 4}, {3, -4, 1, 2});
  expectTensor(runOne(OpKind::LpPool, {x}, typeOf(DType::Float32, {1, 1, 2}),
                      pool({2}, {{"strides", ints({2})}})),
               DType::Float32, {1, 1, 2}, {5, std::sqrt(5.0)}, 1e-7);
  expectTensor(runOne(OpKind::LpPool, {x}, typeOf(DType::Float32, {1, 1, 3}),
                      pool({2}, {{"p", int64_t(1)}})),
               DType::Float32, {1, 1, 3}, {7, 5, 3});
  expectTensor(runOne(OpKind::LpPool, {x}, typeOf(DType::Float32, {1, 1, 2}),
                      pool({2}, {{"p", int64_t(3)}, {"strides", ints({2})}})),
               DType::Float32, {1, 1, 2}, {std::cbrt(27.0 + 64.0), std::cbrt(9.0)}, 1e-7);
}

TEST(ReferenceGlobalPools, AverageAndMaxOverAllSpatialDims) {
  Tensor x = f32({1, 2, 2, 2}, {1, 2, 3, 4, -1, -5, -2, -8});
  expectTensor(runOne(OpKind::GlobalAveragePool, {x}, typeOf(DType::Float32, {1, 2, 1, 1})),
               DType::Float32, {1, 2, 1, 1}, {2.5, -4});
  expectTensor(runOne(OpKind::GlobalMaxPool, {x}, typeOf(DType::Float32, {1, 2, 1, 1})),
               DType::Float32, {1, 2, 1, 1}, {4, -1});
  // A 3-D input ([N, C, L]) and float64.
  Tensor y = makeTensor(DType::Float64, {2, 1, 3}, {1, 2, 6, -kInf, 0, 1});
  expectTensor(runOne(OpKind::GlobalMaxPool, {y}, typeOf(DType::Float64, {2, 1, 1})),
               DType::Float64, {2, 1, 1}, {6, 1});
  expectTensor(runOne(OpKind::GlobalAveragePool, {y}, typeOf(DType::Float64, {2, 1, 1})),
               DType::Float64, {2, 1, 1}, {3, -kInf});
}

TEST(ReferencePools, Float16RoundsOnStore) {
  // (1 + 2^-10) + 1 averaged: exactly 1 + 2^-11, which float16 cannot hold; ties to even give 1.
  Tensor x = makeTensor(DType::Float16, {1, 1, 2}, {1 + std::ldexp(1.0, -10), 1});
  expectTensor(runOne(OpKind::AveragePool, {x}, typeOf(DType::Float16, {1, 1, 1}), pool({2})),
               DType::Float16, {1, 1, 1}, {1});
}
