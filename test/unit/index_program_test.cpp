// IndexProgram (index_program.h) against ExprEvaluator, the plain tree walk it must agree with,
// on the index arithmetic lowering writes: a padded, strided convolution window (divisions,
// remainders, clamps, a bounds test under Select), Int32 wrapping and truncating division of
// negative numbers, evaluated over runs of one variable.
#include "sinter/codegen/kernel/index_program.h"
#include "sinter/codegen/kernel/expr_evaluator.h"
#include "../../lib/codegen/lowering/lowering_rules.h"

#include <gtest/gtest.h>

using namespace sinter;
using namespace sinter::codegen;

namespace {

void expectAgreement(const Kernel &kernel, const ExprRef &expr, int fixed, int64_t fixedValue, int varying,
                     int64_t first, int64_t count) {
  std::optional<IndexProgram> program = IndexProgram::compile(expr);
  ASSERT_TRUE(program.has_value());
  program->setVariable(fixed, fixedValue);
  std::span<const int64_t> values = program->evaluate(varying, first, count);
  ASSERT_EQ(values.size(), size_t(count));
  ExprEvaluator evaluator(kernel);
  evaluator.setVariable(fixed, fixedValue);
  for (int64_t x = 0; x < count; ++x) {
    evaluator.setVariable(varying, first + x);
    EXPECT_EQ(values[size_t(x)], evaluator.evaluate(expr).intValue) << "at " << first + x;
  }
}

} // namespace

TEST(IndexProgram, AgreesWithTheEvaluatorOnAPaddedStridedWindow) {
  KernelBuilder builder("k");
  int r = builder.addVariable("r", DType::Int64), j = builder.addVariable("j", DType::Int64);
  ExprRef rv = var(r, DType::Int64), jv = var(j, DType::Int64);
  // A 3x3 window, stride 2, pad 1, over a 7x7 input: r = (c, kh, kw), j = (oh, ow) of 4x4.
  ExprRef oh = div(jv, 4), ow = rem(jv, 4), c = div(rv, 9), kh = rem(div(rv, 3), 3), kw = rem(rv, 3);
  ExprRef y = add(sub(mul(oh, 2), intConstant(1)), kh), x = add(sub(mul(ow, 2), intConstant(1)), kw);
  auto inRange = [](const ExprRef &at) {
    return binary(BinaryOp::LogicalAnd, binary(BinaryOp::Ge, at, intConstant(0)), binary(BinaryOp::Lt, at, intConstant(7)));
  };
  auto clamp = [](const ExprRef &at) {
    return binary(BinaryOp::Min, binary(BinaryOp::Max, at, intConstant(0)), intConstant(6));
  };
  ExprRef inside = binary(BinaryOp::LogicalAnd, inRange(y), inRange(x));
  ExprRef index = add(mul(add(mul(c, 7), clamp(y)), 7), clamp(x));
  ExprRef guarded = select(inside, index, intConstant(-1));
  for (int64_t rValue : {0, 4, 13, 26})
    expectAgreement(builder.kernel(), guarded, r, rValue, j, 0, 16);
  for (int64_t jValue : {0, 5, 15})
    expectAgreement(builder.kernel(), guarded, j, jValue, r, 0, 27);
}

TEST(IndexProgram, WrapsInt32AndTruncatesNegativeDivisions) {
  KernelBuilder builder("k");
  int a = builder.addVariable("a", DType::Int64), b = builder.addVariable("b", DType::Int64);
  ExprRef av = var(a, DType::Int64), bv = var(b, DType::Int64);
  // (int32)(a * 1000000007) / -7 and its remainder, and -(a - b) compared with b: wraps, signs
  ExprRef wrapped = cast(mul(av, intConstant(1000000007)), DType::Int32);
  ExprRef quotient = binary(BinaryOp::Div, wrapped, intConstant(-7, DType::Int32));
  ExprRef remainder = binary(BinaryOp::Rem, wrapped, intConstant(-7, DType::Int32));
  ExprRef both = add(cast(quotient, DType::Int64), mul(cast(remainder, DType::Int64), intConstant(1 << 20)));
  expectAgreement(builder.kernel(), both, b, 0, a, -50, 100);
  ExprRef compared = cast(binary(BinaryOp::Lt, unary(UnaryOp::Neg, sub(av, bv)), bv), DType::Int64);
  expectAgreement(builder.kernel(), compared, b, 3, a, -10, 20);
}

TEST(IndexProgram, RefusesWhatIsNotIndexArithmetic) {
  KernelBuilder builder("k");
  int w = builder.addBuffer("w", DType::Int64, 4, false);
  int i = builder.addVariable("i", DType::Int64);
  EXPECT_FALSE(IndexProgram::compile(load(w, DType::Int64, var(i, DType::Int64))).has_value());
  EXPECT_FALSE(IndexProgram::compile(cast(constant(DType::Float32, 1.5), DType::Int64)).has_value());
  EXPECT_TRUE(IndexProgram::compile(add(var(i, DType::Int64), intConstant(2))).has_value());
}

// Accessors composed through reshapes and transposes share subtrees: a channel shuffle's index
// is a DAG whose unfolded tree is exponential in its depth. Walks and rewrites must visit each
// node once; this DAG unfolds to 2^60 nodes, so a tree walk would never finish.
TEST(ExpressionDag, WalksAndRewritesVisitEachNodeOnce) {
  KernelBuilder builder("k");
  int i = builder.addVariable("i", DType::Int64), j = builder.addVariable("j", DType::Int64);
  ExprRef e = var(i, DType::Int64);
  for (int level = 0; level < 60; ++level)
    e = add(div(e, intConstant(3)), rem(e, intConstant(5)));
  EXPECT_TRUE(usesVariable(e, i));
  EXPECT_FALSE(usesVariable(e, j));
  ExprRef rewritten = substituted(e, i, add(var(j, DType::Int64), intConstant(1)));
  EXPECT_TRUE(usesVariable(rewritten, j));
  EXPECT_FALSE(usesVariable(rewritten, i));
  // The rewrite keeps the sharing: both operands of the top node read one rewritten subtree.
  ASSERT_EQ(rewritten->operands.size(), 2u);
  EXPECT_EQ(rewritten->operands[0]->operands[0].get(), rewritten->operands[1]->operands[0].get());
  int out = builder.addBuffer("y", DType::Int64, 1, true);
  builder.emit(store(out, intConstant(0), e));
  EXPECT_EQ(findHalfArithmetic(builder.kernel()), "");
  std::optional<IndexProgram> program = IndexProgram::compile(e);
  ASSERT_TRUE(program.has_value());
  program->evaluate(i, 0, 4);
}
