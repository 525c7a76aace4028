// The host evaluator of kernel-IR expressions (expr_evaluator.h), against values worked out by
// hand from kernel_ir.h's semantics.
#include "sinter/codegen/kernel/expr_evaluator.h"
#include "../../lib/codegen/lowering/lowering_rules.h"
#include "sinter/support/error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>

using namespace sinter;
using namespace sinter::codegen;

namespace {

struct Fixture {
  KernelBuilder builder{"k"};
  int weights = builder.addBuffer("w", DType::Float32, 6, false);
  int codes = builder.addBuffer("codes", DType::Int32, 3, false);
  int output = builder.addBuffer("y", DType::Float32, 6, true);
  int i = builder.addVariable("i", DType::Int64);
  int r = builder.addVariable("r", DType::Int64);
  float w[6] = {1.5f, -2.0f, 0.25f, 3.0f, -0.5f, 8.0f};
  int32_t c[3] = {-7, 2, 2147483647};
};

ExprRef i64(int64_t value) { return intConstant(value); }

} // namespace

TEST(ExprEvaluator, LoadsThroughAnIndexExpression) {
  Fixture f;
  ExprEvaluator eval(f.builder.kernel());
  eval.setBuffer(f.weights, f.w);
  // w[i * 3 + r], a 2x3 matrix read row-major
  ExprRef at = load(f.weights, DType::Float32, add(mul(var(f.i, DType::Int64), 3), var(f.r, DType::Int64)));
  ASSERT_TRUE(eval.canEvaluate(at));
  eval.setVariable(f.i, 1);
  eval.setVariable(f.r, 2);
  EXPECT_EQ(eval.evaluate(at).floatValue, 8.0);
  eval.setVariable(f.i, 0);
  eval.setVariable(f.r, 1);
  EXPECT_EQ(eval.evaluate(at).floatValue, -2.0);
}

TEST(ExprEvaluator, IntegerDivisionTruncatesAndArithmeticWraps) {
  Fixture f;
  ExprEvaluator eval(f.builder.kernel());
  EXPECT_EQ(eval.evaluate(binary(BinaryOp::Div, var(f.i, DType::Int64), i64(2))).intValue, 0);
  eval.setVariable(f.i, -7);
  ExprRef x = var(f.i, DType::Int64);
  EXPECT_EQ(eval.evaluate(binary(BinaryOp::Div, x, i64(2))).intValue, -3);
  EXPECT_EQ(eval.evaluate(binary(BinaryOp::Rem, x, i64(2))).intValue, -1);
  // i32: 2147483647 + 1 wraps to the lowest i32
  ExprEvaluator withCodes(f.builder.kernel());
  withCodes.setBuffer(f.codes, f.c);
  ExprRef big = load(f.codes, DType::Int32, i64(2));
  EXPECT_EQ(withCodes.evaluate(binary(BinaryOp::Add, big, intConstant(1, DType::Int32))).intValue,
            std::numeric_limits<int32_t>::min());
  EXPECT_EQ(withCodes.evaluate(cast(load(f.codes, DType::Int32, i64(0)), DType::Uint8)).intValue, 249);
}

TEST(ExprEvaluator, SelectComparisonsAndPaddingLikeGathers) {
  Fixture f;
  ExprEvaluator eval(f.builder.kernel());
  eval.setBuffer(f.weights, f.w);
  // select(0 <= i - 1 < 6, w[clamp(i - 1)], 0): the form a padded convolution gather takes
  ExprRef where = sub(var(f.i, DType::Int64), i64(1));
  ExprRef inside = binary(BinaryOp::LogicalAnd, binary(BinaryOp::Ge, where, i64(0)), binary(BinaryOp::Lt, where, i64(6)));
  ExprRef clamped = binary(BinaryOp::Min, binary(BinaryOp::Max, where, i64(0)), i64(5));
  ExprRef gather = select(inside, load(f.weights, DType::Float32, clamped), constant(DType::Float32, 0));
  eval.setVariable(f.i, 0);
  EXPECT_EQ(eval.evaluate(gather).floatValue, 0.0);
  eval.setVariable(f.i, 4);
  EXPECT_EQ(eval.evaluate(gather).floatValue, 3.0);
  eval.setVariable(f.i, 7);
  EXPECT_EQ(eval.evaluate(gather).floatValue, 0.0);
}

TEST(ExprEvaluator, FloatRulesRoundingNaNAndSaturatingCasts) {
  Fixture f;
  ExprEvaluator eval(f.builder.kernel());
  // f32 arithmetic rounds to f32: 1 + 2^-30 is 1 in f32, not in f64.
  ExprRef tiny = constant(DType::Float32, std::ldexp(1.0, -30));
  EXPECT_EQ(eval.evaluate(binary(BinaryOp::Add, constant(DType::Float32, 1.0), tiny)).floatValue, 1.0);
  EXPECT_NE(eval.evaluate(binary(BinaryOp::Add, constant(DType::Float64, 1.0), constant(DType::Float64, std::ldexp(1.0, -30)))).floatValue, 1.0);
  ExprRef nan = constant(DType::Float32, std::nan(""));
  EXPECT_TRUE(std::isnan(eval.evaluate(binary(BinaryOp::Max, nan, constant(DType::Float32, 1.0))).floatValue));
  EXPECT_TRUE(std::isnan(eval.evaluate(binary(BinaryOp::Min, constant(DType::Float32, 1.0), nan)).floatValue));
  EXPECT_EQ(eval.evaluate(cast(constant(DType::Float32, 300.7), DType::Int8)).intValue, 127);
  EXPECT_EQ(eval.evaluate(cast(constant(DType::Float32, -2.9), DType::Int32)).intValue, -2);
  EXPECT_EQ(eval.evaluate(cast(nan, DType::Int32)).intValue, 0);
  EXPECT_EQ(eval.evaluate(cast(constant(DType::Float64, 0.1), DType::Float32)).floatValue, double(0.1f));
  EXPECT_EQ(eval.evaluate(cast(intConstant(-3), DType::Float32)).floatValue, -3.0);
}

TEST(ExprEvaluator, RefusesWhatItCannotEvaluate) {
  Fixture f;
  ExprEvaluator eval(f.builder.kernel());
  eval.setBuffer(f.weights, f.w);
  // The output buffer has no data; Pow and 16-bit float results are not implemented.
  EXPECT_FALSE(eval.canEvaluate(load(f.output, DType::Float32, i64(0))));
  EXPECT_FALSE(eval.canEvaluate(binary(BinaryOp::Pow, constant(DType::Float32, 2), constant(DType::Float32, 3))));
  EXPECT_FALSE(eval.canEvaluate(cast(load(f.weights, DType::Float32, i64(0)), DType::Float16)));
  EXPECT_TRUE(eval.canEvaluate(unary(UnaryOp::Neg, load(f.weights, DType::Float32, i64(0)))));
  EXPECT_THROW(eval.evaluate(load(f.weights, DType::Float32, i64(6))), InternalError);
}

// unravelIndex (lowering.h) over every flat index of several shapes, evaluated here against the
// digits of the flat index; a dim of one is the constant 0, and the outermost dim of more than
// one takes no remainder (a convolution's 1x1 window before its channels: [1, 1, C]).
TEST(UnravelIndex, GivesEveryDigitAndNoRemainderOutsideTheOutermostDimOfMoreThanOne) {
  auto hasRemainder = [](const ExprRef &e) {
    std::function<bool(const ExprRef &)> visit = [&](const ExprRef &x) {
      return (x->kind == ExprKind::Binary && x->binary == BinaryOp::Rem) ||
             std::any_of(x->operands.begin(), x->operands.end(), visit);
    };
    return visit(e);
  };
  for (const std::vector<int64_t> &dims :
       std::vector<std::vector<int64_t>>{{1, 1, 48}, {2, 1, 3}, {3, 3, 8}, {1, 4, 1, 5}, {7}}) {
    Fixture f;
    std::vector<ExprRef> index = unravelIndex(var(f.r, DType::Int64), dims);
    ASSERT_EQ(index.size(), dims.size());
    size_t outermost = 0;
    while (outermost + 1 < dims.size() && dims[outermost] == 1)
      ++outermost;
    for (size_t d = 0; d < dims.size(); ++d) {
      if (dims[d] == 1) {
        EXPECT_EQ(index[d]->kind, ExprKind::Constant) << "dim " << d;
      }
      if (d <= outermost) {
        EXPECT_FALSE(hasRemainder(index[d])) << "dim " << d;
      }
    }
    ExprEvaluator eval(f.builder.kernel());
    int64_t count = 1;
    for (int64_t extent : dims)
      count *= extent;
    for (int64_t flat = 0; flat < count; ++flat) {
      eval.setVariable(f.r, flat);
      int64_t rest = flat;
      for (int d = int(dims.size()) - 1; d >= 0; --d) {
        EXPECT_EQ(eval.evaluate(index[d]).intValue, rest % dims[d]) << "flat " << flat << " dim " << d;
        rest /= dims[d];
      }
    }
  }
}
